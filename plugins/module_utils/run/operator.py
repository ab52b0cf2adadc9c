# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Finding the GPU Operator's install on a cluster: its ClusterPolicy, its namespace and its device-plugin DaemonSet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    DEVICE_PLUGIN_DAEMONSET,
    operator_namespace,
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
    """Find the ClusterPolicy and the namespace of its operands (the user may name either; the rule:
    ``nvidia/cluster_policy.operator_namespace``). ``policies`` are the ClusterPolicies when the caller listed them
    already."""
    policy = select_cluster_policy(kube.list_cluster_policies() if policies is None else policies, cluster_policy)
    found, daemonset = operator_namespace(
        policy, namespace, lambda candidate: kube.get_daemon_set(namespace=candidate, name=DEVICE_PLUGIN_DAEMONSET)
    )
    return OperatorInstall(policy, found, daemonset)
