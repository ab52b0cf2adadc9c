# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU-pod safety shared by every runner: refuse while GPU pods run, or drain (cordon, evict, wait, uncordon)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import NOT_FOUND, TOO_MANY_REQUESTS, GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_pods_gone
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import (
    describe_pods_by_node,
    gpu_pods_on,
    pod_names,
)

# Kubernetes serves policy/v1 Evictions from 1.22 on; older servers (1.20, 1.21) only policy/v1beta1.
EVICTION_API_VERSIONS = ("policy/v1", "policy/v1beta1")
NOT_SERVED = (400, 404, 415)


def evict(kube, namespace, name):
    """Evict one pod through the Eviction API (policy/v1, else the policy/v1beta1 older servers serve)."""
    for version in EVICTION_API_VERSIONS:
        try:
            kube.evict_pod(namespace=namespace, name=name, policy_api_version=version)
            return
        except GpuShareError as exc:
            if exc.status == TOO_MANY_REQUESTS:
                raise GpuShareError(
                    "Pod %s/%s cannot be evicted: a PodDisruptionBudget allows no disruption now (%s). Scale its workload up, "
                    "relax the budget or stop the pod yourself, then run again." % (namespace, name, exc.msg),
                    status=exc.status,
                    reason=exc.reason,
                )
            if exc.status not in NOT_SERVED:
                raise
            if exc.status == NOT_FOUND and version == EVICTION_API_VERSIONS[-1]:
                return  # the pod is already gone


def set_unschedulable(kube, names, unschedulable):
    for name in names:
        kube.patch_node(name=name, patch={"spec": {"unschedulable": True if unschedulable else None}})


def drain_nodes(kube, names, timeout):
    """Cordon the schedulable nodes of ``names``, evict their GPU pods, wait until they are gone.

    Returns (cordoned node names, evicted pods by node). On failure the nodes cordoned here are
    uncordoned again (nothing else was changed yet) and the error says which pods were evicted.
    """
    nodes = dict((node["metadata"]["name"], node) for node in kube.list_nodes()[0] if node["metadata"]["name"] in names)
    cordoned = sorted(name for name in names if not (nodes[name].get("spec") or {}).get("unschedulable"))
    set_unschedulable(kube, cordoned, True)
    evicted = {}
    try:
        # Listed after cordoning, so no GPU pod scheduled in between is missed.
        for name, pods in sorted(gpu_pods_on(kube.list_pods(), names).items()):
            for pod in pods:
                evict(kube, pod["namespace"], pod["name"])
                evicted.setdefault(name, []).append(pod)
        for name, pods in sorted(evicted.items()):
            wait_for_pods_gone(
                kube, name, pod_names(pods), timeout, "the evicted GPU pods of node %s to be gone" % name
            )
    except GpuShareError as exc:
        set_unschedulable(kube, cordoned, False)
        done = " Already evicted: %s." % describe_pods_by_node(evicted) if evicted else ""
        raise GpuShareError(
            "Draining for the MIG change failed, nothing was changed and node(s) %s are schedulable again: %s%s"
            % (", ".join(sorted(names)), exc.msg, done),
            status=exc.status,
            reason=exc.reason,
        )
    return cordoned, evicted


def refuse_while_gpu_pods_run(pods, node_names, drain, force):
    """Refuse while GPU pods run on the nodes, unless the user chose to drain or to force."""
    running = gpu_pods_on(pods, node_names)
    if running and not (drain or force):
        raise GpuShareError(
            "GPU pods are running on the nodes to reset (%s). Stop them, or set drain=true to evict them "
            "(cordon, evict, uncordon after), or force=true to reset under them." % describe_pods_by_node(running)
        )
    return running
