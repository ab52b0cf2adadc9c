# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_preflight's checks: pure functions over API dicts, each returning findings.

A finding is one problem: ``severity`` (error, warning, info), ``check`` (taints, operator, sharing,
autoscaling, quota), ``object`` (Kind/name), ``message`` (what is wrong), ``fix`` (the exact change)
and ``fixed_by`` (the module, option, Helm value or field that makes it).

Platform facts (NVIDIA GPU sharing reference, section 5): OpenShift MachineSets carry node labels in
``spec.template.spec.metadata.labels`` and find their nodes through their Machines (``status.nodeRef``); the
ClusterAutoscaler ``default`` lists
``spec.resourceLimits.gpus[{type,min,max}]`` whose ``type`` equals the ``cluster-api/accelerator`` value
(a label value; never ``nvidia.com/gpu``): an entry of another type limits nothing;
``scaleDown.delayAfterAdd`` at least 10 minutes;
scaling from zero needs ``machine.openshift.io/GPU`` and zone labels. Scaleway's autoscaler label is
``k8s.scw.cloud/gpu`` (``k8s.scaleway.com/gpu`` before September 2025), its pool label
``k8s.scaleway.com/pool-name``; VKS's fork reads ``vks.vngcloud.vn/accelerator`` (unconfirmed on VKS: the
``autoscaler_gpu_label`` option replaces it; sources in docs/PLATFORM_FACTS.md). The
autoscaler counts physical GPUs (kubernetes/autoscaler #8129, AKS #3427) and treats a node advertising only
``nvidia.com/gpu.shared`` or ``nvidia.com/mig-*`` as not ready (kubernetes/autoscaler #8095).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    GPU_TAINT_KEY,
    OPERATOR_DEFAULT_TOLERATIONS,
    policy_sharing_fields,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_RESOURCE_PREFIX,
    RESOURCE_GPU,
    RESOURCE_PREFIX,
    SHARED_RESOURCE_SUFFIX,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import gpu_requests
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.hami import nodes_running_device_plugin
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_MIG_CONFIG,
    LABEL_VALUE_RULE,
    MIG_STATE_PENDING,
    PAUSED_FOR_MIG_CHANGE,
    NodeGpuState,
    deploy_label,
    is_label_value,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.operands import (
    DEPLOY_OFF,
    LABEL_NFD_NVIDIA_PCI,
    NFD_HELM_TOLERATIONS_VALUE,
    NFD_WORKER_OPENSHIFT,
    OPERANDS,
    helm_release_of,
    is_nfd_worker,
    pod_tolerations,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    cluster_autoscaler_gpu_limits,
    gpu_limit_text,
    is_gpu_machineset,
    machineset_accelerators,
    machineset_key,
    machineset_node_labels,
    machineset_node_states,
    never_matching_reason,
    suggested_accelerator,
    superseding_index,
    targeting_autoscalers,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.cloud import (
    ACCELERATOR_LABEL,
    AUTOSCALER_GPU_LABELS,
    CLUSTER_AUTOSCALER_NAME,
    MACHINESET_GPU_ANNOTATION,
    MIN_DELAY_AFTER_ADD_SECONDS,
    OPENSHIFT,
    RECOMMENDED_DELAY_AFTER_ADD,
    SCALEWAY,
    SCALEWAY_GPU_LABEL,
    SCALEWAY_OLD_GPU_LABEL,
    SCALEWAY_POOL_LABEL,
    VKS,
    VKS_ACCELERATOR_LABEL,
    ZONE_LABEL,
    detect_platform,
    machineset_node_names,
    parse_duration,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import (
    build_inventory,
    describe_device_plugin_profiles,
    findings_for_node,
    nvidia_device_plugin_enabled,
    runs_hami,
    untolerated_taints,
)

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)
FAIL_ON = (ERROR, WARNING, "never")
CHECKS = ("taints", "operator", "sharing", "autoscaling", "quota")


def finding(severity, check, obj, message, fix, fixed_by):
    return dict(severity=severity, check=check, object=obj, message=message, fix=fix, fixed_by=fixed_by)


def summarize(findings):
    """``{error: n, warning: n, info: n}``."""
    return dict((severity, sum(1 for f in findings if f["severity"] == severity)) for severity in SEVERITIES)


def should_fail(findings, fail_on):
    """True when a finding is at least as severe as ``fail_on`` (``never`` never fails)."""
    if fail_on == ERROR:
        return any(f["severity"] == ERROR for f in findings)
    if fail_on == WARNING:
        return any(f["severity"] in (ERROR, WARNING) for f in findings)
    return False


def _labels(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def _name(obj):
    return obj["metadata"]["name"]


def _namespaced(obj):
    return "%s/%s" % (obj["metadata"].get("namespace"), obj["metadata"]["name"])


def is_gpu_node(node):
    """A GPU node for the operator: GFD's ``nvidia.com/gpu.present`` (or any GPU label/resource), or NFD's
    NVIDIA PCI label (set before the operator ever ran there)."""
    return NodeGpuState.from_node(node).is_gpu_node or _labels(node).get(LABEL_NFD_NVIDIA_PCI) == "true"


def _toleration_for(taint):
    """The toleration matching exactly ``taint``."""
    toleration = {"key": taint.get("key"), "effect": taint.get("effect")}
    if taint.get("value"):
        toleration.update(operator="Equal", value=taint["value"])
    else:
        toleration["operator"] = "Exists"
    return toleration


def _taint_text(taint):
    return "%s%s:%s" % (taint.get("key"), "=" + taint["value"] if taint.get("value") else "", taint.get("effect"))


def _untolerated_by_taint(gpu_nodes, tolerations):
    """``[(taint, [node names])]`` of the taints on GPU nodes that ``tolerations`` do not tolerate."""
    grouped = {}
    for node in gpu_nodes:
        for taint in untolerated_taints((node.get("spec") or {}).get("taints"), tolerations):
            key = (taint.get("key"), taint.get("value") or "", taint.get("effect"))
            grouped.setdefault(key, (taint, []))[1].append(_name(node))
    return [grouped[key] for key in sorted(grouped)]


def effective_operator_tolerations(policy):
    """What the operands tolerate: ``spec.daemonsets.tolerations`` when non-empty (it replaces the
    built-in list), else the built-in ``nvidia.com/gpu`` Exists NoSchedule toleration."""
    return list(((policy.get("spec") or {}).get("daemonsets") or {}).get("tolerations") or []) or [
        dict(toleration) for toleration in OPERATOR_DEFAULT_TOLERATIONS
    ]


def check_taints(policy, nodes, nfd_workers):
    """Taints on GPU nodes the operator's DaemonSets or NFD's worker do not tolerate."""
    findings = []
    gpu_nodes = [node for node in nodes if is_gpu_node(node)]
    if policy is not None:
        policy_object = "ClusterPolicy/%s" % _name(policy)
        current = effective_operator_tolerations(policy)
        for taint, names in _untolerated_by_taint(gpu_nodes, current):
            wanted = current + [_toleration_for(taint)]
            findings.append(
                finding(
                    ERROR,
                    "taints",
                    policy_object,
                    "taint %s on GPU node(s) %s is not tolerated by spec.daemonsets.tolerations: the operator's "
                    "DaemonSets (driver, device plugin, GFD...) never run there, so no GPU is advertised"
                    % (_taint_text(taint), ", ".join(names)),
                    "set spec.daemonsets.tolerations to %s (the list replaces the built-in %s toleration, "
                    "so keep it)" % (json.dumps(wanted, sort_keys=True), GPU_TAINT_KEY),
                    "gpushare.k8s.gpu_tolerations (tolerations: [%s]), or the Helm value daemonsets.tolerations"
                    % json.dumps(_toleration_for(taint), sort_keys=True),
                )
            )
        listed = ((policy.get("spec") or {}).get("daemonsets") or {}).get("tolerations") or []
        gpu_taint = {"key": GPU_TAINT_KEY, "effect": "NoSchedule"}
        if listed and untolerated_taints([gpu_taint], listed):
            tainted = [
                _name(node)
                for node in gpu_nodes
                if any(t.get("key") == GPU_TAINT_KEY for t in (node.get("spec") or {}).get("taints") or [])
            ]
            if not tainted:  # with tainted nodes the finding above already says it
                findings.append(
                    finding(
                        WARNING,
                        "taints",
                        policy_object,
                        "spec.daemonsets.tolerations has no %s toleration and replaces the built-in one: a node "
                        "tainted %s:NoSchedule later gets no operator" % (GPU_TAINT_KEY, GPU_TAINT_KEY),
                        "add %s to spec.daemonsets.tolerations" % json.dumps(OPERATOR_DEFAULT_TOLERATIONS[0]),
                        "gpushare.k8s.gpu_tolerations (keep_gpu_toleration: true)",
                    )
                )
    for daemonset in nfd_workers:
        for taint, names in _untolerated_by_taint(gpu_nodes, pod_tolerations(daemonset)):
            release = helm_release_of(daemonset)
            if release:
                fixed_by = "the Helm value %s of release %s (gpushare.k8s.gpu_tolerations, nfd: true)" % (
                    NFD_HELM_TOLERATIONS_VALUE,
                    release,
                )
            elif _name(daemonset) == NFD_WORKER_OPENSHIFT:
                fixed_by = "the NodeFeatureDiscovery instance that owns it (OpenShift's NFD operator)"
            else:
                fixed_by = "whatever deploys DaemonSet %s" % _namespaced(daemonset)
            findings.append(
                finding(
                    ERROR,
                    "taints",
                    "DaemonSet/%s" % _namespaced(daemonset),
                    "taint %s on GPU node(s) %s is not tolerated by Node Feature Discovery's worker: without its "
                    "labels the operator never sees the node as a GPU node" % (_taint_text(taint), ", ".join(names)),
                    "add %s to the worker's tolerations" % json.dumps(_toleration_for(taint), sort_keys=True),
                    fixed_by,
                )
            )
    return findings


def _pods_by_daemonset(pods):
    """``{(namespace, DaemonSet name): {node name: ready?}}`` from the pods' owner references."""
    result = {}
    for pod in pods:
        for owner in pod["metadata"].get("ownerReferences") or []:
            if owner.get("kind") == "DaemonSet":
                node_name = (pod.get("spec") or {}).get("nodeName")
                if node_name and not pod["metadata"].get("deletionTimestamp"):
                    ready = any(
                        c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (pod.get("status") or {}).get("conditions") or []
                    )
                    per_node = result.setdefault((pod["metadata"]["namespace"], owner["name"]), {})
                    per_node[node_name] = per_node.get(node_name, False) or ready
    return result


def _enabled(policy, section):
    return ((policy.get("spec") or {}).get(section) or {}).get("enabled", True) is not False


def _needs(operand, state):
    if operand.where == "mig":
        return state.mig_capable
    if operand.where == "mps":
        return state.mps_capable or state.sharing_strategy == "mps"
    return True


def _presence_findings(title, daemonset_ref, nodes_without, nodes_unready, fix_missing, fixed_by):
    findings = []
    if nodes_without:
        findings.append(
            finding(
                ERROR,
                "operator",
                "DaemonSet/%s" % daemonset_ref,
                "the %s has no pod on GPU node(s) %s" % (title, ", ".join(sorted(nodes_without))),
                fix_missing,
                fixed_by,
            )
        )
    if nodes_unready:
        findings.append(
            finding(
                ERROR,
                "operator",
                "DaemonSet/%s" % daemonset_ref,
                "the %s is not ready on GPU node(s) %s" % (title, ", ".join(sorted(nodes_unready))),
                "read the pods' events and logs (kubectl -n %s describe pod, logs) on those nodes"
                % daemonset_ref.split("/")[0],
                "the node or the operand's image; not a gpushare.k8s setting",
            )
        )
    return findings


def check_operator(policy, namespace, daemonsets, nfd_workers, nodes, pods):
    """Every operand present and ready on every GPU node that needs it; operands switched off or paused named."""
    findings = []
    by_ds = _pods_by_daemonset(pods)
    states = [NodeGpuState.from_node(node) for node in nodes if is_gpu_node(node)]
    if not states:
        return findings
    if not nfd_workers:
        findings.append(
            finding(
                WARNING,
                "operator",
                "Node Feature Discovery",
                "no Node Feature Discovery worker DaemonSet (*%s or %s) found: new GPU nodes get no %s label and "
                "the operator does not see them"
                % ("node-feature-discovery-worker", NFD_WORKER_OPENSHIFT, LABEL_NFD_NVIDIA_PCI),
                "install NFD (the GPU Operator's Helm chart with nfd.enabled=true, or OpenShift's NFD operator)",
                "the GPU Operator's Helm value nfd.enabled, or OpenShift's NFD operator",
            )
        )
    for daemonset in nfd_workers:
        ref = _namespaced(daemonset)
        present = by_ds.get((daemonset["metadata"]["namespace"], _name(daemonset)), {})
        without = [s.name for s in states if s.name not in present]
        unready = [s.name for s in states if s.name in present and not present[s.name]]
        findings += _presence_findings(
            "Node Feature Discovery worker",
            ref,
            without,
            unready,
            "check the worker's tolerations and node selector against those nodes (see the taints findings)",
            "the worker's tolerations (gpushare.k8s.gpu_tolerations with nfd: true, or Helm value %s)"
            % NFD_HELM_TOLERATIONS_VALUE,
        )
    if policy is None or namespace is None:
        return findings
    existing = dict((_name(ds), ds) for ds in daemonsets)
    for operand in OPERANDS:
        if not _enabled(policy, operand.policy_section):
            continue
        needing = [state for state in states if _needs(operand, state)]
        if not needing:
            continue
        ref = "%s/%s" % (namespace, operand.daemonset)
        if operand.daemonset not in existing:
            findings.append(
                finding(
                    ERROR,
                    "operator",
                    "DaemonSet/%s" % ref,
                    "the %s DaemonSet does not exist although ClusterPolicy %s enables it and GPU node(s) %s need it"
                    % (operand.name, _name(policy), ", ".join(s.name for s in needing)),
                    "read the operator's logs and the ClusterPolicy's status (kubectl get clusterpolicy %s -o yaml)"
                    % _name(policy),
                    "the GPU Operator (spec.%s of the ClusterPolicy)" % operand.policy_section,
                )
            )
            continue
        present = by_ds.get((namespace, operand.daemonset), {})
        without, unready = [], []
        for state in needing:
            value = state.labels.get(deploy_label(operand.component)) if operand.component else None
            if value == DEPLOY_OFF:
                findings.append(
                    finding(
                        WARNING,
                        "operator",
                        "Node/%s" % state.name,
                        "the %s is switched off on this GPU node (label %s=%s)"
                        % (operand.name, deploy_label(operand.component), value),
                        "kubectl label node %s %s=true --overwrite (or remove the label and let the operator set it)"
                        % (state.name, deploy_label(operand.component)),
                        "the node label %s" % deploy_label(operand.component),
                    )
                )
                continue
            if value == PAUSED_FOR_MIG_CHANGE:
                if state.mig_config_state == MIG_STATE_PENDING:
                    findings.append(
                        finding(
                            INFO,
                            "operator",
                            "Node/%s" % state.name,
                            "the %s is paused (%s=%s) while mig-manager applies %s"
                            % (operand.name, deploy_label(operand.component), value, state.mig_config),
                            "nothing, once the MIG change finishes (see the sharing findings if it is stuck)",
                            "mig-manager",
                        )
                    )
                # Paused with no change pending: the sharing check names the labels left behind.
                continue
            if state.name not in present:
                without.append(state.name)
            elif not present[state.name]:
                unready.append(state.name)
        findings += _presence_findings(
            operand.name,
            ref,
            without,
            unready,
            "make the DaemonSet's pods land there: tolerate the nodes' taints (spec.daemonsets.tolerations) and "
            "check the nodes' %s labels" % deploy_label("*"),
            "gpushare.k8s.gpu_tolerations, or the operator's node labels",
        )
    return findings


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


# GPU MachineSets as the ClusterAutoscaler's GPU limits see them: their valid GPU type (None when the label is missing
# or invalid), else the type their nodes' product suggests, and whether a MachineAutoscaler scales one of them.
LimitTarget = namedtuple("LimitTarget", "names gpu_type suggested autoscaled")


def _limit_targets(gpu_machinesets, gpu_limits):
    """What an entry matching no GPU MachineSet may have been meant for: each GPU type MachineSets carry with no
    entry (one target for the MachineSets sharing it), and each GPU MachineSet without a valid type."""
    listed = set(entry.get("type") for entry in gpu_limits)
    by_type, unlabelled = {}, []
    for machineset, states, targeting in gpu_machinesets:
        name = _name(machineset)
        gpu_type = machineset_node_labels(machineset).get(ACCELERATOR_LABEL)
        if gpu_type and is_label_value(gpu_type):
            if gpu_type not in listed:
                by_type.setdefault(gpu_type, []).append((name, bool(targeting)))
        else:
            unlabelled.append(LimitTarget([name], None, suggested_accelerator(states), bool(targeting)))
    typed = [
        LimitTarget([name for name, _a in members], gpu_type, None, any(a for _n, a in members))
        for gpu_type, members in sorted(by_type.items())
    ]
    return typed + unlabelled


def _limit_fix_options(index, entry, targets):
    """(fix, MachineSet to label with the entry's type or None, type the entry is set to or None) for each target:
    set the entry's type to the target's, label the target's MachineSet with the entry's type when it is a valid GPU
    type, or else both (the MachineSet's own finding labels it)."""
    gpu_type = entry.get("type")
    options = []
    for target in targets:
        names = ", ".join(target.names)
        if target.gpu_type:
            text = "set spec.resourceLimits.gpus[%d].type: %s (the %s value of MachineSet %s)" % (
                index,
                target.gpu_type,
                ACCELERATOR_LABEL,
                names,
            )
            options.append((text, None, target.gpu_type))
        elif isinstance(gpu_type, str) and is_label_value(gpu_type):
            text = "label MachineSet %s with %s=%s (spec.template.spec.metadata.labels), keeping this entry" % (
                names,
                ACCELERATOR_LABEL,
                gpu_type,
            )
            options.append((text, names, None))
        else:
            text = "set spec.resourceLimits.gpus[%d].type: %s, the %s value to give MachineSet %s" % (
                index,
                target.suggested or "<gpu-type>",
                ACCELERATOR_LABEL,
                names,
            )
            options.append((text, None, None))
    return options


def check_gpu_limits(gpu_limits, gpu_machinesets):
    """The ClusterAutoscaler's resourceLimits.gpus entries that limit nothing: a type no node can carry, a type no
    GPU MachineSet carries, or a type a later entry repeats. Returns the findings, the MachineSets whose label fix
    must use an entry's type ({name: type}) and the types entries are to be set to (no "no entry" finding for those:
    one problem, one finding)."""
    targets = _limit_targets(gpu_machinesets, gpu_limits)
    carried = machineset_accelerators(machineset for machineset, _s, _t in gpu_machinesets)
    findings, useless = [], []
    for index, entry in enumerate(gpu_limits):
        reason = never_matching_reason(entry)
        later = None if reason else superseding_index(gpu_limits, index)
        if later is not None:
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "ClusterAutoscaler/%s" % CLUSTER_AUTOSCALER_NAME,
                    "spec.resourceLimits.gpus[%d] %s does nothing: gpus[%d] has the same type, and the autoscaler "
                    "applies only the last entry of a type" % (index, gpu_limit_text(entry), later),
                    "remove spec.resourceLimits.gpus[%d], keeping gpus[%d] %s (the limit in force)"
                    % (index, later, gpu_limit_text(gpu_limits[later])),
                    "gpushare.k8s.gpu_autoscaling (gpu_limit)",
                )
            )
        elif reason or entry.get("type") not in carried:
            useless.append((index, entry, reason))
    labelled_for, retyped = {}, set()
    # An error when an autoscaled MachineSet the entry may be meant for goes unlimited (as the "no entry" error says),
    # a warning when the entry is surplus: it misleads, but breaks nothing.
    severity = ERROR if any(target.autoscaled for target in targets) else WARNING
    for index, entry, reason in useless:
        options = _limit_fix_options(index, entry, targets)
        message = "spec.resourceLimits.gpus[%d] %s limits nothing: %s" % (
            index,
            gpu_limit_text(entry),
            reason or "no GPU MachineSet carries %s=%s" % (ACCELERATOR_LABEL, entry.get("type")),
        )
        fixed_by = "gpushare.k8s.gpu_autoscaling (gpu_limit)" if reason else "oc edit clusterautoscaler default"
        if len(useless) == 1 and len(options) == 1:
            [(fix, labelled, gpu_type)] = options
            if labelled:
                labelled_for[labelled] = entry["type"]
                fixed_by = "gpushare.k8s.gpu_autoscaling (machinesets: [%s], accelerator: %s)" % (
                    labelled,
                    entry["type"],
                )
            if gpu_type:
                retyped.add(gpu_type)
                message += ", and there is no entry of type %s (MachineSet %s)" % (
                    gpu_type,
                    ", ".join(targets[0].names),
                )
        elif options:
            fix = "one of: %s" % "; ".join([text for text, _l, _t in options] + ["remove it"])
        elif reason:
            fix = "remove spec.resourceLimits.gpus[%d]: every GPU MachineSet's type has its own entry" % index
        else:
            fix = "remove spec.resourceLimits.gpus[%d], unless a MachineSet labelled %s=%s is to be created" % (
                index,
                ACCELERATOR_LABEL,
                entry.get("type"),
            )
        findings.append(
            finding(severity, "autoscaling", "ClusterAutoscaler/%s" % CLUSTER_AUTOSCALER_NAME, message, fix, fixed_by)
        )
    return findings, labelled_for, retyped


def check_openshift(machinesets, cluster_autoscalers, machine_autoscalers, machines, nodes):
    findings = []
    nodes_by_machineset = machineset_node_states(machines, nodes)
    autoscaler = next((ca for ca in cluster_autoscalers if _name(ca) == CLUSTER_AUTOSCALER_NAME), None)
    gpu_limits = cluster_autoscaler_gpu_limits(autoscaler)
    limit_types = [entry.get("type") for entry in gpu_limits]
    gpu_machinesets = []
    for machineset in machinesets:
        states = nodes_by_machineset.get(machineset_key(machineset), [])
        if is_gpu_machineset(machineset, states):
            gpu_machinesets.append((machineset, states, targeting_autoscalers(machineset, machine_autoscalers)))
    limit_findings, labelled_for, retyped = check_gpu_limits(gpu_limits, gpu_machinesets)
    autoscaled_gpu_machinesets = 0
    for machineset, states, targeting in gpu_machinesets:
        name = _name(machineset)
        ref = "MachineSet/%s" % _namespaced(machineset)
        labels = machineset_node_labels(machineset)
        annotations = machineset["metadata"].get("annotations") or {}
        accelerator = labels.get(ACCELERATOR_LABEL)
        suggested = accelerator if accelerator and is_label_value(accelerator) else None
        suggested = suggested or labelled_for.get(name) or suggested_accelerator(states) or "<gpu-type>"
        if accelerator is None:
            findings.append(
                finding(
                    ERROR,
                    "autoscaling",
                    ref,
                    "GPU MachineSet has no %s node label: the cluster autoscaler does not know its nodes' GPU type, "
                    "never counts them against resourceLimits.gpus and may scale it again while the driver installs "
                    "(gpu-operator #708)" % ACCELERATOR_LABEL,
                    "set spec.template.spec.metadata.labels.%s: %s" % (ACCELERATOR_LABEL, suggested),
                    "gpushare.k8s.gpu_autoscaling (accelerator)",
                )
            )
        elif not is_label_value(accelerator):
            findings.append(
                finding(
                    ERROR,
                    "autoscaling",
                    ref,
                    "%s=%s is not a valid GPU type: it must be %s (never nvidia.com/gpu)"
                    % (ACCELERATOR_LABEL, accelerator, LABEL_VALUE_RULE),
                    "set spec.template.spec.metadata.labels.%s: %s and use the same type in the ClusterAutoscaler"
                    % (ACCELERATOR_LABEL, suggested),
                    "gpushare.k8s.gpu_autoscaling (accelerator)",
                )
            )
        if not targeting:
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    ref,
                    "no MachineAutoscaler targets this GPU MachineSet: it never scales",
                    "create a MachineAutoscaler (autoscaling.openshift.io/v1beta1) with scaleTargetRef "
                    "MachineSet %s, minReplicas and maxReplicas" % name,
                    "gpushare.k8s.gpu_autoscaling (min_replicas, max_replicas)",
                )
            )
            continue
        autoscaled_gpu_machinesets += 1
        missing_entry = accelerator not in limit_types and accelerator not in retyped
        if autoscaler is not None and accelerator and suggested == accelerator and missing_entry:
            findings.append(
                finding(
                    ERROR,
                    "autoscaling",
                    "ClusterAutoscaler/%s" % CLUSTER_AUTOSCALER_NAME,
                    "spec.resourceLimits.gpus has no entry of type %s (MachineSet %s): the autoscaler does not "
                    "limit or scale that GPU type as intended" % (accelerator, name),
                    "add {type: %s, min: 0, max: <physical GPUs>} to spec.resourceLimits.gpus" % accelerator,
                    "gpushare.k8s.gpu_autoscaling (gpu_limit)",
                )
            )
        scales_from_zero = any(int((ma.get("spec") or {}).get("minReplicas") or 0) == 0 for ma in targeting)
        if scales_from_zero:
            gpus = annotations.get(MACHINESET_GPU_ANNOTATION)
            if not (gpus or "").isdigit() or int(gpus) < 1:
                findings.append(
                    finding(
                        ERROR,
                        "autoscaling",
                        ref,
                        "the MachineSet scales from zero but has no %s annotation: with no node to look at, the "
                        "autoscaler does not know a new machine brings GPUs" % MACHINESET_GPU_ANNOTATION,
                        'annotate the MachineSet %s: "<physical GPUs per machine>"' % MACHINESET_GPU_ANNOTATION,
                        "gpushare.k8s.gpu_autoscaling (gpus_per_machine)",
                    )
                )
            if ZONE_LABEL not in labels:
                findings.append(
                    finding(
                        WARNING,
                        "autoscaling",
                        ref,
                        "the MachineSet scales from zero but its node labels lack %s: pods pinned to a zone (or "
                        "to zonal volumes) never trigger it" % ZONE_LABEL,
                        "set spec.template.spec.metadata.labels.%s to the MachineSet's zone" % ZONE_LABEL,
                        "gpushare.k8s.gpu_autoscaling (zone_label: true)",
                    )
                )
    if autoscaled_gpu_machinesets:
        if autoscaler is None:
            findings.append(
                finding(
                    ERROR,
                    "autoscaling",
                    "ClusterAutoscaler/%s" % CLUSTER_AUTOSCALER_NAME,
                    "GPU MachineSets have MachineAutoscalers but there is no ClusterAutoscaler %s: nothing scales"
                    % CLUSTER_AUTOSCALER_NAME,
                    "create ClusterAutoscaler default with spec.resourceLimits.gpus and scaleDown.delayAfterAdd: %s"
                    % RECOMMENDED_DELAY_AFTER_ADD,
                    "gpushare.k8s.gpu_autoscaling (create_cluster_autoscaler: true)",
                )
            )
        else:
            delay = ((autoscaler.get("spec") or {}).get("scaleDown") or {}).get("delayAfterAdd")
            seconds = parse_duration(delay) if delay is not None else None
            if delay is not None and (seconds is None or seconds < MIN_DELAY_AFTER_ADD_SECONDS):
                findings.append(
                    finding(
                        WARNING,
                        "autoscaling",
                        "ClusterAutoscaler/%s" % CLUSTER_AUTOSCALER_NAME,
                        "spec.scaleDown.delayAfterAdd is %s: GPU nodes take 10-15 minutes to install the driver and "
                        "advertise GPUs, so the autoscaler may remove or add nodes meanwhile" % delay,
                        "set spec.scaleDown.delayAfterAdd: %s" % RECOMMENDED_DELAY_AFTER_ADD,
                        "gpushare.k8s.gpu_autoscaling (delay_after_add)",
                    )
                )
    return findings + limit_findings


