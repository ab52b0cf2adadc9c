# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sharing check: plan/inventory's per-node findings, each given its fix, and the policy's sharing fields."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    policy_sharing_fields,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.hami import (
    nodes_running_device_plugin,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_MIG_CONFIG,
    PAUSED_FOR_MIG_CHANGE,
    NodeGpuState,
    deploy_label,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import (
    build_inventory,
    describe_device_plugin_profiles,
    findings_for_node,
    nvidia_device_plugin_enabled,
    runs_hami,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    ERROR,
    WARNING,
    finding,
)

# How to fix each kind of finding plan/inventory.findings_for_node reports, matched on its wording in this order
# (the left-behind message also says "is pending").
_SHARING_FIXES = (
    (
        "names no key",
        ERROR,
        "point the node at an existing profile, or create the profile it names",
        "gpushare.k8s.gpu_timeslicing / gpu_mps (config_key, nodes), or gpushare.k8s.gpu_reset on the node",
    ),
    (
        "left behind",
        ERROR,
        "remove the %s labels (kubectl label node <node> nvidia.com/gpu.deploy.<component>=true --overwrite)"
        % PAUSED_FOR_MIG_CHANGE,
        "kubectl label node (no gpushare.k8s module changes these labels: mig-manager owns them)",
    ),
    (
        "inconsistent MIG layout",
        ERROR,
        "apply a MIG layout valid for this GPU",
        "gpushare.k8s.gpu_mig_config (config or layout)",
    ),
    (
        "is not running on the node",
        ERROR,
        "make GPU Feature Discovery run there (see the operator and taints findings)",
        "gpushare.k8s.gpu_tolerations, or the operator",
    ),
    (
        "capacity",
        ERROR,
        "restart the device plugin so it applies the current config",
        "gpushare.k8s.gpu_timeslicing / gpu_mps (restart_device_plugin: true)",
    ),
    (
        "failed",
        ERROR,
        "stop the GPU pods on the node, then set %s again" % LABEL_MIG_CONFIG,
        "gpushare.k8s.gpu_mig_config (drain: true), or gpushare.k8s.gpu_reset",
    ),
    (
        "is pending",
        WARNING,
        "stop or drain the GPU pods on the node so mig-manager can finish",
        "gpushare.k8s.gpu_mig_config (drain: true)",
    ),
    (
        "two device plugins",
        ERROR,
        "switch NVIDIA's device plugin off where HAMi's runs (ClusterPolicy spec.devicePlugin.enabled: false)",
        "the gpushare.k8s.hami role",
    ),
)


def _sharing_fix(message):
    for words, severity, fix, fixed_by in _SHARING_FIXES:
        if words in message:
            return severity, fix, fixed_by
    return ERROR, "see gpushare.k8s.gpu_info for the node's state", "gpushare.k8s.gpu_info"


def check_sharing(policy, config_map, nodes, pods=()):
    """Sharing consistency, as plan/inventory finds it, each finding with its fix; ``pods`` show where HAMi's device
    plugin runs."""
    findings = []
    if policy is not None:
        for item in build_inventory(policy, config_map, [], [])["findings"]:
            findings.append(
                finding(
                    ERROR,
                    "sharing",
                    item["object"],
                    item["message"],
                    "create the ConfigMap and key the policy names, or point the policy at existing ones",
                    "gpushare.k8s.gpu_timeslicing / gpu_mps (config_map, make_default), or gpushare.k8s.gpu_reset",
                )
            )
    config_keys = set(describe_device_plugin_profiles(config_map)) if config_map is not None else None
    nvidia_plugin = nvidia_device_plugin_enabled(policy_sharing_fields(policy) if policy is not None else None)
    hami_nodes = nodes_running_device_plugin(pods)
    for node in nodes:
        state = NodeGpuState.from_node(node)
        if config_keys is None and state.device_plugin_config:
            # findings_for_node compares the label with the ConfigMap's keys; with no ConfigMap, say so here.
            findings.append(
                finding(
                    ERROR,
                    "sharing",
                    "Node/%s" % state.name,
                    "label %s=%s names a device-plugin profile, but the ClusterPolicy names no device-plugin "
                    "ConfigMap that exists (spec.devicePlugin.config.name): the plugin ignores the label"
                    % (LABEL_DEVICE_PLUGIN_CONFIG, state.device_plugin_config),
                    "remove the label %s from %s, or create the profile %s and point the policy at its ConfigMap"
                    % (LABEL_DEVICE_PLUGIN_CONFIG, state.name, state.device_plugin_config),
                    _SHARING_FIXES[0][3],
                )
            )
        hami = runs_hami(state, hami_nodes)
        for message in findings_for_node(state, config_keys, nvidia_plugin, hami):
            severity, fix, fixed_by = _sharing_fix(message)
            if "names no key" in message:
                fix = "set %s on %s to one of the ConfigMap's keys, or create key %s" % (
                    LABEL_DEVICE_PLUGIN_CONFIG,
                    state.name,
                    state.device_plugin_config,
                )
            elif "left behind" in message:
                fix = "kubectl label node %s %s --overwrite" % (
                    state.name,
                    " ".join("%s=true" % deploy_label(component) for component in state.paused_components),
                )
            findings.append(finding(severity, "sharing", "Node/%s" % state.name, message, fix, fixed_by))
    return findings
