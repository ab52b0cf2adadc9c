# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""New nodes in a pool's program (issue 40): per way the pool grows (a ``NodeOffer``, made from growth.py's growers),
how many nodes it adds and the one state they all boot into, since a MachineSet's template labels (or a Kapsule pool's
labels) name one configuration for every node it adds. Pure: no I/O (docs/PLANNER.md, "Adding nodes").

Per offer: one option per state a new node may take (whole; each useful MIG layout on every GPU; per sharing method and
renaming, shared), each an integer ``count`` of nodes and a binary ``used``, ``count <= most * used``, at most one used.
A shared option also has the replicas per GPU its nodes have in all (between ``MIN_REPLICAS`` and the most per node
times ``count``): every node then takes the same replicas, rounded up, which serves at least as much. New nodes change
no GPU and move no pod; they cost their offer's ``cost`` each, in the objective after what is served. The pool's
``NewNodeLimit``s (the ClusterAutoscaler's limits, the task's cap) bound the offers together; a GPU limit counts a node
as the autoscaler does (growth.py): its GPUs times the replicas when shared unrenamed, else its GPUs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIN_REPLICAS,
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import WHOLE, shared_gpu
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import (
    most_replicas,
    useful_mig_layouts,
)

# A way to add nodes to a pool: its name (the grower's), the node it adds (a PoolNode with no pods: its model, GPUs,
# whether MIG is allowed, its MPS limit), the most it may add, the cost of one, its autoscaler GPU type (None: none),
# and the CPU cores and GiB of memory one node has (None: unknown).
NodeOffer = namedtuple("NodeOffer", "name node most cost gpu_type cores memory_gib")
# A limit the pool's offers share: its name (as ``limited_by`` says it), the most they may add in its unit, and its
# unit: "nodes", "cores", "memory" or "gpus:<type>".
NewNodeLimit = namedtuple("NewNodeLimit", "name headroom unit")
# One state an offer's nodes may take: its variables (``count`` nodes, ``used`` binary, ``replicas`` per GPU in all
# for a shared option, else None) and the state of every GPU (for a shared option, its method and renaming at
# MIN_REPLICAS).
NewNodeOption = namedtuple("NewNodeOption", "count used replicas state")


def add_offer(ledger, offer, demand, method, max_replicas):
    """The options of one offer in the program being written (program._Ledger); returns them (NewNodeOption)."""
    node, most = offer.node, offer.most
    gpus = len(node.current)
    options = []

    def option(label, state, gives, free):
        count = ledger.variable("new %s %s" % (offer.name, label), most)
        used = ledger.variable("use %s %s" % (offer.name, label), 1)
        ledger.program.row({count: 1, used: -most}, upper=0)
        ledger.add("new_node_cost", count, offer.cost)
        ledger.add("free_slices", count, free)
        ledger.gives(count, gives)
        options.append(NewNodeOption(count, used, None, state))
        return count

    option("whole", WHOLE, {RESOURCE_GPU: gpus}, 0)
    if node.mig_allowed:
        for state in useful_mig_layouts(node.model, demand):
            advertised = dict((resource, n * gpus) for resource, n in state.advertises().items())
            option(state.sort_key(), state, advertised, state.free_slices(node.model) * gpus)
    top = most_replicas(node, method, max_replicas)
    for renamed in (False, True) if demand.get(RESOURCE_GPU_SHARED) else (False,):
        if top < MIN_REPLICAS:
            break
        state = shared_gpu(method, MIN_REPLICAS, renamed)
        count = option("%s%s" % (method, " renamed" if renamed else ""), state, {}, 0)
        replicas = ledger.variable("new %s replicas %s" % (offer.name, state.sort_key()), top * most, derived=True)
        ledger.program.row({replicas: 1, count: -MIN_REPLICAS}, lower=0)
        ledger.program.row({replicas: 1, count: -top}, upper=0)
        ledger.gives(replicas, {RESOURCE_GPU_SHARED if renamed else RESOURCE_GPU: gpus})
        options[-1] = options[-1]._replace(replicas=replicas)
    ledger.program.row(dict((entry.used, 1) for entry in options), upper=1)
    return options


def _per_node(offer, unit):
    """What one new node of ``offer`` counts against a limit in ``unit`` (a GPU limit: per GPU, or per replica of a GPU
    when shared unrenamed; see limit_terms), 0 when it does not count."""
    if unit == "nodes":
        return 1
    if unit == "cores":
        return offer.cores or 0
    if unit == "memory":
        return offer.memory_gib or 0
    return len(offer.node.current) if unit == "gpus:%s" % offer.gpu_type else 0


def _counts_replicas(state):
    """A GPU limit counts a node shared unrenamed as its replicas (its allocatable nvidia.com/gpu), else its GPUs."""
    return state.is_shared and not state.renamed


def limit_terms(offer, options, unit):
    """{variable: coefficient} of what ``offer``'s options count against a limit in ``unit``."""
    each = _per_node(offer, unit)
    terms = {}
    for entry in options:
        if each:
            counted_by_replicas = unit.startswith("gpus:") and _counts_replicas(entry.state)
            terms[entry.replicas if counted_by_replicas else entry.count] = each
    return terms


# What one offer adds once solved: its name, how many nodes, and the state of every GPU of each (None: none added).
NewNodes = namedtuple("NewNodes", "name count state")


def new_nodes_from(offers, options, values):
    """Per offer (in order) the ``NewNodes`` a solution's ``values`` give: a shared state's replicas rounded up so that
    every node takes the same."""
    added = []
    for offer, entries in zip(offers, options):
        chosen = NewNodes(offer.name, 0, None)
        for entry in entries:
            count = int(round(values[entry.count]))
            if count:
                state = entry.state
                if entry.replicas is not None:
                    total = int(round(values[entry.replicas]))
                    state = shared_gpu(state.kind, -(-total // count), state.renamed)
                chosen = NewNodes(offer.name, count, state)
        added.append(chosen)
    return added


def new_nodes_supply(offers, added):
    """{resource: count} the added nodes advertise."""
    supply = {}
    for offer, new in zip(offers, added):
        if new.count:
            for resource, count in new.state.advertises().items():
                supply[resource] = supply.get(resource, 0) + count * len(offer.node.current) * new.count
    return supply


def fewest_new_replicas(offers, added, surplus):
    """The added shared nodes lose the replicas that serve nothing (``surplus``: {resource: what is advertised beyond
    the demand}), down to MIN_REPLICAS: the same served, no more sharing than needed."""
    trimmed = []
    for offer, new in zip(offers, added):
        state = new.state
        if new.count and state.is_shared:
            resource = RESOURCE_GPU_SHARED if state.renamed else RESOURCE_GPU
            per_replica = len(offer.node.current) * new.count
            fewer = min(state.replicas - MIN_REPLICAS, max(0, surplus.get(resource, 0)) // per_replica)
            surplus[resource] = surplus.get(resource, 0) - fewer * per_replica
            new = new._replace(state=shared_gpu(state.kind, state.replicas - fewer, state.renamed))
        trimmed.append(new)
    return trimmed
