# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""New nodes in a pool's program (issue 40): per way the pool grows (a ``NodeOffer``, made from growth.py's growers),
how many nodes it adds and the one state they all boot into, since a MachineSet's template labels (or a Kapsule pool's
labels) name one configuration for every node it adds. Pure: no I/O (docs/PLANNER.md, "Adding nodes").

Per offer: one option per state a new node may take (whole; each useful MIG layout on every GPU; shared by the method
asked, renamed or not, by each number of replicas from ``MIN_REPLICAS`` to the most the node may take), each an
integer ``count`` of nodes and a binary ``used``, ``count <= most * used``, at most one used: every new node of an
offer takes the same state, replicas included, so that what a GPU limit counts is what the nodes will advertise. New
nodes change no GPU and move no pod; they cost their offer's ``cost`` each, in the objective after what is served. The
pool's ``NewNodeLimit``s (the ClusterAutoscaler's limits, the task's cap) bound the offers together; a GPU limit counts
a node as the autoscaler does (growth.py): its GPUs times the replicas when shared unrenamed, else its GPUs.
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
# One state an offer's nodes may take: its variables (``count`` nodes, ``used`` binary) and the state of every GPU.
NewNodeOption = namedtuple("NewNodeOption", "count used state")


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
        options.append(NewNodeOption(count, used, state))

    states = [WHOLE] + (useful_mig_layouts(node.model, demand) if node.mig_allowed else [])
    top = most_replicas(node, method, max_replicas)
    for renamed in (False, True) if demand.get(RESOURCE_GPU_SHARED) else (False,):
        states += [shared_gpu(method, replicas, renamed) for replicas in range(MIN_REPLICAS, top + 1)]
    for state in states:
        advertised = dict((resource, n * gpus) for resource, n in state.advertises().items())
        option(str(state.sort_key()), state, advertised, state.free_slices(node.model) * gpus)
    ledger.program.row(dict((entry.used, 1) for entry in options), upper=1)
    return options


def _per_node(offer, state, unit):
    """What one new node of ``offer`` in ``state`` counts against a limit in ``unit``, 0 when it does not count. A GPU
    limit counts it as its allocatable nvidia.com/gpu: its GPUs times the replicas when shared unrenamed, else its GPUs
    (growth.py, GetNodeGpuTarget)."""
    if unit == "nodes":
        return 1
    if unit == "cores":
        return offer.cores or 0
    if unit == "memory":
        return offer.memory_gib or 0
    if unit != "gpus:%s" % offer.gpu_type:
        return 0
    gpus = len(offer.node.current)
    return gpus * state.replicas if state.is_shared and not state.renamed else gpus


def limit_terms(offer, options, unit):
    """{variable: coefficient} of what ``offer``'s options count against a limit in ``unit``."""
    terms = dict((entry.count, _per_node(offer, entry.state, unit)) for entry in options)
    return dict((variable, each) for variable, each in terms.items() if each)


# What one offer adds once solved: its name, how many nodes, and the state of every GPU of each (None: none added).
NewNodes = namedtuple("NewNodes", "name count state")


def new_nodes_from(offers, options, values):
    """Per offer (in order) the ``NewNodes`` a solution's ``values`` give."""
    added = []
    for offer, entries in zip(offers, options):
        chosen = NewNodes(offer.name, 0, None)
        for entry in entries:
            count = int(round(values[entry.count]))
            if count:
                chosen = NewNodes(offer.name, count, entry.state)
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
