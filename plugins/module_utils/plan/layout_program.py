# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layout planner's search: one pool's plan as a mixed-integer program, solved by plan/milp (HiGHS), then
read back as one choice per node. Pure: no I/O (docs/PLANNER.md, "The search").

Nodes with the same options and supply are one group, whatever pods they run, and count as one integer per option:
how many of them take it. The program grows with the number of groups and of MIG layouts, not with the number of
nodes:

- per group: ``keep`` (nodes left as they are: they serve what they advertise now), ``whole`` (every GPU whole), per
  sharing method and renaming a pair (``shared``, ``replicas``): how many nodes share their GPUs that way and the
  replicas per GPU they have in all, between ``MIN_REPLICAS`` and the most per node times ``shared`` (replicas equal to
  the node's own are its ``keep``, so its range is split around them); and ``mig``: how many nodes change to MIG.
  Per pods count, how many of the nodes whose option stops their pods run that many: they add up to those options'
  nodes and each costs its pods (a convex cost: the cheapest nodes are taken, with nothing for the solver to choose
  between);
- per family of groups (the same model and GPU states, differing in pods, supply or MPS limit), per GPU state: how
  many GPUs of its MIG nodes stay as they are, and (a time-sliced GPU) how many go whole, which does not stop the
  node's pods; at most the GPUs in that state, and at most all but one GPU per node (a MIG node with no change that
  stops its pods is a ``keep``, or a time-sliced node going whole GPU by GPU, which never serves more);
- per GPU model, whole and each useful layout: how many GPUs of the model's MIG nodes change to it, wherever they are
  (for every GPU a change with the same supply and cost, so one integer serves all families: no copies for the solver
  to tell apart); with the rest, every GPU of every MIG node takes one option. These counts of GPUs are ``relaxed``
  (plan/milp: continuous in the bounding solve, free in the repair, where the counts of nodes stay as the bound
  chose them);
- per resource ``served``, at most the demand and at most what the choices advertise.

The objectives, in order (plan/milp solves them one after the other): the most served; the fewest pods moved (the
pods of the nodes whose change stops them); the fewest GPUs changed; the most MIG compute slices free. The
nodes newly shared then lose the replicas that serve nothing.
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
    UNKNOWN,
    WHOLE,
    evaluate,
    free_slices,
    gpu_supply,
    moves_pods,
    pods_on,
    pool_demand,
    pool_supply,
    score_of,
    shared_gpu,
    sharing_methods,
    useful_mig_layouts,
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
OBJECTIVES = ("served", "pods_moved", "gpus_changed", "free_slices")
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


def _stops_pods(node, descriptors):
    return any(moves_pods(old, new) for old, new in zip(node.current, descriptors))


def _group_key(node, allow_moves):
    """Nodes with the same options and the same supply, whatever pods they run (unless their pods pin them)."""
    pinned = bool(pods_on(node)) and not allow_moves
    return _family_key(node) + (tuple(sorted(node.supply.items())), node.mps_max, pinned)


# One option of a group: its variable, whether it stops the node's pods, its kind (keep, whole, shared, mig), and for
# whole the descriptors, for shared (method, rename, the replicas variable).
_Option = namedtuple("_Option", "variable stops kind detail")


class _Group(object):
    """Nodes with the same options (positions in the pool's list), by the pods they run, and their variables: per
    option (``keep``, ``whole``, ``shared`` with its replicas, ``mig``) how many nodes take it, and per pods count how
    many of the nodes whose option stops their pods run that many (``moving``: the cheapest first, the pods moved)."""

    def __init__(self, node):
        self.node = node
        self.by_pods = {}  # pods -> positions
        self.options = []  # _Option
        self.moving = []  # (variable, pods)
        self.mig = None

    @property
    def positions(self):
        return [position for pods in sorted(self.by_pods) for position in self.by_pods[pods]]


class _Family(object):
    """Groups whose MIG nodes are interchangeable: per GPU state, how many of a node's GPUs are in it, and per state
    the variables of the options kept to it (as it is, whole, another family's state)."""

    def __init__(self, node):
        self.model = node.model
        self.gpus = len(node.current)
        self.states = sorted(set(node.current), key=repr)
        self.per_node = dict((state, list(node.current).count(state)) for state in self.states)
        self.groups = []
        self.options = dict((state, []) for state in self.states)  # state -> [(variable, descriptor)]


