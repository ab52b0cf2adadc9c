# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What applies the capacity part of a plan (issue 40): the gpu_machineset arguments of every MachineSet that adds or
takes back nodes or whose template follows its nodes, the size of every node pool that is not a Kubernetes object
(Kapsule, VKS: set with the platform's own tools, docs/PLANNER.md), and the decisions, each with its reason, that the
playbook logs. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    machineset_key,
    machineset_node_labels,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.machineset import new_node_sharing as machineset_sharing
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.machineset import template_labels
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.apply import (
    new_node_sharing,
    node_mode,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import GpuKind
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.growth import (
    KIND_MACHINESET,
    OWNER_AUTOSCALER,
)

# How many nodes this plan may add: ``max_new_nodes`` asked, ``max_new_nodes_per_hour`` (None: none), the nodes the
# collection added to MachineSets in the last hour, and what that leaves (``allowed``).
NewNodeCap = namedtuple("NewNodeCap", "max_new_nodes max_new_nodes_per_hour added_last_hour allowed")


def new_node_cap(max_new_nodes, per_hour, added_last_hour):
    allowed = max_new_nodes if per_hour is None else min(max_new_nodes, max(0, per_hour - added_last_hour))
    return NewNodeCap(max_new_nodes, per_hour, added_last_hour, allowed)


def capacity_apply(growers, planned, scale_ins, following):
    """(apply.gpu_machineset, apply.node_pools): per MachineSet the replicas and the sharing of its new nodes, the
    replicas a scale-in leaves, or only the sharing its template follows (``following``); per node pool given its new
    size and the sharing its new nodes need (its labels)."""
    machinesets, node_pools = [], []
    for grower in growers:
        entry = planned.get(grower.name) or {}
        if grower.kind == KIND_MACHINESET:
            namespace, name = grower.name.split("/", 1)
            if grower.name in following:
                machinesets.append(dict(name=name, machine_api_namespace=namespace, sharing=following[grower.name]))
            if entry.get("new_nodes"):
                machinesets.append(
                    dict(
                        name=name,
                        machine_api_namespace=namespace,
                        replicas=grower.size + entry["new_nodes"],
                        sharing=entry["sharing"],
                    )
                )
            elif grower.name in scale_ins:
                machinesets.append(
                    dict(name=name, machine_api_namespace=namespace, replicas=scale_ins[grower.name]["size"])
                )
        elif entry.get("new_nodes"):
            node_pools.append(
                dict(
                    pool=grower.pool,
                    name=grower.name,
                    size=grower.size + entry["new_nodes"],
                    sharing=entry["sharing"],
                    labels=_node_labels(entry["sharing"]),
                )
            )
    return machinesets, node_pools


def templates_following_nodes(growers, machinesets, planned_states):
    """{grower name: sharing} of the MachineSets a MachineAutoscaler owns whose ready nodes all take one sharing once
    planned (``planned_states``: {node name: its GPUs' planned states}) that their template does not name yet. The
    autoscaler copies one of those nodes as its template when it scales, so the nodes it adds must boot into the same
    sharing: gpu_machineset sets the template's labels (never the replicas)."""
    by_name = dict(("%s/%s" % machineset_key(machineset), machineset) for machineset in machinesets)
    following = {}
    for grower in growers:
        if grower.kind != KIND_MACHINESET or grower.owner != OWNER_AUTOSCALER or grower.name not in by_name:
            continue
        states = [planned_states[name] for name in grower.ready_nodes if name in planned_states]
        if not states or any(node_mode(node_states).mode == GpuKind.UNKNOWN for node_states in states):
            continue
        sharings = [new_node_sharing(node_states) for node_states in states]
        if any(sharing != sharings[0] for sharing in sharings):
            continue
        wanted = template_labels(machineset_sharing(sharings[0]))
        current = machineset_node_labels(by_name[grower.name])
        if any(current.get(label) != value for label, value in wanted.items()):
            following[grower.name] = sharings[0]
    return following


def _node_labels(sharing):
    """The node labels that make the GPU Operator configure a new node in ``sharing`` (a gpu_machineset ``sharing``),
    for a node pool's labels: those gpu_machineset sets in a MachineSet's template."""
    labels = template_labels(machineset_sharing(sharing))
    return dict((label, value) for label, value in labels.items() if value is not None)


def _describe_sharing(sharing):
    if sharing["mode"] == "mig":
        return "MIG layout %s" % sharing["config_name"]
    if sharing.get("replicas"):
        return "%s x%d (%s)" % (sharing["mode"], sharing["replicas"], sharing["config_key"])
    return "whole GPUs"


def _why_no_node(pool, growers, cap):
    mine = [grower for grower in growers if grower.pool == pool]
    if not cap.allowed:
        if not cap.max_new_nodes:
            return "max_new_nodes is 0 (gpu_autoplan_max_new_nodes, sharing_plan_max_new_nodes)"
        return "the hourly cap is reached: %d node(s) added in the last hour, max_new_nodes_per_hour %d" % (
            cap.added_last_hour,
            cap.max_new_nodes_per_hour,
        )
    if not mine:
        return "the pool has no MachineSet or node pool to grow"
    if all(grower.owner == OWNER_AUTOSCALER for grower in mine):
        return "its size is the cluster autoscaler's (see capacity.pools.%s[].autoscaler_can_scale)" % (pool or '""')
    return "no node its MachineSets or node pools may add serves it within their limits (see capacity.pools.%s[])" % (
        pool or '""'
    )


def capacity_decisions(growers, planned, scale_ins, following, unserved, cap):
    """Each decision about nodes, with its reason: nodes added, nodes taken back, templates that follow their nodes,
    and why no node is added for what stays unserved (``unserved``: the answer's)."""
    decisions = []
    adding = set()
    for grower in growers:
        if grower.name in following:
            decisions.append(
                "%s %s: its template now names %s, as its nodes have once planned, so that the nodes the cluster "
                "autoscaler adds (it owns the replicas) boot into the layout it copies from them"
                % (grower.kind, grower.name, _describe_sharing(following[grower.name]))
            )
        entry = planned.get(grower.name) or {}
        if entry.get("new_nodes"):
            adding.add(grower.pool)
            decisions.append(
                "%s %s: add %d node(s), size %d -> %d, booting into %s: pool %s waits for what its nodes cannot "
                "serve, re-partitioned or not"
                % (
                    grower.kind,
                    grower.name,
                    entry["new_nodes"],
                    grower.size,
                    grower.size + entry["new_nodes"],
                    _describe_sharing(entry["sharing"]),
                    grower.pool or '""',
                )
            )
        if grower.name in scale_ins:
            shrink = scale_ins[grower.name]
            decisions.append(
                "%s %s: take back %d node(s) the collection added, size %d -> %d: %s run no GPU pod and nothing waits "
                "in pool %s"
                % (
                    grower.kind,
                    grower.name,
                    grower.size - shrink["size"],
                    grower.size,
                    shrink["size"],
                    ", ".join(shrink["nodes"]),
                    grower.pool or '""',
                )
            )
    waiting = {}
    for entry in unserved:
        waiting.setdefault(entry["pool"], []).append("%d x %s" % (entry["count"], entry["resource"]))
    for pool, resources in sorted(waiting.items(), key=lambda item: item[0] or ""):
        decisions.append(
            "pool %s: %s stay unserved%s: %s"
            % (
                pool or '""',
                ", ".join(resources),
                " beside the nodes added" if pool in adding else " and no node is added",
                _why_no_node(pool, growers, cap) if pool not in adding else "the limits above bind",
            )
        )
    return decisions
