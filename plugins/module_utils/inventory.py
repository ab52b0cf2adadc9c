# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU inventory of a cluster, and what looks wrong in it: pure functions over API dicts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.device_plugin_config import (
    RESOURCE_PREFIX,
    SHARING_KEYS,
    parse_sharing_config,
    sharing_method_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.node_state import NodeGpuState, findings_for_node
from ansible_collections.gpushare.k8s.plugins.module_utils.platform import device_plugin_config_of

# The taint GPU nodes commonly carry, which the operator's DaemonSets tolerate by default.
GPU_TAINT_KEY = "nvidia.com/gpu"
# The operator replaces its DaemonSets' tolerations only when spec.daemonsets.tolerations is non-empty;
# otherwise its manifests' own toleration applies.
OPERATOR_DEFAULT_TOLERATIONS = [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
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
    return [taint for taint in taints or [] if taint.get("effect") in SCHEDULING_EFFECTS
            and not any(tolerates(toleration, taint) for toleration in tolerations or [])]


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
    return bool((pod.get("spec") or {}).get("nodeName")) and phase not in ("Succeeded", "Failed") and bool(gpu_requests(pod))


def gpu_pods_by_node(pods):
    by_node = {}
    for pod in pods:
        if is_active_gpu_pod(pod):
            by_node.setdefault(pod["spec"]["nodeName"], []).append(dict(
                namespace=pod["metadata"]["namespace"],
                name=pod["metadata"]["name"],
                phase=(pod.get("status") or {}).get("phase"),
                requests=gpu_requests(pod),
            ))
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


def describe_profiles(config_map):
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
            resources=dict((entry.get("name"), entry.get("replicas")) for entry in method_config.get("resources") or []),
        )
    return profiles


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


def build_inventory(policy, config_map, nodes, pods):
    """Everything gpu_info returns, from one ClusterPolicy, its device-plugin ConfigMap, nodes and pods."""
    policy_fields = policy_sharing_fields(policy) if policy else None
    profiles = describe_profiles(config_map)
    config_keys = set(profiles) if config_map is not None else None
    tolerations = (policy_fields["daemonset_tolerations"] or OPERATOR_DEFAULT_TOLERATIONS) if policy_fields else []
    pods_by_node = gpu_pods_by_node(pods)
    findings = []
    if policy_fields and policy_fields["device_plugin_config"]["name"] and config_map is None:
        findings.append(dict(object="ClusterPolicy/%s" % policy_fields["name"],
                             message="spec.devicePlugin.config.name names ConfigMap %s, which does not exist: the device plugin hangs until it does"
                             % policy_fields["device_plugin_config"]["name"]))
    default_key = policy_fields["device_plugin_config"]["default"] if policy_fields else None
    if default_key and config_keys is not None and default_key not in config_keys:
        findings.append(dict(object="ClusterPolicy/%s" % policy_fields["name"],
                             message="spec.devicePlugin.config.default names key %s, which the ConfigMap lacks" % default_key))

    gpu_nodes = {}
    for node in nodes:
        state = NodeGpuState.from_node(node)
        if not state.is_gpu_node:
            continue
        entry = state.to_dict()
        entry["gpu_pods"] = pods_by_node.get(state.name, [])
        entry["findings"] = findings_for_node(state, config_keys)
        blocking = untolerated_taints(state.taints, tolerations)
        if blocking:
            entry["findings"].append("taints %s are not tolerated by spec.daemonsets.tolerations: the operator's DaemonSets (driver included) "
                                     "never land on this node" % ", ".join("%s:%s" % (t.get("key"), t.get("effect")) for t in blocking))
        gpu_nodes[state.name] = entry
        findings.extend(dict(object="Node/%s" % state.name, message=message) for message in entry["findings"])
    return dict(cluster_policy=policy_fields, profiles=profiles, nodes=gpu_nodes, findings=findings)