class PoolProgram(object):
    """The program of one pool, its objectives, the plan that changes nothing (a start), and the reading back."""

    def __init__(self, nodes, demand, allow_moves, method, max_replicas):
        self.nodes = nodes
        self.program = IntegerProgram()
        self.start = []
        self.terms = dict((name, {}) for name in OBJECTIVES)
        self.supply = dict((resource, {}) for resource in demand)
        self.groups, self.families = [], []
        by_group, by_family = {}, {}
        for position, node in enumerate(nodes):
            key = _group_key(node, allow_moves)
            if key not in by_group:
                by_group[key] = _Group(node)
                self.groups.append(by_group[key])
            by_group[key].by_pods.setdefault(pods_on(node), []).append(position)
        for group in self.groups:
            self._add_group(group, demand, allow_moves, method, max_replicas)
            if group.mig is not None:
                key = _family_key(group.node)
                if key not in by_family:
                    by_family[key] = _Family(group.node)
                    self.families.append(by_family[key])
                by_family[key].groups.append(group)
        self.pooled = {}  # model name -> [(variable, descriptor)]: whole and the useful layouts, for any MIG GPU
        by_model = {}
        for family in self.families:
            by_model.setdefault(family.model.name, []).append(family)
        for name, families in sorted(by_model.items()):
            self.pooled[name] = self._add_mig(families, demand)
        kept = pool_supply(nodes, [None] * len(nodes))
        for resource, count in sorted(demand.items()):
            served = self._variable("served %s" % resource, count, min(count, kept.get(resource, 0)), derived=True)
            self.terms["served"][served] = 1
            terms = dict((variable, -coefficient) for variable, coefficient in self.supply[resource].items())
            terms[served] = 1
            self.program.row(terms, upper=0)

    def _variable(self, name, upper, start=0, relaxed=False, derived=False):
        self.start.append(start)
        return self.program.variable(name, upper=upper, relaxed=relaxed, derived=derived)

    def _add(self, objective, variable, coefficient):
        if coefficient:
            terms = self.terms[objective]
            terms[variable] = terms.get(variable, 0) + coefficient

    def _gives(self, variable, gives):
        for resource, count in gives.items():
            if resource in self.supply and count:
                self.supply[resource][variable] = self.supply[resource].get(variable, 0) + count

    def _option(self, group, name, stops, kind, detail=None, start=0):
        """A variable counting the group's nodes that take an option."""
        count = len(group.positions)
        variable = self._variable("%s %s x%d" % (name, group.node.name, count), count, start)
        group.options.append(_Option(variable, stops, kind, detail))
        return variable

    def _add_group(self, group, demand, allow_moves, method, max_replicas):
        node, count = group.node, len(group.positions)
        gpus = len(node.current)
        keep = self._option(group, "keep", False, "keep", start=count)
        self._gives(keep, node.supply)
        self._add("free_slices", keep, evaluate(node, None)[3])
        whole = (WHOLE,) * gpus
        stops = _stops_pods(node, whole)
        if whole != node.current and (allow_moves or not stops or not pods_on(node)):
            variable = self._option(group, "whole", stops, "whole", whole)
            self._gives(variable, {RESOURCE_GPU: gpus})
            self._add("gpus_changed", variable, evaluate(node, whole)[2])
        for sharing in sharing_methods(node, method):
            top = most_replicas(node, sharing, max_replicas)
            for rename in (False, True) if demand.get(RESOURCE_GPU_SHARED) else (False,):
                own = [d[1] for d in node.current if d[0] == sharing and d[2] == rename]
                # The node's own replicas are its keep: the ranges below and above them.
                ranges = [(MIN_REPLICAS, top)] if len(own) != gpus else [(MIN_REPLICAS, own[0] - 1), (own[0] + 1, top)]
                for low, high in ranges:
                    descriptors = (shared_gpu(sharing, low, rename),) * gpus
                    stops = _stops_pods(node, descriptors)
                    if low > high or (stops and pods_on(node) and not allow_moves):
                        continue
                    label = "%s%s %d-%d" % (sharing, " renamed" if rename else "", low, high)
                    replicas = self._variable("replicas %s %s" % (label, node.name), high * count, derived=True)
                    shared = self._option(group, label, stops, "shared", (sharing, rename, replicas))
                    self.program.row({replicas: 1, shared: -low}, lower=0)
                    self.program.row({replicas: 1, shared: -high}, upper=0)
                    self._gives(replicas, {RESOURCE_GPU_SHARED if rename else RESOURCE_GPU: gpus})
                    self._add("gpus_changed", shared, evaluate(node, descriptors)[2])
        if node.mig_allowed and (allow_moves or not pods_on(node)):
            group.mig = self._option(group, "mig", True, "mig")
        self.program.row(dict((option.variable, 1) for option in group.options), lower=count, upper=count)
        # The nodes whose option stops their pods are those with the fewest pods the solver wants: one integer per
        # pods count (the cost is convex in the number of such nodes, so the program needs no choice of which).
        stopping = dict((option.variable, -1) for option in group.options if option.stops)
        if stopping:
            for pods, positions in sorted(group.by_pods.items()):
                variable = self._variable("stopping %s with %d pods" % (node.name, pods), len(positions))
                group.moving.append((variable, pods))
                stopping[variable] = 1
                self._add("pods_moved", variable, pods)
            self.program.row(stopping, lower=0, upper=0)

    def _add_mig(self, families, demand):
        """The GPUs of one model's MIG nodes: per family and state the options kept to it (the GPU stays, or goes whole
        without stopping the node's pods), then the pooled options, which every other change takes. A pooled option
        may reach a GPU already in that state: a change in the program, none in the plan, whose score is computed from
        the plan (so a plan never scores worse than the program's value)."""
        model = families[0].model
        layouts = [WHOLE] + useful_mig_layouts(model, demand)
        most = sum(family.gpus * len(group.positions) for family in families for group in family.groups)
        every_gpu = {}
        for family in families:
            nodes = dict((group.mig, 1) for group in family.groups)
            staying = dict((variable, 1 - family.gpus) for variable in nodes)
            for variable in nodes:
                every_gpu[variable] = -family.gpus
            most_here = sum(len(group.positions) for group in family.groups)
            for state in family.states:
                options = [] if state == UNKNOWN else [state]
                options += [WHOLE] if state != WHOLE and not moves_pods(state, WHOLE) else []
                in_state = dict((variable, -family.per_node[state]) for variable in nodes)
                for descriptor in options:
                    variable = self._variable(
                        "gpu %r as %r" % (state, descriptor), family.per_node[state] * most_here, relaxed=True
                    )
                    family.options[state].append((variable, descriptor))
                    in_state[variable] = every_gpu[variable] = staying[variable] = 1
                    self._gpu_option(variable, model, state, descriptor)
                self.program.row(in_state, upper=0)
            self.program.row(staying, upper=0)
        pooled = []
        for descriptor in layouts:
            variable = self._variable("gpus %s as %r" % (model.name, descriptor), most, relaxed=True)
            pooled.append((variable, descriptor))
            every_gpu[variable] = 1
            self._gpu_option(variable, model, None, descriptor)
        self.program.row(every_gpu, lower=0, upper=0)
        return pooled

    def _gpu_option(self, variable, model, state, descriptor):
        """What one GPU of a MIG node in ``state`` (None: any) taking ``descriptor`` gives and costs."""
        self._gives(variable, gpu_supply(descriptor))
        self._add("gpus_changed", variable, int(descriptor != state))
        self._add("free_slices", variable, free_slices(model, descriptor))

    def objectives(self):
        senses = dict(served=MAXIMIZE, free_slices=MAXIMIZE)
        return [Objective(name, senses.get(name, MINIMIZE), self.terms[name]) for name in OBJECTIVES]

    def choices(self, values):
        """One choice per node (None: keep it) from a solution's ``values``."""
        choices = [None] * len(self.nodes)
        mig_positions = dict((id(family), []) for family in self.families)
        family_of = dict((id(group), family) for family in self.families for group in family.groups)
        for group in self.groups:
            gpus = len(group.node.current)
            # The nodes whose option stops their pods: per pods count as many as the solution says, fewest pods first.
            stopping = dict((pods, int(values[variable])) for variable, pods in group.moving)
            moving, staying = [], []
            for pods, positions in sorted(group.by_pods.items()):
                moving.extend(positions[: stopping.get(pods, 0)])
                staying.extend(positions[stopping.get(pods, 0) :])
            for option in group.options:
                taken = moving if option.stops else staying
                count = int(values[option.variable])
                chosen, taken[:] = taken[:count], taken[count:]
                if option.kind == "mig":
                    mig_positions[id(family_of[id(group)])].extend(chosen)
                elif option.kind == "whole":
                    for position in chosen:
                        choices[position] = option.detail
                elif option.kind == "shared":
                    sharing, rename, replicas = option.detail
                    total = int(values[replicas])
                    for index, position in enumerate(chosen):
                        each = total // count + (1 if index < total % count else 0)
                        choices[position] = (shared_gpu(sharing, each, rename),) * gpus
        by_model = {}
        for family in self.families:
            gpus = [_FreeGpus(self.nodes[position], family.states) for position in mig_positions[id(family)]]
            _place_kept_options(family, gpus, values)
            by_model.setdefault(family.model.name, []).extend(gpus)
            for position, node_gpus in zip(mig_positions[id(family)], gpus):
                choices[position] = node_gpus
        for name, gpus in by_model.items():
            pooled = [(descriptor, int(values[variable])) for variable, descriptor in self.pooled[name]]
            for descriptor, count in sorted(pooled, key=lambda entry: (-entry[1], repr(entry[0]))):
                for node_gpus in gpus:
                    count = node_gpus.take(None, descriptor, count)
        for position, choice in enumerate(choices):
            if isinstance(choice, _FreeGpus):
                choices[position] = choice.descriptors()
        return choices