def _gpu_autoscaling_fixer(gpu_label, default_label):
    """gpu_autoscaling, with the label option when the check used another label than the platform's."""
    if gpu_label == default_label:
        return "gpushare.k8s.gpu_autoscaling"
    return "gpushare.k8s.gpu_autoscaling (autoscaler_gpu_label: %s)" % gpu_label


def check_scaleway(nodes, gpu_label=SCALEWAY_GPU_LABEL):
    findings = []
    for node in nodes:
        if not is_gpu_node(node):
            continue
        labels = _labels(node)
        if gpu_label not in labels:
            old = gpu_label == SCALEWAY_GPU_LABEL and SCALEWAY_OLD_GPU_LABEL in labels
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "Node/%s" % _name(node),
                    "GPU node without the %s label%s: Kapsule's autoscaler does not see its pool as a GPU pool"
                    % (
                        gpu_label,
                        " (it carries %s, the name before September 2025)" % SCALEWAY_OLD_GPU_LABEL if old else "",
                    ),
                    "label the pool's nodes %s (upgrade or recreate the pool so Kapsule sets it)" % gpu_label,
                    "the Kapsule pool's labels for new nodes; %s for the nodes there now"
                    % _gpu_autoscaling_fixer(gpu_label, SCALEWAY_GPU_LABEL),
                )
            )
        if SCALEWAY_POOL_LABEL not in labels:
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "Node/%s" % _name(node),
                    "GPU node without the %s label: it belongs to no Kapsule pool, so no autoscaler manages it"
                    % SCALEWAY_POOL_LABEL,
                    "run GPU workloads on nodes of a Kapsule pool (%s)" % SCALEWAY_POOL_LABEL,
                    "the Kapsule pool, not a gpushare.k8s setting",
                )
            )
    return findings


