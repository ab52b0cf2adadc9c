# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Finding the GPU Operator's install on a cluster: its ClusterPolicy, its namespace and its device-plugin DaemonSet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    DEVICE_PLUGIN_DAEMONSET,
    KNOWN_OPERATOR_NAMESPACES,
    select_cluster_policy,
)


class OperatorInstall(object):
    """The operator objects a module works with (``device_plugin_daemonset`` is None when the policy disables
    NVIDIA's device plugin, as with HAMi: the operator then deletes that DaemonSet)."""

    def __init__(self, policy, namespace, device_plugin_daemonset):
        self.policy = policy
        self.policy_name = policy["metadata"]["name"]
        self.namespace = namespace
        self.device_plugin_daemonset = device_plugin_daemonset


def find_operator(kube, cluster_policy=None, namespace=None, policies=None):
    """Find the ClusterPolicy and the namespace of its operands (the user may name either).

    The operator records where it runs in the policy's ``status.namespace``: that namespace is taken as it is,
    with or without the device plugin DaemonSet (which the operator deletes when ``spec.devicePlugin.enabled``
    is false). Without it, the namespace is the one of the platforms' defaults that holds the DaemonSet.
    ``policies`` are the ClusterPolicies when the caller listed them already.
    """
    policy = select_cluster_policy(kube.list_cluster_policies() if policies is None else policies, cluster_policy)
    status_namespace = (policy.get("status") or {}).get("namespace")
    if namespace:
        candidates = [namespace]
    elif status_namespace:
        candidates = [status_namespace]
    else:
        candidates = list(KNOWN_OPERATOR_NAMESPACES)
    for candidate in candidates:
        daemonset = kube.get_daemon_set(namespace=candidate, name=DEVICE_PLUGIN_DAEMONSET)
        if daemonset is not None or candidate == status_namespace:
            return OperatorInstall(policy, candidate, daemonset)
    if status_namespace:
        raise GpuShareError(
            "namespace %s is not where the GPU Operator runs: ClusterPolicy %s reports namespace %s "
            "(status.namespace), "
            "and the device plugin DaemonSet %s is not in %s. Leave namespace unset, or set it to %s."
            % (
                namespace,
                policy["metadata"]["name"],
                status_namespace,
                DEVICE_PLUGIN_DAEMONSET,
                namespace,
                status_namespace,
            )
        )
    raise GpuShareError(
        "The device plugin DaemonSet %s was not found in namespace(s) %s, and ClusterPolicy %s reports no namespace "
        "(status.namespace; the operator may not have reconciled it yet): set namespace to where the GPU Operator "
        "runs (and check spec.devicePlugin.enabled of ClusterPolicy %s)."
        % (DEVICE_PLUGIN_DAEMONSET, ", ".join(candidates), policy["metadata"]["name"], policy["metadata"]["name"])
    )
