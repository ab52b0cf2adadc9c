# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpu_sharing_plan plans with: a pool's GPU nodes (``PoolNode``), what a choice for one gives (``Outcome``), the
pool's demand and supply, the score of a plan, and what a node may become. Pure: no I/O (docs/PLANNER.md has the
design; program.py is the search).

Demand is counted in the resources pods request (``nvidia.com/gpu``, ``nvidia.com/gpu.shared``,
``nvidia.com/mig-<profile>``); supply is what each GPU advertises in the state planned for it (gpu_state.py).

A **choice** for a node is the tuple of its GPUs' planned states, or None to keep the node as it is (it then serves
what it advertises now). The objective, compared lexicographically: serve the most requests, move the fewest running
pods, change the fewest GPUs, leave the most compute slices free (then, among equals, advertise the fewest replicas).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    mig_resource_name,
    most_replicas_advertised,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_layouts import gpu_layouts
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import (
    GpuKind,
    mig_gpu,
    states_supply,
    stops_pods,
)

# One GPU node of a pool, built by keyword (supply.pool_node from a cluster's node).
# - model: the catalog's GpuModel, or None (a GPU without MIG the catalog does not hold);
# - current: the GPUs' current states (a tuple of GpuState, one per GPU);
# - supply: what it advertises now, {resource: count} (what keeping it serves);
# - running: {resource: count} of the GPU pods running on it (demand too: a node that changes moves them);
# - mig_allowed: MIG can be configured there (the model has MIG and the platform allows it);
# - mps_max: the most MPS replicas per GPU its control daemon accepts.
PoolNode = namedtuple("PoolNode", "name pool model current supply running mig_allowed mps_max")
# A plan's score, in the order the objectives are compared.
Score = namedtuple("Score", "served moved changed free")
# What one choice for one node gives: the supply it advertises ({resource: count}), the pods it moves, the GPUs it
# changes and the compute slices it leaves free.
Outcome = namedtuple("Outcome", "supply moved changed free")


def pods_on(node):
    return sum(node.running.values())


def stops_node_pods(node, choice):
    """Whether giving ``node`` the GPU states of ``choice`` stops its GPU pods (one GPU's change is enough)."""
    return any(stops_pods(old, new) for old, new in zip(node.current, choice))


def outcome(node, choice):
    """The ``Outcome`` of giving ``node`` the GPU states of ``choice`` (None: keep it)."""
    if choice is None:
        return Outcome(dict(node.supply), 0, 0, sum(state.free_slices(node.model) for state in node.current))
    changed = sum(1 for old, new in zip(node.current, choice) if old != new)
    moved = pods_on(node) if stops_node_pods(node, choice) else 0
    return Outcome(states_supply(choice), moved, changed, sum(state.free_slices(node.model) for state in choice))


def pool_supply(nodes, choices):
    """{resource: count} the nodes advertise once given ``choices`` (one per node, None: kept as it is)."""
    supply = {}
    for node, choice in zip(nodes, choices):
        for resource, count in outcome(node, choice).supply.items():
            supply[resource] = supply.get(resource, 0) + count
    return supply


def pool_demand(nodes, pending):
    """The pool's demand: the requests waiting (``pending``) and the pods running on its nodes."""
    demand = dict((resource, count) for resource, count in pending.items() if count)
    for node in nodes:
        for resource, count in node.running.items():
            demand[resource] = demand.get(resource, 0) + count
    return demand


def score_of(nodes, choices, pending):
    """The score of one choice per node (the planner's answer, or any other, for the tests to compare)."""
    demand = pool_demand(nodes, pending)
    supply = pool_supply(nodes, choices)
    moved = changed = free = 0
    for node, choice in zip(nodes, choices):
        result = outcome(node, choice)
        moved, changed, free = moved + result.moved, changed + result.changed, free + result.free
    served = sum(min(count, supply.get(resource, 0)) for resource, count in demand.items())
    return Score(served, moved, changed, free)


def most_replicas(node, method, max_replicas):
    """The most replicas per GPU the node may take by ``method``: ``max_replicas``, the kubelet's limit on one device
    list (nvidia/device_plugin_config.most_replicas_advertised, for the node's GPUs), and MPS's client limit."""
    top = min(max_replicas, most_replicas_advertised(len(node.current)))
    return min(top, node.mps_max) if method == GpuKind.MPS else top


def sharing_methods(node, method):
    """The sharing methods a node may take: the one asked for new sharing, and the one it already uses."""
    methods = [method]
    for state in node.current:
        if state.is_shared and state.kind not in methods:
            methods.append(state.kind)
    return methods


def useful_mig_layouts(model, demand):
    """The MIG states worth planning for a GPU: those made only of demanded profiles. A layout with another profile
    serves no more than the same layout without it (which NVIDIA's rules accept too: removing an instance never breaks
    a placement) and leaves fewer slices free."""
    states = []
    for layout in gpu_layouts(model):
        if layout and all(demand.get(mig_resource_name(profile)) for profile, _count in layout):
            states.append(mig_gpu(layout))
    return states
