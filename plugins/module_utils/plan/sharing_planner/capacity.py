# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which nodes a plan may add (issue 40): the ways to grow that the plan owns (growth.py's growers whose size no
autoscaler sets) as the program's offers (new_nodes.NodeOffer), and the limits they share (the ClusterAutoscaler's,
the task's ``max_new_nodes``) as its NewNodeLimits, with what each pool's plan leaves of them for the next. Pure: no
I/O (docs/PLANNER.md, "Adding nodes").

The program is solved pool by pool, while the shared limits bind every pool's new nodes together. Each pool is first
planned with the whole of every shared limit: when the plans together keep within each, they are the best joint plan
too (the pools are otherwise independent, and a lexicographic objective summed over independent parts is optimised
part by part). When they do not, the pools are planned again one after the other, each within what the ones before
left, and the plan is not proven (``exact`` false, with a finding).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import mps_max_clients
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import find_gpu_model
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import WHOLE
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.growth import OWNER_PLAN
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import PoolNode
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.new_nodes import NewNodeLimit, NodeOffer


def new_pool_node(grower, states, mig_allowed):
    """The PoolNode a grower adds: its GPUs whole, no pods; the model, MIG and MPS of a ready node it made (the
    autoscaler's template too), else the catalog's model of the product given, MIG where the model has it and MPS
    never (nothing shows the new nodes MPS-capable)."""
    ready = [states[name] for name in grower.ready_nodes if name in states]
    if ready:
        model = ready[0].gpu_model
        mig = ready[0].mig_capable
        mps_max = mps_max_clients(ready[0].compute_capability) if ready[0].mps_capable else 0
    else:
        new = grower.new_node
        model = find_gpu_model(new.product, new.gpu_memory_mib) if new.product else None
        mig, mps_max = True, 0
    return PoolNode(
        name=grower.name,
        pool=grower.pool,
        model=model,
        current=(WHOLE,) * grower.new_node.gpus,
        supply={},
        running={},
        mig_allowed=bool(mig_allowed and mig and model is not None and model.mig_capable),
        mps_max=mps_max,
    )


def node_offers(growers, nodes, mig_allowed, max_new_nodes, costs):
    """{pool: [NodeOffer]} of the growers the plan owns (``costs``: {grower name: cost of one node}; by default its
    GPUs, every GPU costing the same); ``nodes``: every node (a grower's ready nodes are its template). An offer's most
    is its grower's own bound and the task's cap: the shared limits are the program's rows (new_node_limits), since
    what the plan does to existing nodes changes what a GPU limit leaves."""
    states = dict((state.name, state) for state in map(NodeGpuState.from_node, nodes))
    offers = {}
    for grower in growers:
        if grower.owner != OWNER_PLAN or not grower.new_node.gpus:
            continue
        most = max_new_nodes
        if grower.max_size is not None:
            most = min(most, grower.max_size - grower.size)
        if most <= 0:
            continue
        offers.setdefault(grower.pool, []).append(
            NodeOffer(
                name=grower.name,
                node=new_pool_node(grower, states, mig_allowed),
                most=most,
                cost=costs.get(grower.name, grower.new_node.gpus),
                gpu_type=grower.new_node.gpu_type,
                cores=grower.new_node.cores,
                memory_gib=grower.new_node.memory_gib,
            )
        )
    return offers


def new_node_limits(limits, max_new_nodes):
    """The NewNodeLimits every pool's offers share: the task's cap, and what the ClusterAutoscaler leaves."""
    shared = [NewNodeLimit("max_new_nodes", max_new_nodes, "nodes")]
    if limits.max_nodes_total is not None:
        shared.append(NewNodeLimit("maxNodesTotal", max(0, limits.max_nodes_total - limits.nodes), "nodes"))
    if limits.cores is not None:
        shared.append(NewNodeLimit("cores", max(0, limits.cores - limits.cores_now), "cores"))
    if limits.memory_gib is not None:
        shared.append(NewNodeLimit("memory", max(0, limits.memory_gib - limits.memory_gib_now), "memory"))
    for gpu_type, (most, counted) in sorted(limits.gpus.items()):
        shared.append(NewNodeLimit("gpus[%s]" % gpu_type, max(0, most - counted), "gpus:%s" % gpu_type))
    return shared


def left_after(shared, use):
    """``shared`` less what one pool's plan counts against each (``use``: {limit name: count}, search.PoolPlan's)."""
    return [limit._replace(headroom=limit.headroom - use.get(limit.name, 0)) for limit in shared]


def exceeded(shared, uses):
    """The names of the shared limits the pools' plans together exceed (``uses``: per pool {limit name: count})."""
    return [limit.name for limit in shared if sum(use.get(limit.name, 0) for use in uses) > limit.headroom]
