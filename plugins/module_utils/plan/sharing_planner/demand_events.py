# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When demand is worth a plan: the gpu_demand event source's decisions (extensions/eda): which pods wait for a plan,
the GPU nodes by pool, the settle window that turns a burst of changes into one event, when a settled demand is worth
a plan, and the event's body. Pure: no I/O; the plugin hands in what its LISTs and watches see and the time. The pods
it counts are the planner's (nvidia/gpu_pods: pending, unschedulable, asking for planned resources)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import (
    is_unschedulable,
    pending_gpu_pods,
    planned_requests,
    pod_name,
    scheduler_reason,
)

# The kinds of objects the source follows, as the plugin names its watches.
PODS = "pods"
NODES = "nodes"

# The pool an event names where a pod names none (any pool may serve it) and where a node has no pool label (all of
# them without a pool label): "*", which no pool can be called (a label value is empty or starts and ends with a
# letter or digit). Never the empty string, the planner's word for it: ansible-rulebook 1.3.2 reads every event it
# handed to the rule engine with dpath, which refuses an empty key, and its event reader then ends without a word
# (issue 37). Every key of an event is a pool, a resource, or a field name.
ANY_POOL = "*"


def pool_of(labels_or_selector, pool_label):
    """The pool a node's labels (or a pod's nodeSelector) name; ANY_POOL without a pool label or without that label:
    for a pod, any pool may serve it and gpu_sharing_plan chooses one."""
    return (labels_or_selector or {}).get(pool_label) or ANY_POOL if pool_label else ANY_POOL


def pool_words(pool):
    """``pool gpu-h100``, or ``any pool``, for the log."""
    return "any pool" if pool == ANY_POOL else "pool %s" % pool


def waiting_pod(pod, pool_label):
    """What the event says of a waiting pod, or None when the pod waits for no plan: it is bound, finished, asks for
    no planned resource (``nvidia.com/gpu``, ``nvidia.com/gpu.shared``, ``nvidia.com/mig-*``), or the scheduler has not
    found it unschedulable."""
    if not pending_gpu_pods([pod]) or not is_unschedulable(pod):
        return None
    metadata = pod["metadata"]
    return dict(
        namespace=metadata["namespace"],
        name=metadata["name"],
        pool=pool_of((pod.get("spec") or {}).get("nodeSelector"), pool_label),
        requests=planned_requests(pod),
        reason=scheduler_reason(pod),
    )


def demand_of(waiting):
    """``{pool: {resource: count}}`` of the waiting pods."""
    demand = {}
    for pod in waiting:
        pool = demand.setdefault(pod["pool"], {})
        for resource, count in pod["requests"].items():
            pool[resource] = pool.get(resource, 0) + count
    return demand


def describe_demand(demand):
    """``pool gpu-h100: 3 nvidia.com/mig-1g.10gb; any pool: 1 nvidia.com/gpu`` for the log."""
    return "; ".join(
        "%s: %s"
        % (
            pool_words(pool),
            ", ".join("%d %s" % (count, resource) for resource, count in sorted(demand[pool].items())),
        )
        for pool in sorted(demand)
    )


def grown(demand, mark):
    """``[(pool, resource, before, now)]`` where more is waiting than ``mark`` holds."""
    return [
        (pool, resource, mark.get(pool, {}).get(resource, 0), count)
        for pool, resources in sorted(demand.items())
        for resource, count in sorted(resources.items())
        if count > mark.get(pool, {}).get(resource, 0)
    ]


def lowered(mark, demand):
    """``mark`` lowered to what still waits: pods served since the last event make room for new ones."""
    lower = {}
    for pool, resources in mark.items():
        for resource, count in resources.items():
            left = min(count, demand.get(pool, {}).get(resource, 0))
            if left:
                lower.setdefault(pool, {})[resource] = left
    return lower


class SettleWindow(object):
    """Groups a burst of changes: due ``settle`` seconds after the last change, or ``longest`` seconds after the
    first one, so that a steady trickle of changes still gives an event."""

    def __init__(self, settle, longest):
        self.settle = settle
        self.longest = longest
        self.first = self.last = None

    def change(self, now):
        if self.first is None:
            self.first = now
        self.last = now

    def due_at(self):
        """When the window closes; None while no change is pending."""
        if self.first is None:
            return None
        return min(self.last + self.settle, self.first + self.longest)

    def close(self):
        self.first = self.last = None


