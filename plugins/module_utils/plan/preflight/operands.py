# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator check: the operands gpu_preflight expects per GPU node (``nvidia/operands.py``), present and
ready, NFD's worker, HAMi's device plugin beside NVIDIA's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    MIG_STATE_PENDING,
    PAUSED_FOR_MIG_CHANGE,
    NodeGpuState,
    deploy_label,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.operands import (
    DEPLOY_OFF,
    LABEL_NFD_NVIDIA_PCI,
    NFD_HELM_TOLERATIONS_VALUE,
    NFD_WORKER_OPENSHIFT,
    OPERANDS,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    ERROR,
    INFO,
    WARNING,
    finding,
    is_gpu_node,
    name_of,
    namespaced_name,
)


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
    by_ds = _pods_by_daemonset(pods)
    states = [NodeGpuState.from_node(node) for node in nodes if is_gpu_node(node)]
    if not states:
        return []
    findings = _nfd_findings(nfd_workers, states, by_ds)
    if policy is None or namespace is None:
        return findings
    existing = dict((name_of(ds), ds) for ds in daemonsets)
    for operand in OPERANDS:
        if not _enabled(policy, operand.policy_section):
            continue
        needing = [state for state in states if _needs(operand, state)]
        if not needing:
            continue
        if operand.daemonset not in existing:
            findings.append(_missing_daemonset_finding(operand, policy, namespace, needing))
            continue
        findings += _operand_findings(operand, namespace, needing, by_ds)
    return findings


def _nfd_findings(nfd_workers, states, by_ds):
    """No NFD worker at all, or a worker without a (ready) pod on some GPU node."""
    findings = []
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
        present = by_ds.get((daemonset["metadata"]["namespace"], name_of(daemonset)), {})
        without = [s.name for s in states if s.name not in present]
        unready = [s.name for s in states if s.name in present and not present[s.name]]
        findings += _presence_findings(
            "Node Feature Discovery worker",
            namespaced_name(daemonset),
            without,
            unready,
            "check the worker's tolerations and node selector against those nodes (see the taints findings)",
            "the worker's tolerations (gpushare.k8s.gpu_tolerations with nfd: true, or Helm value %s)"
            % NFD_HELM_TOLERATIONS_VALUE,
        )
    return findings


def _missing_daemonset_finding(operand, policy, namespace, needing):
    """The operand's DaemonSet does not exist although the policy enables it and GPU nodes need it."""
    return finding(
        ERROR,
        "operator",
        "DaemonSet/%s/%s" % (namespace, operand.daemonset),
        "the %s DaemonSet does not exist although ClusterPolicy %s enables it and GPU node(s) %s need it"
        % (operand.name, name_of(policy), ", ".join(s.name for s in needing)),
        "read the operator's logs and the ClusterPolicy's status (kubectl get clusterpolicy %s -o yaml)"
        % name_of(policy),
        "the GPU Operator (spec.%s of the ClusterPolicy)" % operand.policy_section,
    )


def _operand_findings(operand, namespace, needing, by_ds):
    """An existing operand DaemonSet on the GPU nodes that need it: switched off or paused there (by the node's
    ``gpu.deploy.*`` label), else without a pod or with an unready one."""
    present = by_ds.get((namespace, operand.daemonset), {})
    findings, without, unready = [], [], []
    for state in needing:
        value = state.labels.get(deploy_label(operand.component)) if operand.component else None
        if value in (DEPLOY_OFF, PAUSED_FOR_MIG_CHANGE):
            findings += _not_deployed_findings(operand, state, value)
        elif state.name not in present:
            without.append(state.name)
        elif not present[state.name]:
            unready.append(state.name)
    findings += _presence_findings(
        operand.name,
        "%s/%s" % (namespace, operand.daemonset),
        without,
        unready,
        "make the DaemonSet's pods land there: tolerate the nodes' taints (spec.daemonsets.tolerations) and "
        "check the nodes' %s labels" % deploy_label("*"),
        "gpushare.k8s.gpu_tolerations, or the operator's node labels",
    )
    return findings


def _not_deployed_findings(operand, state, value):
    """An operand its ``gpu.deploy.*`` label switches off (a warning) or pauses for a pending MIG change (info).
    Paused with no change pending: nothing here, the sharing check names the labels left behind."""
    label = deploy_label(operand.component)
    if value == DEPLOY_OFF:
        return [
            finding(
                WARNING,
                "operator",
                "Node/%s" % state.name,
                "the %s is switched off on this GPU node (label %s=%s)" % (operand.name, label, value),
                "kubectl label node %s %s=true --overwrite (or remove the label and let the operator set it)"
                % (state.name, label),
                "the node label %s" % label,
            )
        ]
    if state.mig_config_state == MIG_STATE_PENDING:
        return [
            finding(
                INFO,
                "operator",
                "Node/%s" % state.name,
                "the %s is paused (%s=%s) while mig-manager applies %s"
                % (operand.name, label, value, state.mig_config),
                "nothing, once the MIG change finishes (see the sharing findings if it is stuck)",
                "mig-manager",
            )
        ]
    return []
