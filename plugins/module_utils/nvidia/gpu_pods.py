# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU pods: the pods that request NVIDIA resources, and how to name them in messages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import RESOURCE_PREFIX


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


def is_active_gpu_pod(pod):
    """A pod bound to a node, not finished, that requests an NVIDIA resource."""
    phase = (pod.get("status") or {}).get("phase")
    return (
        bool((pod.get("spec") or {}).get("nodeName"))
        and phase not in ("Succeeded", "Failed")
        and bool(gpu_requests(pod))
    )


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
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
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
    return ["%s/%s" % (pod["namespace"], pod["name"]) for pod in pods]


def describe_pods_by_node(pods_by_node):
    """``node: ns/pod, ns/pod; node: ...`` for error messages."""
    return "; ".join("%s: %s" % (node, ", ".join(pod_names(pods))) for node, pods in sorted(pods_by_node.items()))