class DemandEvents(object):
    """The source's state: the waiting pods and the GPU nodes (by pool) as the watches show them, and the events
    their settled demand gives.

    An event is given when a settled demand holds more pods for some pool and resource than the last event did
    (``mark``), or when the GPU nodes (names and pools: nodes joining, leaving or changing pool, never a node's
    sharing state, which a plan itself changes) differ from those of the last event while pods wait. A demand that
    shrinks (pods served, deleted) lowers the mark without an event, so the same pods waiting again later give one;
    a demand that stays as it was after a plan, unservable, gives none. No event comes sooner than ``cool_down``
    seconds after the last: one that becomes due earlier waits for its end, with the demand as it is then.
    """

    def __init__(self, pool_label, settle, longest, cool_down):
        self.pool_label = pool_label
        self.window = SettleWindow(settle, longest)
        self.cool_down = cool_down
        self.pods = {}
        self.nodes = {}
        self.mark = {}
        self.marked_nodes = None
        self.last_event_at = None
        self.why_not = None

    # --- what the watches see ------------------------------------------------------------------------------------
    def listed(self, kind, items, now):
        """A LIST of ``kind`` (PODS: the unscheduled pods; NODES: the GPU nodes) replaced what was known of it."""
        before = self._state()
        if kind == PODS:
            self.pods = {}
            for pod in items:
                self._see_pod(pod)
        else:
            self.nodes = dict((node["metadata"]["name"], self._node_pool(node)) for node in items)
        self._changed(before, now)

    def watched(self, kind, event_type, obj, now):
        """A watch event (ADDED, MODIFIED, DELETED) of ``kind``; DELETED also when an object left the selection."""
        before = self._state()
        if kind == PODS:
            if event_type == "DELETED":
                self.pods.pop(pod_name(obj), None)
            else:
                self._see_pod(obj)
        elif event_type == "DELETED":
            self.nodes.pop(obj["metadata"]["name"], None)
        else:
            self.nodes[obj["metadata"]["name"]] = self._node_pool(obj)
        self._changed(before, now)

    def _see_pod(self, pod):
        waiting = waiting_pod(pod, self.pool_label)
        if waiting:
            self.pods[pod_name(pod)] = waiting
        else:
            self.pods.pop(pod_name(pod), None)

    def _node_pool(self, node):
        return pool_of(node["metadata"].get("labels"), self.pool_label)

    def _state(self):
        return demand_of(self.pods.values()), self.gpu_nodes()

    def _changed(self, before, now):
        # Only a change of what an event would carry opens or extends the window: node heartbeats and a pod's own
        # status updates while it waits do not.
        if self._state() != before:
            self.window.change(now)

    def gpu_nodes(self):
        """``{pool: [node names]}``."""
        pools = {}
        for name, pool in sorted(self.nodes.items()):
            pools.setdefault(pool, []).append(name)
        return pools

    # --- events --------------------------------------------------------------------------------------------------
    def due_at(self):
        """When ``take`` may give an event (the window's end, or the cool-down's); None while nothing is pending."""
        due = self.window.due_at()
        if due is None or self.last_event_at is None:
            return due
        return max(due, self.last_event_at + self.cool_down)

    def take(self, now):
        """The event's body once due and worth a plan; None otherwise, ``why_not`` then saying why (None while the
        window or the cool-down still runs)."""
        self.why_not = None
        due = self.due_at()
        if due is None or now < due:
            return None
        self.window.close()
        demand, nodes = self._state()
        reasons = [
            "%s waiting for %s: %d, was %d" % (resource, pool_words(pool), now_, before)
            for pool, resource, before, now_ in grown(demand, self.mark)
        ]
        if demand and self.marked_nodes is not None and nodes != self.marked_nodes:
            reasons.append("the GPU nodes changed")
        if not reasons:
            self.mark = lowered(self.mark, demand)
            self.marked_nodes = nodes
            self.why_not = (
                "no event: the demand (%s) holds nothing the last event did not" % describe_demand(demand)
                if demand
                else "no event: no pod waits for planned GPU resources"
            )
            return None
        self.mark, self.marked_nodes, self.last_event_at = demand, nodes, now
        return event_body(self.pool_label, demand, sorted(self.pods.values(), key=_by_name), nodes, reasons)


def _by_name(pod):
    return pod["namespace"], pod["name"]


def event_body(pool_label, demand, pods, nodes, reasons):
    """The event: ``gpu_demand`` with the pool label, the demand per pool and resource, the waiting pods, the GPU
    nodes per pool, why it was given, and a fingerprint of all but the reason: the rulebook's throttle groups by it,
    so the same pods waiting on the same nodes are not planned twice within its window (a restarted source gives
    their event again), while other pods with the same requests are."""
    waiting = [pod_name(pod) for pod in pods]
    fingerprint = hashlib.sha256(json.dumps([pool_label, demand, waiting, nodes], sort_keys=True).encode()).hexdigest()[
        :16
    ]
    return dict(
        gpu_demand=dict(
            pool_label=pool_label,
            demand=demand,
            pods=pods,
            gpu_nodes=nodes,
            reason="; ".join(reasons),
            fingerprint=fingerprint,
        )
    )
