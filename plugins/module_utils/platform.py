# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Finding the GPU Operator: its ClusterPolicy, its namespace and its device-plugin DaemonSet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError

# Helm installs (VKS, Scaleway, plain Kubernetes) and OpenShift's OLM install respectively.
KNOWN_CLUSTER_POLICY_NAMES = ("cluster-policy", "gpu-cluster-policy")
# Helm's default, OpenShift's, and Scaleway Kapsule's preinstalled operator.
KNOWN_OPERATOR_NAMESPACES = ("gpu-operator", "nvidia-gpu-operator", "kube-system")
DEVICE_PLUGIN_DAEMONSET = "nvidia-device-plugin-daemonset"
MPS_CONTROL_DAEMONSET = "nvidia-device-plugin-mps-control-daemon"
# The name NVIDIA's and OpenShift's time-slicing documentation use; one ConfigMap holds every
# device-plugin profile (time-slicing and MPS alike) because the policy can name only one.
DEFAULT_DEVICE_PLUGIN_CONFIG_MAP = "time-slicing-config"


def select_cluster_policy(policies, name=None):
    """The ClusterPolicy to work on: the one named, a known platform name, or the only one there is."""
    by_name = dict((policy["metadata"]["name"], policy) for policy in policies)
    if name:
        if name not in by_name:
            raise GpuShareError("ClusterPolicy %r not found; the cluster has: %s." % (name, ", ".join(sorted(by_name)) or "none"))
        return by_name[name]
    if not policies:
        raise GpuShareError("No NVIDIA GPU Operator ClusterPolicy (nvidia.com/v1) found: install the GPU Operator first.")
    if len(policies) == 1:
        return policies[0]
    known = [by_name[known_name] for known_name in KNOWN_CLUSTER_POLICY_NAMES if known_name in by_name]
    if len(known) == 1:
        return known[0]
    raise GpuShareError("Several ClusterPolicies found (%s): name one with cluster_policy." % ", ".join(sorted(by_name)))


def device_plugin_config_of(policy):
    """``spec.devicePlugin.config`` of a ClusterPolicy as ``(name, default)``, None where unset."""
    config = ((policy.get("spec") or {}).get("devicePlugin") or {}).get("config") or {}
    return config.get("name") or None, config.get("default") or None


class GpuPlatform(object):
    """The operator objects a module works with."""

    def __init__(self, policy, namespace, device_plugin_daemonset):
        self.policy = policy
        self.policy_name = policy["metadata"]["name"]
        self.namespace = namespace
        self.device_plugin_daemonset = device_plugin_daemonset


def detect_platform(kube, cluster_policy=None, namespace=None, policies=None):
    """Find the ClusterPolicy and the namespace of its operands (the user may name either).

    ``policies`` are the ClusterPolicies when the caller listed them already.
    """
    policy = select_cluster_policy(kube.list_cluster_policies() if policies is None else policies, cluster_policy)
    if namespace:
        candidates = [namespace]
    else:
        # The operator records where it runs in the policy's status; fall back to the platforms' defaults.
        status_namespace = (policy.get("status") or {}).get("namespace")
        candidates = ([status_namespace] if status_namespace else []) + [ns for ns in KNOWN_OPERATOR_NAMESPACES if ns != status_namespace]
    for candidate in candidates:
        daemonset = kube.get_daemon_set(namespace=candidate, name=DEVICE_PLUGIN_DAEMONSET)
        if daemonset is not None:
            return GpuPlatform(policy, candidate, daemonset)
    raise GpuShareError(
        "The device plugin DaemonSet %s was not found in namespace(s) %s: set namespace to where the GPU Operator runs "
        "(and check spec.devicePlugin.enabled of ClusterPolicy %s)." % (DEVICE_PLUGIN_DAEMONSET, ", ".join(candidates), policy["metadata"]["name"])
    )