def check_vks(nodes, gpu_label=VKS_ACCELERATOR_LABEL):
    """Information only: VNG Cloud's public autoscaler fork reads vks.vngcloud.vn/accelerator, but no VNG Cloud
    source says VKS's own autoscaler does (docs/PLATFORM_FACTS.md); ``gpu_label`` replaces it."""
    findings = []
    for node in nodes:
        if is_gpu_node(node) and gpu_label not in _labels(node):
            findings.append(
                finding(
                    INFO,
                    "autoscaling",
                    "Node/%s" % _name(node),
                    "GPU node without %s, the label taken as the one VKS's autoscaler reads for GPU node groups "
                    "(VNG Cloud's public autoscaler fork reads %s; not confirmed on VKS itself)"
                    % (gpu_label, VKS_ACCELERATOR_LABEL),
                    "if the node group autoscales, label it %s=<gpu type> in the node group's labels" % gpu_label,
                    "the VKS node group's labels for new nodes; %s for the nodes there now"
                    % _gpu_autoscaling_fixer(gpu_label, VKS_ACCELERATOR_LABEL),
                )
            )
    return findings


def check_shared_autoscaled(nodes, autoscaled_nodes=(), gpu_labels=AUTOSCALER_GPU_LABELS):
    """Warnings for autoscaled GPU nodes whose sharing misleads the autoscaler (any platform): nodes carrying one
    of ``gpu_labels`` or named in ``autoscaled_nodes`` (the nodes of autoscaled MachineSets, which carry no
    autoscaler label of their own)."""
    findings = []
    for node in nodes:
        labels = _labels(node)
        autoscaled = any(label in labels for label in gpu_labels) or _name(node) in autoscaled_nodes
        if not autoscaled or not is_gpu_node(node):
            continue
        state = NodeGpuState.from_node(node)
        only_other = state.allocatable.get(RESOURCE_GPU, 0) == 0 and any(
            (name.endswith(SHARED_RESOURCE_SUFFIX) or name.startswith(MIG_RESOURCE_PREFIX)) and value > 0
            for name, value in state.allocatable.items()
        )
        if only_other:
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "Node/%s" % state.name,
                    "autoscaled GPU node advertising no %s, only %s: the cluster autoscaler treats a node its GPU "
                    "label says has GPUs but which shows none as not ready yet, forever (kubernetes/autoscaler #8095)"
                    % (RESOURCE_GPU, ", ".join(sorted(n for n, v in state.allocatable.items() if v > 0))),
                    "keep %s advertised on autoscaled pools: time-slicing/MPS without renameByDefault, MIG with the "
                    "single strategy" % RESOURCE_GPU,
                    "gpushare.k8s.gpu_timeslicing / gpu_mps (rename_by_default: false), gpushare.k8s.gpu_mig_config "
                    "(strategy: single)",
                )
            )
        if state.replicas > 1:
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "Node/%s" % state.name,
                    "autoscaled GPU node shares each GPU %d ways (%s): the autoscaler counts physical GPUs, so a new "
                    "node is taken for %d GPU(s) while pods see %d; its limits and scale-up estimates ignore the "
                    "replicas (kubernetes/autoscaler #8129, AKS #3427)"
                    % (state.replicas, state.sharing_strategy, state.count, state.count * state.replicas),
                    "express autoscaler limits in physical GPUs (a max of N GPUs serves N x %d pods) and size the "
                    "pool's max by pods / %d, or keep sharing off autoscaled pools" % (state.replicas, state.replicas),
                    "the autoscaler's limits (in physical GPUs), or gpushare.k8s.gpu_reset on the pool",
                )
            )
    return findings


