# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU pods: the pods that request NVIDIA resources, the ones waiting for the resources gpu_sharing_plan places (what
the planner and the gpu_demand event source count alike), what the scheduler said of them, and how to name them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_RESOURCE_PREFIX,
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
    RESOURCE_PREFIX,
)

# The resources gpu_sharing_plan places: whole or shared GPUs, renamed shared ones, and MIG instances (any profile).
PLANNED_RESOURCES = (RESOURCE_GPU, RESOURCE_GPU_SHARED)
FINISHED_PHASES = ("Succeeded", "Failed")


def pod_name(pod):
    """``namespace/name``: the one way a pod is named in messages, answers and events. ``pod`` is an API pod (its
    ``metadata``) or this module's summary of one (``namespace`` and ``name``, as ``gpu_pods_by_node`` gives)."""
    fields = pod.get("metadata") or pod
    return "%s/%s" % (fields["namespace"], fields["name"])


def gpu_requests(pod):
    """``{resource: amount}`` of the ``nvidia.com/*`` resources a pod's containers request."""
    totals = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        # Extended resources default their request to the limit, and must equal it when both are set.
        amounts = dict(resources.get("limits") or {})
        amounts.update(resources.get("requests") or {})
        for name, amount in amounts.items():
            if name.startswith(RESOURCE_PREFIX):
                try:
                    totals[name] = totals.get(name, 0) + int(amount)
                except (TypeError, ValueError):
                    continue
    return totals


def is_planned_resource(resource):
    return resource in PLANNED_RESOURCES or resource.startswith(MIG_RESOURCE_PREFIX)


def planned_requests(pod):
    """{resource: count} of what a pod requests that gpu_sharing_plan places."""
    return dict((r, n) for r, n in gpu_requests(pod).items() if is_planned_resource(r) and n > 0)


def pending_gpu_pods(pods):
    """Pods no node holds yet that request planned resources."""
    pending = []
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or (pod.get("status") or {}).get("phase") not in (None, "Pending"):
            continue
        if planned_requests(pod):
            pending.append(pod)
    return pending


def _not_scheduled(pod):
    """The pod's PodScheduled condition when it is False (the scheduler tried and placed it nowhere), else None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition
    return None


def scheduler_reason(pod):
    """The scheduler's message for a pending pod ("0/3 nodes are available: 3 Insufficient ..."), or None."""
    condition = _not_scheduled(pod)
    return condition and (condition.get("message") or condition.get("reason"))


def is_unschedulable(pod):
    """The scheduler tried and found no node for the pod: a pod it has not tried yet may well fit, and is no demand."""
    condition = _not_scheduled(pod)
    return bool(condition) and condition.get("reason") == "Unschedulable"


def is_active_gpu_pod(pod):
    """A pod bound to a node, not finished, that requests an NVIDIA resource."""
    phase = (pod.get("status") or {}).get("phase")
    return bool((pod.get("spec") or {}).get("nodeName")) and phase not in FINISHED_PHASES and bool(gpu_requests(pod))


def workload_pods_selector(operator_namespace):
    """The field selector of the pods that can be GPU workloads: not finished, and outside the GPU Operator's
    namespace, whose pods are its operands (one each per GPU node) and its validators; on a 1,000-node fleet
    that leaves out about six pods in seven."""
    selector = "status.phase!=Succeeded,status.phase!=Failed"
    return "metadata.namespace!=%s,%s" % (operator_namespace, selector) if operator_namespace else selector


def workload_pods(pods, operator_namespace):
    """The pods of ``pods`` that ``workload_pods_selector(operator_namespace)`` would have listed."""
    return [
        pod
        for pod in pods
        if (pod.get("status") or {}).get("phase") not in FINISHED_PHASES
        and not (operator_namespace and pod["metadata"].get("namespace") == operator_namespace)
    ]


def gpu_pods_by_node(pods):
    by_node = {}
    for pod in pods:
        if is_active_gpu_pod(pod):
            by_node.setdefault(pod["spec"]["nodeName"], []).append(
                dict(
                    namespace=pod["metadata"]["namespace"],
                    name=pod["metadata"]["name"],
                    phase=(pod.get("status") or {}).get("phase"),
                    requests=gpu_requests(pod),
                )
            )
    return by_node


def gpu_pods_on(pods, node_names):
    """The active GPU pods bound to ``node_names``, by node (only nodes that have some)."""
    by_node = gpu_pods_by_node(pods)
    return dict((name, by_node[name]) for name in sorted(node_names) if name in by_node)


def pod_names(pods):
    return [pod_name(pod) for pod in pods]


def describe_pods_by_node(pods_by_node):
    """``node: ns/pod, ns/pod; node: ...`` for error messages."""
    return "; ".join("%s: %s" % (node, ", ".join(pod_names(pods))) for node, pods in sorted(pods_by_node.items()))
