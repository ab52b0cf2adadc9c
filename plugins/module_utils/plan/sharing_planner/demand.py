# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The demand gpu_sharing_plan plans for, per pool: the pods running on the selected nodes, the pods waiting (their pool
from their nodeSelector, else the one with the most room) and the given requests (a memory and compute size becomes
the smallest MIG profile of the pool's model that holds it). Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    RESOURCE_GPU,
    mig_resource_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIB_PER_GIB
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import (
    FINISHED_PHASES,
    pending_gpu_pods,
    planned_requests,
    pod_name,
    scheduler_reason,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_profile import parse_mig_profile
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.supply import pool_models

# The pods bound to the selected nodes: per node what they hold ({node: {resource: count}}) and the pods themselves
# ({node: [Requester]}).
Running = namedtuple("Running", "held pods")
# Something that asks for planned resources: a pod (``namespace/name``) or a given request (``requests[n]``), and
# what it asks for ({resource: count}).
Requester = namedtuple("Requester", "name requests")
# What a given request asks for: its resource, and why no GPU of its pool can serve it (None: some can).
Resolved = namedtuple("Resolved", "resource impossible")
# The demand: the pending pods as the answer lists them (dicts); per pool the waiting demand ({resource: count}) and
# who waits ([Requester]: pending pods, then the given requests); and the given requests no GPU of their pool can
# hold, as the answer's unserved entries.
Demand = namedtuple("Demand", "pending_pods waiting requesters unservable")


def running_by_node(pods, node_names):
    """The ``Running`` pods of ``pods`` bound to ``node_names`` that hold planned resources."""
    held, by_node = {}, {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in node_names or (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
            continue
        requests = planned_requests(pod)
        if not requests:
            continue
        counts = held.setdefault(node, {})
        for resource, count in requests.items():
            counts[resource] = counts.get(resource, 0) + count
        by_node.setdefault(node, []).append(Requester(pod_name(pod), requests))
    return Running(held, by_node)


def smallest_profile(model, memory_gib, compute_share):
    """The smallest MIG profile of ``model`` with at least ``memory_gib`` of memory and ``compute_share`` of the
    GPU's compute slices (no media extension or graphics attribute), or None."""
    fitting = []
    for profile, facts in model.facts.items():
        if parse_mig_profile(profile).suffix:
            continue
        if facts["memory_mib"] >= memory_gib * MIB_PER_GIB and facts["slices"] >= compute_share * model.compute_slices:
            fitting.append((facts["slices"], facts["memory_mib"], profile))
    return min(fitting)[2] if fitting else None


def request_resource(request, models, largest_mib):
    """The ``Resolved`` resource of a given request (a ``GivenRequest``): as given, a profile's resource, or for memory
    and a compute share the smallest MIG profile that holds it on the pool's models; else nvidia.com/gpu where some GPU
    of the pool (``largest_mib``: the most memory one has, 0 unknown) holds the memory."""
    if request.resource:
        return Resolved(request.resource, None)
    if request.profile:
        return Resolved(mig_resource_name(request.profile), None)
    memory, share = request.memory_gib or 0, request.compute_share or 0
    for model in models:
        profile = smallest_profile(model, memory, share)
        if profile:
            return Resolved(mig_resource_name(profile), None)
    if largest_mib and memory * MIB_PER_GIB > largest_mib:
        return Resolved(
            RESOURCE_GPU,
            "it asks for %g GiB of GPU memory, and the largest GPU of the pool has %.1f GiB"
            % (memory, largest_mib / float(MIB_PER_GIB)),
        )
    return Resolved(RESOURCE_GPU, None)


def _named_pool(pod, pool_label):
    """The pool a pod's nodeSelector names, or None."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return selector.get(pool_label) if pool_label else None


def _pool_of_pod(pod, pool_label, pools, spare):
    """The pool a pending pod waits for: the one its nodeSelector names, else the only one, else the one with the most
    room for what it requests (its scheduler could place it in any); None when no pool has a node and it names none."""
    named = _named_pool(pod, pool_label)
    if named is not None or not pools:
        return named
    if len(pools) == 1:
        return next(iter(pools))
    requests = planned_requests(pod)
    return max(sorted(pools), key=lambda pool: sum(min(n, spare[pool].get(r, 0)) for r, n in requests.items()))


def read_demand(pods, supply, settings, growing=()):
    """The ``Demand`` of the pending ``pods`` and the settings' given requests on ``supply`` (supply.Supply).
    ``growing``: pools no selected node is in that may add nodes (a MachineSet at zero): the pods whose nodeSelector
    names one wait there."""
    pools = supply.pools
    names = list(pools) + [pool for pool in growing if pool not in pools]
    waiting = dict((pool, {}) for pool in names)
    requesters = dict((pool, []) for pool in names)
    spare = dict((pool, {}) for pool in names)
    for pool, nodes in pools.items():
        for node in nodes:
            for resource, count in node.supply.items():
                spare[pool][resource] = spare[pool].get(resource, 0) + count - node.running.get(resource, 0)

    def add(pool, requester):
        requesters[pool].append(requester)
        for resource, count in requester.requests.items():
            waiting[pool][resource] = waiting[pool].get(resource, 0) + count
            spare[pool][resource] = spare[pool].get(resource, 0) - count

    pending_pods, unservable = [], []
    for pod in pending_gpu_pods(pods) if settings.read_pods else []:
        requests = planned_requests(pod)
        pool = _pool_of_pod(pod, settings.pool_label, pools, spare)
        metadata = pod["metadata"]
        pending_pods.append(
            dict(
                namespace=metadata["namespace"],
                name=metadata["name"],
                pool=pool,
                requests=requests,
                reason=scheduler_reason(pod),
            )
        )
        if pool in waiting:
            add(pool, Requester(pod_name(pod), requests))
    for number, request in enumerate(settings.requests, 1):
        pool = _pool_of_request(number, request, pools)
        resolved = request_resource(request, pool_models(pools[pool]), supply.memory[pool])
        if resolved.impossible:
            reason = "no GPU of %s can serve requests[%d]: %s" % (
                "pool %s" % pool if pool else "the selected nodes",
                number,
                resolved.impossible,
            )
            unservable.append(dict(pool=pool, resource=resolved.resource, count=request.count, reason=reason))
        else:
            add(pool, Requester("requests[%d]" % number, {resolved.resource: request.count}))
    return Demand(pending_pods, waiting, requesters, unservable)


def _pool_of_request(number, request, pools):
    """The pool of the given request ``requests[number]``: the one it names, else the only one."""
    pool = request.pool
    if pool is None:
        if len(pools) != 1:
            raise GpuShareError(
                "requests[%d] names no pool, and the selected nodes form %d pools (%s): give its pool"
                % (number, len(pools), ", ".join(sorted(pools)) or "none")
            )
        pool = next(iter(pools))
    if pool not in pools:
        raise GpuShareError(
            "requests[%d]: pool %s has no selected GPU node (pools: %s)"
            % (number, pool, ", ".join(sorted(p for p in pools if p)) or "none")
        )
    return pool