class _FreeGpus(object):
    """A MIG node's GPUs being given their options: per state, the options given so far."""

    def __init__(self, node, states):
        self.node = node
        self.given = dict((state, []) for state in states)
        self.room = dict((state, list(node.current).count(state)) for state in states)

    def take(self, state, descriptor, count):
        """Give ``descriptor`` to up to ``count`` free GPUs in ``state`` (None: in any, those in another state first, so
        that the change the program counts is one); the count left."""
        for here in [state] if state is not None else sorted(self.given, key=lambda s: (s == descriptor, repr(s))):
            placed = min(count, self.room[here] - len(self.given[here]))
            self.given[here].extend([descriptor] * placed)
            count -= placed
        return count

    def descriptors(self):
        given = dict((state, list(options)) for state, options in self.given.items())
        return tuple(given[state].pop(0) for state in self.node.current)


def _place_kept_options(family, gpus, values):
    """Give the family's MIG nodes (``gpus``) the options kept to a state (none of them stops the node's pods): spread
    evenly, each state's from where the previous state's ended, so that no node gets more than the program's row allows
    (all its GPUs but one). The pooled options take the rest (PoolProgram.choices), so every node has a change that
    stops its pods."""
    count = len(gpus)
    start = 0
    for state in family.states:
        options = [(descriptor, int(values[variable])) for variable, descriptor in family.options[state]]
        total = sum(number for _descriptor, number in options)
        shares = [total // count + (1 if (index - start) % count < total % count else 0) for index in range(count)]
        start = (start + total) % count if count else 0
        queue = [descriptor for descriptor, number in options for _copy in range(number)]
        for node_gpus, share in zip(gpus, shares):
            for descriptor in queue[:share]:
                node_gpus.take(state, descriptor, 1)
            del queue[:share]


def _fewest_replicas(nodes, choices, demand):
    """The nodes newly shared lose the replicas that serve nothing (beyond the demand), down to ``MIN_REPLICAS``, node
    by node: the same requests served, the same GPUs changed, no more sharing than needed."""
    surplus = dict((r, n - demand.get(r, 0)) for r, n in pool_supply(nodes, choices).items())
    trimmed = []
    for node, descriptors in zip(nodes, choices):
        shared = descriptors is not None and len(set(descriptors)) == 1 and descriptors[0][0] in (TIME_SLICING, MPS)
        if shared and descriptors != node.current:
            method, replicas, rename = descriptors[0]
            resource = RESOURCE_GPU_SHARED if rename else RESOURCE_GPU
            fewer = min(replicas - MIN_REPLICAS, max(0, surplus.get(resource, 0)) // len(descriptors))
            if fewer and shared_gpu(method, replicas - fewer, rename) == node.current[0]:
                fewer -= 1  # the node's own replicas would make it unchanged: one more keeps it a change
            surplus[resource] = surplus.get(resource, 0) - fewer * len(descriptors)
            descriptors = (shared_gpu(method, replicas - fewer, rename),) * len(descriptors)
        trimmed.append(descriptors)
    return trimmed


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
    choices = _fewest_replicas(nodes, program.choices(solution.values), demand)
    choices = [None if descriptors == node.current else descriptors for node, descriptors in zip(nodes, choices)]
    supply = pool_supply(nodes, choices)
    served = dict((resource, min(count, supply.get(resource, 0))) for resource, count in demand.items())
    bound = dict((level.name, None if level.bound is None else int(level.bound)) for level in solution.levels)
    return PoolPlan(choices, score_of(nodes, choices, pending), solution.exact, served, bound)
