# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU inventory of a cluster, and what looks wrong in it: pure functions over API dicts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    OPERATOR_DEFAULT_TOLERATIONS,
    policy_sharing_fields,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_STRATEGY_MIXED,
    RESOURCE_GPU,
    SHARING_KEYS,
    mig_resource_name,
    parse_sharing_config,
    sharing_method_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import gpu_pods_by_node
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.hami import (
    REGISTER_ANNOTATION as HAMI_REGISTER_ANNOTATION,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.hami import advertised_count as hami_advertised_count
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.hami import nodes_running_device_plugin
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_COUNT,
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_MIG_CONFIG,
    LABEL_REPLICAS,
    MIG_INVALID_SUFFIX,
    MIG_STATE_FAILED,
    MIG_STATE_PENDING,
    PAUSED_FOR_MIG_CHANGE,
    NodeGpuState,
    _to_int,
    advertised_mig_devices,
    deploy_label,
    mig_label,
)

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration, taint):
    """Kubernetes' toleration matching (operator Equal by default; empty key with Exists matches all)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(taints, tolerations):
    """Taints that keep pods with ``tolerations`` off a node."""
    return [
        taint
        for taint in taints or []
        if taint.get("effect") in SCHEDULING_EFFECTS
        and not any(tolerates(toleration, taint) for toleration in tolerations or [])
    ]


def describe_device_plugin_profiles(config_map):
    """The device-plugin profiles of a ConfigMap: key -> method, resources and replicas (or the parse error)."""
    profiles = {}
    for key, text in sorted(((config_map or {}).get("data") or {}).items()):
        try:
            config = parse_sharing_config(text, source="key %s" % key)
        except GpuShareError as exc:
            profiles[key] = dict(error=exc.msg)
            continue
        method = sharing_method_of(config)
        method_config = (config.get("sharing") or {}).get(SHARING_KEYS.get(method, ""), {})
        profiles[key] = dict(
            method=method or "none",
            rename_by_default=bool(method_config.get("renameByDefault")),
            resources=dict(
                (entry.get("name"), entry.get("replicas")) for entry in method_config.get("resources") or []
            ),
        )
    return profiles


def build_inventory(policy, config_map, nodes, pods, hami_pods=()):
    """Everything gpu_info returns, from one ClusterPolicy, its device-plugin ConfigMap, nodes, pods and the pods of
    HAMi's device plugin."""
    hami_nodes = nodes_running_device_plugin(hami_pods)
    policy_fields = policy_sharing_fields(policy) if policy else None
    profiles = describe_device_plugin_profiles(config_map)
    config_keys = set(profiles) if config_map is not None else None
    tolerations = (policy_fields["daemonset_tolerations"] or OPERATOR_DEFAULT_TOLERATIONS) if policy_fields else []
    pods_by_node = gpu_pods_by_node(pods)
    findings = []
    if policy_fields and policy_fields["device_plugin_config"]["name"] and config_map is None:
        findings.append(
            dict(
                object="ClusterPolicy/%s" % policy_fields["name"],
                message="spec.devicePlugin.config.name names ConfigMap %s, which does not exist: the device plugin "
                "hangs until it does" % policy_fields["device_plugin_config"]["name"],
            )
        )
    default_key = policy_fields["device_plugin_config"]["default"] if policy_fields else None
    if default_key and config_keys is not None and default_key not in config_keys:
        findings.append(
            dict(
                object="ClusterPolicy/%s" % policy_fields["name"],
                message="spec.devicePlugin.config.default names key %s, which the ConfigMap lacks" % default_key,
            )
        )

    gpu_nodes = {}
    for node in nodes:
        state = NodeGpuState.from_node(node)
        if not state.is_gpu_node:
            continue
        entry = state.to_dict()
        entry["gpu_pods"] = pods_by_node.get(state.name, [])
        hami = runs_hami(state, hami_nodes)
        entry["hami_devices"] = [dict(device) for device in state.hami_devices] if hami else None
        entry["findings"] = findings_for_node(state, config_keys, nvidia_device_plugin_enabled(policy_fields), hami)
        blocking = untolerated_taints(state.taints, tolerations)
        if blocking:
            entry["findings"].append(
                "taints %s are not tolerated by spec.daemonsets.tolerations: the operator's DaemonSets (driver "
                "included) "
                "never land on this node" % ", ".join("%s:%s" % (t.get("key"), t.get("effect")) for t in blocking)
            )
        gpu_nodes[state.name] = entry
        findings.extend(dict(object="Node/%s" % state.name, message=message) for message in entry["findings"])
    return dict(cluster_policy=policy_fields, profiles=profiles, nodes=gpu_nodes, findings=findings)


def _capacity_finding(state, resource, expected, what):
    advertised = state.shared_resource(resource)
    actual = state.capacity.get(advertised, 0)
    if actual != expected:
        return (
            "capacity %s is %d, expected %s = %d; the device plugin has not applied the current config (restart its "
            "DaemonSet)"
            % (
                advertised,
                actual,
                what,
                expected,
            )
        )
    return None


def runs_hami(state, hami_nodes):
    """Whether HAMi shares the node's GPUs: its device plugin runs there (``hami_nodes``) and described them."""
    return state.name in hami_nodes and state.hami_devices is not None


