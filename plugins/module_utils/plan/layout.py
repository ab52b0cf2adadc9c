# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the layout planner behind gpu_sharing_plan plans with: the states a GPU can be in, what each advertises, the
options a node has, and the score of a choice. Pure: no I/O (docs/PLANNER.md has the design; plan/layout_program.py
is the search).

Demand is counted in the resources pods request (``nvidia.com/gpu``, ``nvidia.com/gpu.shared``,
``nvidia.com/mig-<profile>``); supply is what each GPU advertises in the state planned for it:

- a whole GPU: one ``nvidia.com/gpu``;
- a GPU time-sliced or shared through MPS by ``r`` replicas: ``r`` of ``nvidia.com/gpu`` (``.shared`` when the
  profile renames);
- a MIG GPU: its instances, one ``nvidia.com/mig-<profile>`` each (the mixed strategy; a MIG-disabled GPU of a MIG
  node is whole).

The objective, compared lexicographically: serve the most requests, move the fewest running pods, change the fewest
GPUs, leave the most compute slices free (then, among equals, advertise the fewest replicas).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import METHOD_MPS as MPS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    METHOD_TIME_SLICING as TIME_SLICING,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    RESOURCE_GPU,
    SHARED_RESOURCE_SUFFIX,
    mig_resource_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_layouts import gpu_layouts

RESOURCE_GPU_SHARED = RESOURCE_GPU + SHARED_RESOURCE_SUFFIX

# What one GPU is, or is planned to be: whole; ("mig", layout) with a mig_layouts layout; (method, replicas, rename)
# for time-slicing and MPS. UNKNOWN is a GPU whose state cannot be read back (a MIG config the planner cannot resolve):
# it can be kept only with its whole node.
WHOLE = ("whole",)
UNKNOWN = ("unknown",)


def mig_gpu(layout):
    return ("mig", tuple(layout))


def shared_gpu(method, replicas, rename=False):
    return (method, replicas, bool(rename))


# One GPU node of a pool.
# - model: the catalog's GpuModel, or None (a GPU without MIG the catalog does not hold);
# - current: the per-GPU descriptors (a tuple, one per GPU);
# - supply: what it advertises now, {resource: count} (what keeping it serves);
# - running: {resource: count} of the GPU pods running on it (demand too: a node that changes moves them);
# - mig_allowed: MIG can be configured there (the model has MIG and the platform allows it);
# - mps_max: the most MPS replicas per GPU its control daemon accepts.
Node = namedtuple("Node", "name pool model current supply running mig_allowed mps_max")
Score = namedtuple("Score", "served moved changed free")


def gpu_supply(descriptor):
    """{resource: count} one GPU in this state advertises."""
    kind = descriptor[0]
    if kind == "whole":
        return {RESOURCE_GPU: 1}
    if kind == "mig":
        return dict((mig_resource_name(profile), count) for profile, count in descriptor[1])
    if kind in (TIME_SLICING, MPS):
        return {RESOURCE_GPU_SHARED if descriptor[2] else RESOURCE_GPU: descriptor[1]}
    return {}


def free_slices(model, descriptor):
    """Compute slices a MIG GPU leaves unpartitioned (0 for any other state)."""
    if descriptor[0] != "mig":
        return 0
    return model.compute_slices - sum(count * model.facts[profile]["slices"] for profile, count in descriptor[1])


def moves_pods(old, new):
    """Whether changing one GPU from ``old`` to ``new`` stops the node's GPU pods: mig-manager reconfigures only
    GPUs nothing runs on and the modules drain the node for it; the MPS control daemon restarts with its clients.
    Time-slicing replicas and whole GPUs change through a device-plugin restart, which running pods survive."""
    return old != new and (old[0] in ("mig", MPS, "unknown") or new[0] in ("mig", MPS))


def node_supply(descriptors):
    supply = {}
    for descriptor in descriptors:
        for resource, count in gpu_supply(descriptor).items():
            supply[resource] = supply.get(resource, 0) + count
    return supply


def pods_on(node):
    return sum(node.running.values())


def evaluate(node, descriptors):
    """(supply, moved, changed, free) of giving ``node`` the per-GPU ``descriptors`` (None: keep it)."""
    if descriptors is None:
        return dict(node.supply), 0, 0, sum(free_slices(node.model, d) for d in node.current if d[0] == "mig")
    changed = sum(1 for old, new in zip(node.current, descriptors) if old != new)
    moved = pods_on(node) if any(moves_pods(old, new) for old, new in zip(node.current, descriptors)) else 0
    free = sum(free_slices(node.model, d) for d in descriptors)
    return node_supply(descriptors), moved, changed, free


def pool_supply(nodes, choices):
    """{resource: count} the nodes advertise once given ``choices`` (one per node, None: kept as it is)."""
    supply = {}
    for node, descriptors in zip(nodes, choices):
        for resource, count in evaluate(node, descriptors)[0].items():
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
    for node, descriptors in zip(nodes, choices):
        _gives, node_moved, node_changed, node_free = evaluate(node, descriptors)
        moved, changed, free = moved + node_moved, changed + node_changed, free + node_free
    served = sum(min(count, supply.get(resource, 0)) for resource, count in demand.items())
    return Score(served, moved, changed, free)


def sharing_methods(node, method):
    """The sharing methods a node may take: the one asked for new sharing, and the one it already uses."""
    methods = [method]
    for descriptor in node.current:
        if descriptor[0] in (TIME_SLICING, MPS) and descriptor[0] not in methods:
            methods.append(descriptor[0])
    return methods


def useful_mig_layouts(model, demand):
    """The layouts worth planning for a GPU: those made only of demanded profiles. A layout with another profile serves
    no more than the same layout without it (which NVIDIA's rules accept too: removing an instance never breaks a
    placement) and leaves fewer slices free."""
    layouts = []
    for layout in gpu_layouts(model):
        if layout and all(demand.get(mig_resource_name(profile)) for profile, _count in layout):
            layouts.append(mig_gpu(layout))
    return layouts
