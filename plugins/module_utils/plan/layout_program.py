# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layout planner's search: one pool's plan as a mixed-integer program, solved exactly by plan/milp (HiGHS), then
read back as one choice per node. Pure: no I/O (docs/PLANNER.md, "The program").

Identical nodes are one class and count as one integer per option: how many of them take it. The program grows with
the number of classes and of MIG layouts, not with the number of nodes:

- per class: ``keep`` (nodes left as they are: they serve what they advertise now), ``whole`` (every GPU whole), per
  sharing method and renaming a pair (``shared``, ``replicas``): how many nodes share their GPUs that way and the
  replicas per GPU they have in all, between 2 and the most per node times ``shared`` (replicas equal to the node's
  own are its ``keep``, so its range is split around them); and ``mig``: how many nodes change to MIG;
- per family of classes (the same model, the same GPU states, differing in pods or in what they advertise): per GPU
  state of the family and per option of such a GPU (as it is, MIG off, each useful layout), how many GPUs of its MIG
  nodes take it. Each MIG node has its GPUs (rows per state) and at least one change that stops its pods (a node with
  none is a ``keep`` or a time-sliced node going whole GPU by GPU, which never serves more);
- per resource ``served``, at most the demand and at most what the choices advertise.

The objectives, in order (plan/milp solves them one after the other): the most served; the fewest pods moved (a
class's pods times its nodes whose change stops them); the fewest GPUs changed; the most MIG compute slices free; the
fewest replicas advertised by nodes newly shared (no more sharing than the demand needs).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIN_REPLICAS,
    MPS_MAX_CLIENTS,
    most_replicas_advertised,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.layout import (
    MPS,
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
    TIME_SLICING,
    WHOLE,
    evaluate,
    free_slices,
    gpu_supply,
    mig_gpu_options,
    moves_pods,
    pods_on,
    pool_demand,
    pool_supply,
    score_of,
    shared_gpu,
    sharing_methods,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.milp import (
    MAXIMIZE,
    MINIMIZE,
    IntegerProgram,
    Objective,
    solve_lexicographic,
)

# Replicas per GPU the planner gives a shared GPU unless told otherwise (max_replicas): NVIDIA's own limit on the
# processes that share one GPU through MPS (48 clients per GPU from compute capability 7.5, k8s-device-plugin
# cmd/mps-control-daemon/mps/device.go:34-55); time-slicing has no limit of its own but the kubelet's on a device list.
DEFAULT_MAX_REPLICAS = MPS_MAX_CLIENTS
# The solver's time for all the pools of one plan, in seconds (time_limit; args.py has the same default).
DEFAULT_TIME_LIMIT = 10.0
OBJECTIVES = ("served", "pods_moved", "gpus_changed", "free_slices", "replicas")
# The planner's answer for one pool: per node (in the order given) its descriptors, or None to keep it as it is; its
# score; whether the solver proved it the best; what it serves per resource; and per objective the best any plan could
# reach (the solver's bound, given the objectives before it; None past a level the time limit stopped).
PoolPlan = namedtuple("PoolPlan", "choices score exact served bound")


def most_replicas(node, method, max_replicas):
    """The most replicas per GPU the node may take by ``method``: ``max_replicas``, the kubelet's limit on one device
    list (nvidia/device_plugin_config.most_replicas_advertised, for the node's GPUs), and MPS's client limit."""
    top = min(max_replicas, most_replicas_advertised(len(node.current)))
    return min(top, node.mps_max) if method == MPS else top


def _family_key(node):
    states = {}
    for descriptor in node.current:
        states[descriptor] = states.get(descriptor, 0) + 1
    return (node.model.name if node.model else None, tuple(sorted(states.items(), key=repr)), node.mig_allowed)


def _class_key(node):
    return _family_key(node) + (pods_on(node), tuple(sorted(node.supply.items())), node.mps_max)


class _Class(object):
    """Identical nodes (positions in the pool's list) and their variables."""

    def __init__(self, positions, node):
        self.positions, self.node = positions, node
        self.keep = self.mig = None
        self.whole = None  # (variable, descriptors)
        self.shared = []  # (count variable, replicas variable, method, rename)


class _Family(object):
    """Classes whose MIG nodes are interchangeable: per GPU state, how many of a node's GPUs are in it, and per option
    of such a GPU its variable."""

    def __init__(self, node):
        self.model = node.model
        self.states = sorted(set(node.current), key=repr)
        self.per_node = dict((state, list(node.current).count(state)) for state in self.states)
        self.classes = []
        self.options = {}  # state -> [(variable, descriptor)]


class PoolProgram(object):
    """The program of one pool, its objectives, the plan that changes nothing (a start), and the reading back."""

    def __init__(self, nodes, demand, allow_moves, method, max_replicas):
        self.nodes, self.demand = nodes, demand
        self.program = IntegerProgram()
        self.start = []
        self.terms = dict((name, {}) for name in OBJECTIVES)
        self.supply = dict((resource, {}) for resource in demand)
        self.classes, self.families = [], []
        by_class, by_family = {}, {}
        for position, node in enumerate(nodes):
            key = _class_key(node)
            if key not in by_class:
                by_class[key] = _Class([], node)
                self.classes.append(by_class[key])
            by_class[key].positions.append(position)
        for nodes_class in self.classes:
            self._add_class(nodes_class, demand, allow_moves, method, max_replicas)
            if nodes_class.mig is not None:
                key = _family_key(nodes_class.node)
                if key not in by_family:
                    by_family[key] = _Family(nodes_class.node)
                    self.families.append(by_family[key])
                by_family[key].classes.append(nodes_class)
        for family in self.families:
            self._add_family(family, demand)
        kept = pool_supply(nodes, [None] * len(nodes))
        for resource, count in sorted(demand.items()):
            served = self._variable("served %s" % resource, count, min(count, kept.get(resource, 0)))
            self.terms["served"][served] = 1
            terms = dict((variable, -coefficient) for variable, coefficient in self.supply[resource].items())
            terms[served] = 1
            self.program.row(terms, upper=0)

    def _variable(self, name, upper, start=0):
        self.start.append(start)
        return self.program.variable(name, upper=upper)

    def _add(self, objective, variable, coefficient):
        if coefficient:
            terms = self.terms[objective]
            terms[variable] = terms.get(variable, 0) + coefficient

    def _gives(self, variable, gives, factor=1):
        for resource, count in gives.items():
            if resource in self.supply and count:
                self.supply[resource][variable] = self.supply[resource].get(variable, 0) + count * factor

    def _add_class(self, nodes_class, demand, allow_moves, method, max_replicas):
        node, count = nodes_class.node, len(nodes_class.positions)
        name = "%s x%d" % (node.name, count)
        gpus = len(node.current)
        members = {}
        nodes_class.keep = self._variable("keep %s" % name, count, count)
        members[nodes_class.keep] = 1
        self._gives(nodes_class.keep, node.supply)
        self._add("free_slices", nodes_class.keep, evaluate(node, None)[3])
        whole = (WHOLE,) * gpus
        _gives, moved, changed, _free = evaluate(node, whole)
        if whole != node.current and not (moved and not allow_moves):
            variable = self._variable("whole %s" % name, count)
            nodes_class.whole = (variable, whole)
            members[variable] = 1
            self._gives(variable, {RESOURCE_GPU: gpus})
            self._add("pods_moved", variable, moved)
            self._add("gpus_changed", variable, changed)
        for sharing in sharing_methods(node, method):
            top = most_replicas(node, sharing, max_replicas)
            for rename in (False, True) if demand.get(RESOURCE_GPU_SHARED) else (False,):
                own = [d[1] for d in node.current if d[0] == sharing and d[2] == rename]
                # The node's own replicas are its keep: the ranges below and above them.
                ranges = [(MIN_REPLICAS, top)] if len(own) != gpus else [(MIN_REPLICAS, own[0] - 1), (own[0] + 1, top)]
                for low, high in ranges:
                    if low > high:
                        continue
                    _gives, moved, changed, _free = evaluate(node, (shared_gpu(sharing, low, rename),) * gpus)
                    if moved and not allow_moves:
                        continue
                    label = "%s %s%s %d-%d %s" % (sharing, "renamed " if rename else "", "replicas", low, high, name)
                    shared = self._variable("nodes " + label, count)
                    replicas = self._variable("replicas " + label, high * count)
                    nodes_class.shared.append((shared, replicas, sharing, rename))
                    members[shared] = 1
                    self.program.row({replicas: 1, shared: -low}, lower=0)
                    self.program.row({replicas: 1, shared: -high}, upper=0)
                    self._gives(replicas, {RESOURCE_GPU_SHARED if rename else RESOURCE_GPU: gpus})
                    self._add("pods_moved", shared, moved)
                    self._add("gpus_changed", shared, changed)
                    self._add("replicas", replicas, gpus)
        if node.mig_allowed and (allow_moves or not pods_on(node)):
            nodes_class.mig = self._variable("mig %s" % name, count)
            members[nodes_class.mig] = 1
            self._add("pods_moved", nodes_class.mig, pods_on(node))
        self.program.row(members, lower=count, upper=count)

    def _add_family(self, family, demand):
        mig_nodes = dict((nodes_class.mig, 1) for nodes_class in family.classes)
        most = sum(len(nodes_class.positions) for nodes_class in family.classes)
        stopping = dict((variable, -1) for variable in mig_nodes)
        for state in family.states:
            per_node = family.per_node[state]
            gpus = dict((variable, -per_node) for variable in mig_nodes)
            family.options[state] = []
            for descriptor in mig_gpu_options(family.model, state, demand):
                variable = self._variable("gpu %r as %r" % (state, descriptor), per_node * most)
                family.options[state].append((variable, descriptor))
                gpus[variable] = 1
                self._gives(variable, gpu_supply(descriptor))
                self._add("gpus_changed", variable, int(descriptor != state))
                self._add("free_slices", variable, free_slices(family.model, descriptor))
                if moves_pods(state, descriptor):
                    stopping[variable] = 1
            self.program.row(gpus, lower=0, upper=0)
        self.program.row(stopping, lower=0)

    def objectives(self):
        senses = dict(served=MAXIMIZE, free_slices=MAXIMIZE)
        return [Objective(name, senses.get(name, MINIMIZE), self.terms[name]) for name in OBJECTIVES]

    def choices(self, values):
        """One choice per node (None: keep it) from a solution's ``values``."""
        choices = [None] * len(self.nodes)
        mig_positions = dict((id(family), []) for family in self.families)
        family_of = dict((id(c), family) for family in self.families for c in family.classes)
        for nodes_class in self.classes:
            positions = list(nodes_class.positions)
            del positions[: int(values[nodes_class.keep])]
            gpus = len(nodes_class.node.current)
            if nodes_class.whole is not None:
                taken = int(values[nodes_class.whole[0]])
                for position in positions[:taken]:
                    choices[position] = nodes_class.whole[1]
                del positions[:taken]
            for shared, replicas, sharing, rename in nodes_class.shared:
                taken, total = int(values[shared]), int(values[replicas])
                for index, position in enumerate(positions[:taken]):
                    each = total // taken + (1 if index < total % taken else 0)
                    choices[position] = (shared_gpu(sharing, each, rename),) * gpus
                del positions[:taken]
            if nodes_class.mig is not None:
                mig_positions[id(family_of[id(nodes_class)])].extend(positions[: int(values[nodes_class.mig])])
        for family in self.families:
            for position, descriptors in zip(
                mig_positions[id(family)], _mig_nodes(family, len(mig_positions[id(family)]), values)
            ):
                node = self.nodes[position]
                slots = dict((state, list(descriptors[state])) for state in family.states)
                choices[position] = tuple(slots[state].pop(0) for state in node.current)
        return choices


def _mig_nodes(family, count, values):
    """The GPUs of ``count`` MIG nodes of ``family``: per node, per GPU state, the options its GPUs take. Each node
    takes one option that stops its pods first, then fills its GPUs in order, most-taken options first (so that nodes
    come out alike), never leaving fewer stopping GPUs than nodes still to fill (the program's row guarantees enough).
    """
    pools = {}
    for state in family.states:
        pool = [
            [descriptor, int(values[variable]), moves_pods(state, descriptor)]
            for variable, descriptor in family.options[state]
            if int(values[variable])
        ]
        pools[state] = sorted(pool, key=lambda entry: (-entry[1], repr(entry[0])))
    stopping = sum(entry[1] for pool in pools.values() for entry in pool if entry[2])
    nodes = []
    for index in range(count):
        later = count - index - 1
        taken = dict((state, []) for state in family.states)
        first = next((state, entry) for state in family.states for entry in pools[state] if entry[2] and entry[1])
        taken[first[0]].append(first[1][0])
        first[1][1] -= 1
        stopping -= 1
        for state in family.states:
            while len(taken[state]) < family.per_node[state]:
                entry = next(e for e in pools[state] if e[1] and not (e[2] and stopping - 1 < later))
                taken[state].append(entry[0])
                entry[1] -= 1
                stopping -= int(entry[2])
        nodes.append(taken)
    return nodes


def plan_pool(
    nodes,
    pending,
    allow_moves=False,
    method=TIME_SLICING,
    max_replicas=DEFAULT_MAX_REPLICAS,
    time_limit=DEFAULT_TIME_LIMIT,
):
    """The best mode and layout per node of one pool (``nodes``) for the requests waiting there (``pending``,
    {resource: count}); pods running on the nodes are demand too. ``method``: how GPUs newly shared are shared
    (time-slicing or mps). Exact when the solver proves it within ``time_limit`` seconds; else the best plan found."""
    demand = pool_demand(nodes, pending)
    program = PoolProgram(nodes, demand, allow_moves, method, max_replicas)
    solution = solve_lexicographic(program.program, program.objectives(), program.start, time_limit)
    choices = program.choices(solution.values)
    choices = [None if descriptors == node.current else descriptors for node, descriptors in zip(nodes, choices)]
    supply = pool_supply(nodes, choices)
    served = dict((resource, min(count, supply.get(resource, 0))) for resource, count in demand.items())
    bound = dict((level.name, level.bound) for level in solution.levels)
    return PoolPlan(choices, score_of(nodes, choices, pending), solution.exact, served, bound)