def nvidia_device_plugin_enabled(policy_fields):
    """Whether the ClusterPolicy runs NVIDIA's device plugin (``spec.devicePlugin.enabled``, on by default)."""
    return bool(policy_fields and policy_fields["device_plugin_enabled"] is not False)


def _hami_findings(state, nvidia_device_plugin):
    """A node where HAMi's device plugin registered: its ``nvidia.com/gpu`` is HAMi's split count, and NVIDIA's
    device plugin must not run there too (nvidia/hami.py)."""
    findings = []
    if nvidia_device_plugin and state.labels.get(deploy_label("device-plugin")) != "false":
        findings.append(
            "%s is advertised by two device plugins, NVIDIA's and HAMi's (%s): the kubelet keeps whichever "
            "registered last, so pods get whole GPUs or HAMi's slices by chance; switch NVIDIA's off "
            "(ClusterPolicy spec.devicePlugin.enabled: false)" % (RESOURCE_GPU, HAMI_REGISTER_ANNOTATION)
        )
    finding = _capacity_finding(
        state,
        RESOURCE_GPU,
        hami_advertised_count(state.hami_devices),
        "%d GPU(s) x HAMi's deviceSplitCount" % len(state.hami_devices),
    )
    if finding:
        findings.append(finding)
    return findings


def findings_for_node(state, config_keys=None, nvidia_device_plugin=True, hami=False):
    """Problems visible on one node, as sentences for the user (empty when all is consistent).

    ``config_keys`` are the keys of the device plugin ConfigMap; when given, a node label naming
    another key is reported (the plugin skips unknown keys). Resource counts are not compared while a
    MIG change is pending, since mig-manager withdraws the resources on purpose then. ``hami``: HAMi's device plugin
    runs on the node; ``nvidia_device_plugin``: the ClusterPolicy runs NVIDIA's (both on one node is an error).
    """
    if not state.is_gpu_node:
        return []
    findings = _label_findings(state, config_keys)
    if state.product and state.product.endswith(MIG_INVALID_SUFFIX):
        findings.append(
            "GPU Feature Discovery reports an inconsistent MIG layout (%s); apply a layout valid for this GPU"
            % state.product
        )
        return findings
    if state.mig_config_state == MIG_STATE_PENDING:
        return findings
    if LABEL_COUNT not in state.labels:
        findings.append("label %s is missing; GPU Feature Discovery is not running on the node" % LABEL_COUNT)
        return findings
    if hami:
        return findings + _hami_findings(state, nvidia_device_plugin)
    return findings + _advertised_findings(state)


def _label_findings(state, config_keys):
    """What a GPU node's labels say is wrong: a config label naming no key, a MIG change pending or failed, operands
    left paused with no change pending."""
    findings = []
    if config_keys is not None and state.device_plugin_config and state.device_plugin_config not in config_keys:
        findings.append(
            "label %s=%s names no key of the device plugin ConfigMap (keys: %s); the plugin ignores it"
            % (LABEL_DEVICE_PLUGIN_CONFIG, state.device_plugin_config, ", ".join(sorted(config_keys)) or "none")
        )
    if state.mig_config_state == MIG_STATE_PENDING:
        findings.append(
            "MIG change to %s is pending; it cannot finish while GPU pods run on the node (mig-manager never evicts "
            "them)" % state.mig_config
        )
    elif state.mig_config_state == MIG_STATE_FAILED:
        findings.append(
            "MIG change to %s failed; stop the GPU pods on the node, then set %s again (or to another name) to retry"
            % (state.mig_config, LABEL_MIG_CONFIG)
        )
    if state.paused_components and state.mig_config_state != MIG_STATE_PENDING:
        findings.append(
            "labels %s=%s are left behind while no MIG change is pending; the operands stay stopped until they are "
            "removed" % (", ".join(deploy_label(c) for c in state.paused_components), PAUSED_FOR_MIG_CHANGE)
        )
    return findings


def _advertised_findings(state):
    """NVIDIA's device plugin advertising other counts than GFD's labels give: per MIG profile under the mixed
    strategy, else nvidia.com/gpu (count x replicas)."""
    if state.mig_strategy == MIG_STRATEGY_MIXED and state.mig_resources:
        findings = []
        for profile, count in sorted(state.mig_resources.items()):
            replicas = _to_int(state.labels.get(mig_label(profile, "replicas"))) or 1
            finding = _capacity_finding(
                state,
                mig_resource_name(profile),
                count * replicas,
                "%s x %d replicas" % (mig_label(profile, "count"), replicas),
            )
            if finding:
                findings.append(finding)
        return findings
    what = "%s %d x %s %d" % (LABEL_COUNT, state.count, LABEL_REPLICAS, state.replicas)
    finding = _capacity_finding(state, RESOURCE_GPU, state.count * state.replicas, what)
    return [finding] if finding else []


def node_summary(node):
    """What a node shows about its GPUs, as the sharing, MIG and reset modules return it before and after."""
    state = NodeGpuState.from_node(node)
    return dict(
        product=state.product,
        count=state.count,
        replicas=state.replicas,
        sharing_strategy=state.sharing_strategy,
        mps_capable=state.mps_capable,
        device_plugin_config=state.device_plugin_config,
        mig_config=state.mig_config,
        mig_config_state=state.mig_config_state,
        mig_strategy=state.mig_strategy,
        mig_devices=advertised_mig_devices(state),
        allocatable=state.allocatable,
        unschedulable=state.unschedulable,
    )