def check_autoscaling(
    platform, nodes, machinesets, cluster_autoscalers, machine_autoscalers, machines=(), gpu_label=None
):
    """``gpu_label``: the node label the autoscaler reads for a GPU pool's type on platforms without MachineSets,
    in place of the platform's own (ignored on OpenShift, whose MachineSets carry cluster-api/accelerator)."""
    findings = []
    autoscaled = set()
    if platform == OPENSHIFT:
        findings += check_openshift(machinesets, cluster_autoscalers, machine_autoscalers, machines, nodes)
        targets = set(
            (ma["metadata"].get("namespace"), ((ma.get("spec") or {}).get("scaleTargetRef") or {}).get("name"))
            for ma in machine_autoscalers
        )
        autoscaled = set(
            name for key, names in machineset_node_names(machines).items() if key in targets for name in names
        )
    elif platform == SCALEWAY:
        findings += check_scaleway(nodes, gpu_label or SCALEWAY_GPU_LABEL)
    elif platform == VKS:
        findings += check_vks(nodes, gpu_label or VKS_ACCELERATOR_LABEL)
    gpu_labels = AUTOSCALER_GPU_LABELS + ((gpu_label,) if gpu_label and platform != OPENSHIFT else ())
    return findings + check_shared_autoscaled(nodes, autoscaled, gpu_labels)


