# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One pool's plan as a mixed-integer program, solved by solver.py (HiGHS); read_back.py reads its solution back as one
choice per node. Pure: no I/O (docs/PLANNER.md, "The search").

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
  (solver.py: continuous in the bounding solve, free in the repair, where the counts of nodes stay as the bound
  chose them);
- per resource ``served``, at most the demand and at most what the options advertise.

The objectives, in order (solver.py solves them one after the other): the most served; where the pool may add nodes
(new_nodes.py), the least cost of new nodes; the fewest pods moved (the pods of the nodes whose change stops them); the
fewest GPUs changed; the most MIG compute slices free.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIN_REPLICAS,
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import (
    UNKNOWN,
    WHOLE,
    shared_gpu,
    stops_pods,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import (
    most_replicas,
    outcome,
    pods_on,
    pool_supply,
    sharing_methods,
    stops_node_pods,
    useful_mig_layouts,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.new_nodes import add_offer, limit_terms
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.solver import (
    MAXIMIZE,
    MINIMIZE,
    IntegerProgram,
    Objective,
)

# new_node_cost is an objective only where nodes may be added (new_nodes.py).
OBJECTIVES = ("served", "new_node_cost", "pods_moved", "gpus_changed", "free_slices")


class OptionKind(object):
    """What a group's nodes may take: stay as they are, every GPU whole, shared, or MIG (GPU by GPU)."""

    KEEP = "keep"
    WHOLE = "whole"
    SHARED = "shared"
    MIG = "mig"


# One option of a group: its variable (how many of the group's nodes take it), whether it stops their pods, its
# OptionKind, for WHOLE the choice it gives, for SHARED its Sharing.
NodeOption = namedtuple("NodeOption", "variable stops kind choice sharing")
# A shared option's method, whether it renames, and the variable of the replicas per GPU its nodes have in all.
Sharing = namedtuple("Sharing", "method renamed replicas")
# How many of a group's nodes that run ``pods`` pods take an option that stops them.
Stopping = namedtuple("Stopping", "variable pods")
# The GPUs of MIG nodes that take ``state``: how many, in ``variable``.
GpuOption = namedtuple("GpuOption", "variable state")


def _family_key(node):
    states = {}
    for state in node.current:
        states[state] = states.get(state, 0) + 1
    ordered = tuple(sorted(states.items(), key=lambda item: item[0].sort_key()))
    return (node.model.name if node.model else None, ordered, node.mig_allowed)


def _group_key(node, allow_moves):
    """Nodes with the same options and the same supply, whatever pods they run (unless their pods pin them)."""
    pinned = bool(pods_on(node)) and not allow_moves
    return _family_key(node) + (tuple(sorted(node.supply.items())), node.mps_max, pinned)


class NodeGroup(object):
    """Nodes with the same options (positions in the pool's list), by the pods they run, and their variables: the
    ``options``, and per pods count how many of the nodes whose option stops their pods run that many (``stopping``:
    the cheapest first, the pods moved). ``number``: its place in the program's groups."""

    def __init__(self, number, node):
        self.number = number
        self.node = node
        self.by_pods = {}  # pods -> positions
        self.options = []  # NodeOption
        self.stopping = []  # Stopping
        self.mig = None  # the variable of its MIG option

    @property
    def positions(self):
        return [position for pods in sorted(self.by_pods) for position in self.by_pods[pods]]


class MigFamily(object):
    """Groups whose MIG nodes are interchangeable: per GPU state, how many of a node's GPUs are in it, and per state
    the options kept to it (as it is, whole: ``GpuOption``)."""

    def __init__(self, node):
        self.model = node.model
        self.gpus = len(node.current)
        self.states = sorted(set(node.current), key=lambda state: state.sort_key())
        self.per_node = dict((state, list(node.current).count(state)) for state in self.states)
        self.groups = []
        self.kept = dict((state, []) for state in self.states)  # state -> [GpuOption]


class _Ledger(object):
    """The program being written: its variables with their starting values (the plan that changes nothing), and per
    objective and per resource the terms each variable adds."""

    def __init__(self, demand):
        self.program = IntegerProgram()
        self.start = []
        self.terms = dict((name, {}) for name in OBJECTIVES)
        self.supply = dict((resource, {}) for resource in demand)

    def variable(self, name, upper, start=0, relaxed=False, derived=False):
        self.start.append(start)
        return self.program.variable(name, upper=upper, relaxed=relaxed, derived=derived)

    def add(self, objective, variable, coefficient):
        if coefficient:
            terms = self.terms[objective]
            terms[variable] = terms.get(variable, 0) + coefficient

    def gives(self, variable, supply):
        for resource, count in supply.items():
            if resource in self.supply and count:
                self.supply[resource][variable] = self.supply[resource].get(variable, 0) + count


def _option(ledger, group, name, stops, kind, choice=None, sharing=None, start=0):
    """A variable counting the group's nodes that take an option."""
    count = len(group.positions)
    variable = ledger.variable("%s %s x%d" % (name, group.node.name, count), count, start)
    group.options.append(NodeOption(variable, stops, kind, choice, sharing))
    return variable


def _add_group(ledger, group, demand, allow_moves, method, max_replicas):
    """The options of one group, the row that gives each of its nodes one, and which of them stop pods."""
    node, count = group.node, len(group.positions)
    gpus = len(node.current)
    keep = _option(ledger, group, "keep", False, OptionKind.KEEP, start=count)
    ledger.gives(keep, node.supply)
    ledger.add("free_slices", keep, outcome(node, None).free)
    whole = (WHOLE,) * gpus
    stops = stops_node_pods(node, whole)
    if whole != node.current and (allow_moves or not stops or not pods_on(node)):
        variable = _option(ledger, group, "whole", stops, OptionKind.WHOLE, choice=whole)
        ledger.gives(variable, {RESOURCE_GPU: gpus})
        ledger.add("gpus_changed", variable, outcome(node, whole).changed)
    for method_here in sharing_methods(node, method):
        _add_shared(ledger, group, method_here, demand, allow_moves, max_replicas)
    if node.mig_allowed and (allow_moves or not pods_on(node)):
        group.mig = _option(ledger, group, "mig", True, OptionKind.MIG)
    ledger.program.row(dict((option.variable, 1) for option in group.options), lower=count, upper=count)
    # The nodes whose option stops their pods are those with the fewest pods the solver wants: one integer per
    # pods count (the cost is convex in the number of such nodes, so the program needs no choice of which).
    stopping = dict((option.variable, -1) for option in group.options if option.stops)
    if stopping:
        for pods, positions in sorted(group.by_pods.items()):
            variable = ledger.variable("stopping %s with %d pods" % (node.name, pods), len(positions))
            group.stopping.append(Stopping(variable, pods))
            stopping[variable] = 1
            ledger.add("pods_moved", variable, pods)
        ledger.program.row(stopping, lower=0, upper=0)


def _add_shared(ledger, group, method, demand, allow_moves, max_replicas):
    """The group's options of sharing by ``method``: renamed or not, in ranges of replicas around the node's own."""
    node, count = group.node, len(group.positions)
    gpus = len(node.current)
    top = most_replicas(node, method, max_replicas)
    for renamed in (False, True) if demand.get(RESOURCE_GPU_SHARED) else (False,):
        own = [state.replicas for state in node.current if state.kind == method and state.renamed == renamed]
        # The node's own replicas are its keep: the ranges below and above them.
        ranges = [(MIN_REPLICAS, top)] if len(own) != gpus else [(MIN_REPLICAS, own[0] - 1), (own[0] + 1, top)]
        for low, high in ranges:
            choice = (shared_gpu(method, low, renamed),) * gpus
            stops = stops_node_pods(node, choice)
            if low > high or (stops and pods_on(node) and not allow_moves):
                continue
            label = "%s%s %d-%d" % (method, " renamed" if renamed else "", low, high)
            replicas = ledger.variable("replicas %s %s" % (label, node.name), high * count, derived=True)
            shared = _option(ledger, group, label, stops, OptionKind.SHARED, sharing=Sharing(method, renamed, replicas))
            ledger.program.row({replicas: 1, shared: -low}, lower=0)
            ledger.program.row({replicas: 1, shared: -high}, upper=0)
            ledger.gives(replicas, {RESOURCE_GPU_SHARED if renamed else RESOURCE_GPU: gpus})
            ledger.add("gpus_changed", shared, outcome(node, choice).changed)


def _add_mig(ledger, families, demand):
    """The GPUs of one model's MIG nodes: per family and state the options kept to it (the GPU stays, or goes whole
    without stopping the node's pods), then the pooled options, which every other change takes. A pooled option
    may reach a GPU already in that state: a change in the program, none in the plan, whose score is computed from
    the plan (so a plan never scores worse than the program's value). The pooled options, as ``GpuOption``s."""
    model = families[0].model
    most = sum(family.gpus * len(group.positions) for family in families for group in family.groups)
    every_gpu = {}
    for family in families:
        nodes = dict((group.mig, 1) for group in family.groups)
        staying = dict((variable, 1 - family.gpus) for variable in nodes)
        for variable in nodes:
            every_gpu[variable] = -family.gpus
        most_here = sum(len(group.positions) for group in family.groups)
        for state in family.states:
            targets = [] if state == UNKNOWN else [state]
            targets += [WHOLE] if state != WHOLE and not stops_pods(state, WHOLE) else []
            in_state = dict((variable, -family.per_node[state]) for variable in nodes)
            for target in targets:
                variable = ledger.variable(
                    "gpu %s as %s" % (state.sort_key(), target.sort_key()),
                    family.per_node[state] * most_here,
                    relaxed=True,
                )
                family.kept[state].append(GpuOption(variable, target))
                in_state[variable] = every_gpu[variable] = staying[variable] = 1
                _gpu_option(ledger, variable, model, state, target)
            ledger.program.row(in_state, upper=0)
        ledger.program.row(staying, upper=0)
    pooled = []
    for target in [WHOLE] + useful_mig_layouts(model, demand):
        variable = ledger.variable("gpus %s as %s" % (model.name, target.sort_key()), most, relaxed=True)
        pooled.append(GpuOption(variable, target))
        every_gpu[variable] = 1
        _gpu_option(ledger, variable, model, None, target)
    ledger.program.row(every_gpu, lower=0, upper=0)
    return pooled


def _gpu_option(ledger, variable, model, state, target):
    """What one GPU of a MIG node in ``state`` (None: any) taking ``target`` gives and costs."""
    ledger.gives(variable, target.advertises())
    ledger.add("gpus_changed", variable, int(target != state))
    ledger.add("free_slices", variable, target.free_slices(model))


def _add_counted_changes(terms, group):
    """Add to a GPU limit's ``terms`` how a group's options change what the autoscaler counts its nodes as (their
    allocatable nvidia.com/gpu, else their GPUs): whole GPUs and renamed replicas count the GPUs, unrenamed replicas
    count themselves. A MIG option may keep some GPUs as they are, so it is counted as the most it can count (the GPUs,
    or what the node counts now if more), so that a limit is never exceeded."""
    gpus = len(group.node.current)
    counted_now = group.node.supply.get(RESOURCE_GPU, 0) or gpus
    for option in group.options:
        if option.kind == OptionKind.KEEP:
            continue
        if option.kind == OptionKind.SHARED and not option.sharing.renamed:
            terms[option.sharing.replicas] = terms.get(option.sharing.replicas, 0) + gpus
            terms[option.variable] = terms.get(option.variable, 0) - counted_now
        elif option.kind == OptionKind.MIG:
            terms[option.variable] = terms.get(option.variable, 0) + max(0, gpus - counted_now)
        else:
            terms[option.variable] = terms.get(option.variable, 0) + gpus - counted_now


class PoolProgram(object):
    """The program of one pool (``program``), its groups and MIG families, the pooled MIG options per model name
    (``pooled``), the nodes it may add (``offers``, new_nodes.NodeOffer, bound together by ``limits``,
    new_nodes.NewNodeLimit; ``new_options``: each offer's NewNodeOptions), the plan that changes nothing (``start``)
    and the objectives."""

    def __init__(self, nodes, demand, allow_moves, method, max_replicas, offers=(), limits=(), gpu_types=None):
        self.nodes = nodes
        self.offers = list(offers)
        # With nodes to add, a node's autoscaler GPU type (``gpu_types``: {name: type}) is part of its group, since a
        # GPU limit counts the changes of the nodes of its type.
        gpu_types = gpu_types if self.offers else None
        ledger = _Ledger(demand)
        self.groups, self.families = [], []
        by_group, by_family = {}, {}
        for position, node in enumerate(nodes):
            key = _group_key(node, allow_moves) + ((gpu_types.get(node.name),) if gpu_types else ())
            if key not in by_group:
                by_group[key] = NodeGroup(len(self.groups), node)
                self.groups.append(by_group[key])
            by_group[key].by_pods.setdefault(pods_on(node), []).append(position)
        for group in self.groups:
            _add_group(ledger, group, demand, allow_moves, method, max_replicas)
            if group.mig is not None:
                key = _family_key(group.node)
                if key not in by_family:
                    by_family[key] = MigFamily(group.node)
                    self.families.append(by_family[key])
                by_family[key].groups.append(group)
        self.pooled = {}  # model name -> [GpuOption]: whole and the useful layouts, for any MIG GPU
        by_model = {}
        for family in self.families:
            by_model.setdefault(family.model.name, []).append(family)
        for name, families in sorted(by_model.items()):
            self.pooled[name] = _add_mig(ledger, families, demand)
        self.new_options = [add_offer(ledger, offer, demand, method, max_replicas) for offer in self.offers]
        self.limit_terms = {}  # limit name -> {variable: coefficient}: what the plan counts against it
        for limit in limits if self.offers else ():
            terms = {}
            for offer, options in zip(self.offers, self.new_options):
                terms.update(limit_terms(offer, options, limit.unit))
            if limit.unit.startswith("gpus:"):
                for group in self.groups:
                    if (gpu_types or {}).get(group.node.name) == limit.unit[len("gpus:") :]:
                        _add_counted_changes(terms, group)
            ledger.program.row(terms, upper=limit.headroom)
            self.limit_terms[limit.name] = terms
        kept = pool_supply(nodes, [None] * len(nodes))
        for resource, count in sorted(demand.items()):
            served = ledger.variable("served %s" % resource, count, min(count, kept.get(resource, 0)), derived=True)
            ledger.add("served", served, 1)
            terms = dict((variable, -coefficient) for variable, coefficient in ledger.supply[resource].items())
            terms[served] = 1
            ledger.program.row(terms, upper=0)
        self.program, self.start, self.terms = ledger.program, ledger.start, ledger.terms

    def objectives(self):
        senses = dict(served=MAXIMIZE, free_slices=MAXIMIZE)
        names = [name for name in OBJECTIVES if self.offers or name != "new_node_cost"]
        return [Objective(name, senses.get(name, MINIMIZE), self.terms[name]) for name in names]
