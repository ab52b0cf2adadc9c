# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's ClusterPolicy: the fields we read and write, its names and its operands' names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_STRATEGY_MIXED,
    MIG_STRATEGY_SINGLE,
)

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
            raise GpuShareError(
                "cluster_policy: ClusterPolicy %r not found; the cluster has: %s. Set cluster_policy to one of them, "
                "or leave it unset to use the only one." % (name, ", ".join(sorted(by_name)) or "none")
            )
        return by_name[name]
    if not policies:
        raise GpuShareError(
            "No NVIDIA GPU Operator ClusterPolicy (nvidia.com/v1) found: install the GPU Operator first."
        )
    if len(policies) == 1:
        return policies[0]
    known = [by_name[known_name] for known_name in KNOWN_CLUSTER_POLICY_NAMES if known_name in by_name]
    if len(known) == 1:
        return known[0]
    raise GpuShareError(
        "Several ClusterPolicies found (%s): name one with cluster_policy." % ", ".join(sorted(by_name))
    )


def operator_namespace(policy, namespace, daemonset_in):
    """Where the policy's operands run and the device plugin DaemonSet there (None when it is not), as a pair.

    The operator records where it runs in the policy's ``status.namespace``: that namespace is taken as it is, with or
    without the device plugin DaemonSet (which the operator deletes when ``spec.devicePlugin.enabled`` is false).
    Without it, the namespace is the one of the platforms' defaults that holds the DaemonSet. ``namespace`` is the
    user's, which wins where the DaemonSet is. ``daemonset_in(namespace)`` answers the DaemonSet of a namespace, or
    None; it is asked for one candidate after the other, no further than the first that settles it.
    """
    status_namespace = (policy.get("status") or {}).get("namespace")
    if namespace:
        candidates = [namespace]
    elif status_namespace:
        candidates = [status_namespace]
    else:
        candidates = list(KNOWN_OPERATOR_NAMESPACES)
    for candidate in candidates:
        daemonset = daemonset_in(candidate)
        if daemonset is not None or candidate == status_namespace:
            return candidate, daemonset
    policy_name = policy["metadata"]["name"]
    if status_namespace:
        raise GpuShareError(
            "namespace %s is not where the GPU Operator runs: ClusterPolicy %s reports namespace %s "
            "(status.namespace), and the device plugin DaemonSet %s is not in %s. Leave namespace unset, or set it to "
            "%s." % (namespace, policy_name, status_namespace, DEVICE_PLUGIN_DAEMONSET, namespace, status_namespace)
        )
    raise GpuShareError(
        "The device plugin DaemonSet %s was not found in namespace(s) %s, and ClusterPolicy %s reports no namespace "
        "(status.namespace; the operator may not have reconciled it yet): set namespace to where the GPU Operator "
        "runs (and check spec.devicePlugin.enabled of ClusterPolicy %s)."
        % (DEVICE_PLUGIN_DAEMONSET, ", ".join(candidates), policy_name, policy_name)
    )


def device_plugin_config_of(policy):
    """``spec.devicePlugin.config`` of a ClusterPolicy as ``(name, default)``, None where unset."""
    config = ((policy.get("spec") or {}).get("devicePlugin") or {}).get("config") or {}
    return config.get("name") or None, config.get("default") or None


POLICY_DEVICE_PLUGIN_FIELD = "devicePlugin.config"

# The ConfigMap the operator ships and names by default in spec.migManager.config.name.
DEFAULT_MIG_CONFIG_MAP = "default-mig-parted-config"
# Where this collection writes custom layouts (a copy of the shipped configs plus them) unless told otherwise.
CUSTOM_MIG_CONFIG_MAP = "custom-mig-parted-config"

# The operator's default when spec.mig.strategy is unset.
DEFAULT_MIG_STRATEGY = MIG_STRATEGY_SINGLE
POLICY_MIG_STRATEGIES = (MIG_STRATEGY_SINGLE, MIG_STRATEGY_MIXED)
POLICY_STRATEGY_FIELD = "mig.strategy"
POLICY_MIG_MANAGER_FIELD = "migManager.config"


def mig_manager_config_of(policy):
    """``spec.migManager.config`` of a ClusterPolicy (dict, possibly empty)."""
    return dict(((policy.get("spec") or {}).get("migManager") or {}).get("config") or {})


def mig_manager_config_map(policy):
    """The ConfigMap mig-manager reads: the policy's ``spec.migManager.config.name`` or the shipped one."""
    return mig_manager_config_of(policy).get("name") or DEFAULT_MIG_CONFIG_MAP


def mig_manager_reboots(policy):
    """Whether mig-manager may reboot a node: ``WITH_REBOOT=true`` in ``spec.migManager.env``, which it reads to reboot
    a node whose MIG mode change did not take effect without one (mig-parted's reconfigure-mig.sh)."""
    env = ((policy.get("spec") or {}).get("migManager") or {}).get("env") or []
    return any(
        item.get("name") == "WITH_REBOOT" and str(item.get("value", "")).strip().lower() == "true" for item in env
    )


def mig_strategy_of(policy):
    return ((policy.get("spec") or {}).get("mig") or {}).get("strategy") or DEFAULT_MIG_STRATEGY


# The taint GPU nodes commonly carry, which the operator's DaemonSets tolerate by default.
GPU_TAINT_KEY = "nvidia.com/gpu"

# The operator replaces its DaemonSets' tolerations only when spec.daemonsets.tolerations is non-empty;
# otherwise its manifests' own toleration applies.
OPERATOR_DEFAULT_TOLERATIONS = [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]


def policy_sharing_fields(policy):
    spec = policy.get("spec") or {}
    name, default = device_plugin_config_of(policy)
    return dict(
        name=policy["metadata"]["name"],
        device_plugin_enabled=(spec.get("devicePlugin") or {}).get("enabled", True),
        device_plugin_config=dict(name=name, default=default),
        mig_strategy=(spec.get("mig") or {}).get("strategy"),
        mig_manager_config=(spec.get("migManager") or {}).get("config"),
        daemonset_tolerations=(spec.get("daemonsets") or {}).get("tolerations") or [],
    )