def check_quotas(pods, quotas):
    """Namespaces whose GPU pods request resources no ResourceQuota of the namespace limits."""
    used = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for resource in gpu_requests(pod):
            if resource.startswith(RESOURCE_PREFIX):
                used.setdefault(pod["metadata"]["namespace"], set()).add(resource)
    limited = {}
    for quota in quotas:
        for key in (quota.get("spec") or {}).get("hard") or {}:
            limited.setdefault(quota["metadata"]["namespace"], set()).add(
                key[len("requests.") :] if key.startswith("requests.") else key
            )
    findings = []
    for namespace in sorted(used):
        missing = sorted(used[namespace] - limited.get(namespace, set()))
        if missing:
            findings.append(
                finding(
                    WARNING,
                    "quota",
                    "Namespace/%s" % namespace,
                    "GPU pods here request %s with no ResourceQuota limiting it: the namespace can take every "
                    "GPU or slice of the cluster" % ", ".join(missing),
                    "create a ResourceQuota in %s with spec.hard {%s}"
                    % (namespace, ", ".join('"requests.%s": <n>' % resource for resource in missing)),
                    "gpushare.k8s.gpu_quota (quota_namespace: %s), or kubectl create quota" % namespace,
                )
            )
    return findings


def preflight(
    policy,
    namespace,
    config_map,
    nodes,
    pods,
    daemonsets=(),
    all_daemonsets=(),
    quotas=(),
    machinesets=(),
    cluster_autoscalers=(),
    machine_autoscalers=(),
    machines=(),
    checks=CHECKS,
    autoscaler_gpu_label=None,
):
    """Every finding of the ``checks`` asked for, most severe first (stable within a severity)."""
    nfd_workers = [ds for ds in all_daemonsets if is_nfd_worker(ds)]
    findings = []
    if "taints" in checks:
        findings += check_taints(policy, nodes, nfd_workers)
    if "operator" in checks:
        findings += check_operator(policy, namespace, daemonsets, nfd_workers, nodes, pods)
    if "sharing" in checks:
        # Without the operator's namespace its ConfigMap was not read: the policy-level checks would be guesses.
        findings += check_sharing(policy if namespace else None, config_map, nodes, pods)
    if "autoscaling" in checks:
        platform = detect_platform(nodes, machinesets, policy)
        findings += check_autoscaling(
            platform, nodes, machinesets, cluster_autoscalers, machine_autoscalers, machines, autoscaler_gpu_label
        )
    if "quota" in checks:
        findings += check_quotas(pods, quotas)
    order = dict((severity, index) for index, severity in enumerate(SEVERITIES))
    return sorted(findings, key=lambda f: order[f["severity"]])
