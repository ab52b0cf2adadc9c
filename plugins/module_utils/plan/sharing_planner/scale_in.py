# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which nodes the plan takes back (issue 40, point 5; docs/PLANNER.md, "Taking nodes back"). Only from a MachineSet
the plan owns (no MachineAutoscaler: where one targets the set, the cluster autoscaler's own scale-down removes its
unneeded nodes), never more than the collection added to it and has not removed (its ``gpushare.k8s/added-nodes``
record), and only nodes that run no GPU pod, have been in the cluster ``scale_in_after`` seconds or more, and that the
plan changes none of, in a pool where nothing waits. gpu_machineset then lowers the replicas, marking the Machines of
idle nodes for deletion and refusing a node that runs a GPU pod by then. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import machineset_key
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.capacity_records import added_nodes, parse_time
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.growth import (
    KIND_MACHINESET,
    OWNER_PLAN,
)


def _joined_long_enough(node, settings):
    """Whether ``node`` joined ``settings.scale_in_after`` seconds or more before ``settings.now``."""
    joined = parse_time((node.get("metadata") or {}).get("creationTimestamp"))
    return joined is not None and settings.now - joined >= settings.scale_in_after


def scale_in(sources, growers, settings, waiting, busy, changing):
    """{grower name: {"nodes": [the idle nodes to remove], "size": the size to set}} of the MachineSets the plan owns
    that hold nodes it added and no longer needs. ``sources``: growth.CapacitySources; ``waiting``: {pool: {resource:
    count}} of what waits; ``busy``: the nodes running GPU pods; ``changing``: the nodes the plan changes."""
    machinesets = dict(("%s/%s" % machineset_key(ms), ms) for ms in sources.machinesets)
    nodes = dict(((node.get("metadata") or {}).get("name"), node) for node in sources.nodes)
    proposals = {}
    for grower in growers:
        if grower.kind != KIND_MACHINESET or grower.owner != OWNER_PLAN or grower.name not in machinesets:
            continue
        if any((waiting.get(grower.pool) or {}).values()):
            continue
        added = added_nodes(machinesets[grower.name])
        idle = [
            name
            for name in grower.ready_nodes
            if name in nodes
            and name not in busy
            and name not in changing
            and _joined_long_enough(nodes[name], settings)
        ]
        count = min(added, len(idle), grower.size - grower.min_size)
        if count > 0:
            proposals[grower.name] = dict(nodes=sorted(idle)[:count], size=grower.size - count)
    return proposals
