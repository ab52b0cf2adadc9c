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
    """The operator objects a module works with."""

    def __init__(self, policy, namespace, device_plugin_daemonset):
        self.policy = policy
        self.policy_name = policy["metadata"]["name"]
        self.namespace = namespace
        self.device_plugin_daemonset = device_plugin_daemonset


def find_operator(kube, cluster_policy=None, namespace=None, policies=None):
    """Find the ClusterPolicy and the namespace of its operands (the user may name either).

    ``policies`` are the ClusterPolicies when the caller listed them already.
    """
    policy = select_cluster_policy(kube.list_cluster_policies() if policies is None else policies, cluster_policy)
    if namespace:
        candidates = [namespace]
    else:
        # The operator records where it runs in the policy's status; fall back to the platforms' defaults.
        status_namespace = (policy.get("status") or {}).get("namespace")
        candidates = ([status_namespace] if status_namespace else []) + [
            ns for ns in KNOWN_OPERATOR_NAMESPACES if ns != status_namespace
        ]
    for candidate in candidates:
        daemonset = kube.get_daemon_set(namespace=candidate, name=DEVICE_PLUGIN_DAEMONSET)
        if daemonset is not None:
            return OperatorInstall(policy, candidate, daemonset)
    raise GpuShareError(
        "The device plugin DaemonSet %s was not found in namespace(s) %s: set namespace to where the GPU Operator runs "
        "(and check spec.devicePlugin.enabled of ClusterPolicy %s)."
        % (DEVICE_PLUGIN_DAEMONSET, ", ".join(candidates), policy["metadata"]["name"])
    )
