# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The taints check: GPU-node taints the operator's operands, NFD's worker and GPU pods do not tolerate
(``spec.daemonsets.tolerations`` replaces the built-in list)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    GPU_TAINT_KEY,
    OPERATOR_DEFAULT_TOLERATIONS,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.operands import (
    NFD_HELM_TOLERATIONS_VALUE,
    NFD_WORKER_OPENSHIFT,
    helm_release_of,
    pod_tolerations,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import (
    untolerated_taints,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    ERROR,
    WARNING,
    finding,
    is_gpu_node,
    name_of,
    namespaced_name,
)


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
            grouped.setdefault(key, (taint, []))[1].append(name_of(node))
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
        findings += _operator_taint_findings(policy, gpu_nodes)
    for daemonset in nfd_workers:
        findings += _nfd_worker_taint_findings(daemonset, gpu_nodes)
    return findings


def _operator_taint_findings(policy, gpu_nodes):
    """Each taint on GPU nodes the operands do not tolerate; else a warning when the policy's list drops the built-in
    GPU toleration (a node tainted later would get no operator)."""
    findings = []
    policy_object = "ClusterPolicy/%s" % name_of(policy)
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
            name_of(node)
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
    return findings


def _nfd_worker_taint_findings(daemonset, gpu_nodes):
    """Each taint on GPU nodes an NFD worker does not tolerate, with what sets the worker's tolerations."""
    release = helm_release_of(daemonset)
    if release:
        fixed_by = "the Helm value %s of release %s (gpushare.k8s.gpu_tolerations, nfd: true)" % (
            NFD_HELM_TOLERATIONS_VALUE,
            release,
        )
    elif name_of(daemonset) == NFD_WORKER_OPENSHIFT:
        fixed_by = "the NodeFeatureDiscovery instance that owns it (OpenShift's NFD operator)"
    else:
        fixed_by = "whatever deploys DaemonSet %s" % namespaced_name(daemonset)
    return [
        finding(
            ERROR,
            "taints",
            "DaemonSet/%s" % namespaced_name(daemonset),
            "taint %s on GPU node(s) %s is not tolerated by Node Feature Discovery's worker: without its "
            "labels the operator never sees the node as a GPU node" % (_taint_text(taint), ", ".join(names)),
            "add %s to the worker's tolerations" % json.dumps(_toleration_for(taint), sort_keys=True),
            fixed_by,
        )
        for taint, names in _untolerated_by_taint(gpu_nodes, pod_tolerations(daemonset))
    ]
