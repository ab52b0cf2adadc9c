# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The autoscaling check on OpenShift: GPU MachineSets' accelerator label, GPU annotation, zone label,
MachineAutoscalers and the ClusterAutoscaler (its GPU limits through ``gpu_limits``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_VALUE_RULE,
    is_label_value,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    cluster_autoscaler_gpu_limits,
    is_gpu_machineset,
    machineset_key,
    machineset_node_labels,
    machineset_node_states,
    suggested_accelerator,
    targeting_autoscalers,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    ACCELERATOR_LABEL,
    CLUSTER_AUTOSCALER_NAME,
    MACHINESET_GPU_ANNOTATION,
    MIN_DELAY_AFTER_ADD_SECONDS,
    RECOMMENDED_DELAY_AFTER_ADD,
    ZONE_LABEL,
    parse_duration,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    ERROR,
    WARNING,
    finding,
    name_of,
    namespaced_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.gpu_limits import (
    check_gpu_limits,
)


def check_openshift(machinesets, cluster_autoscalers, machine_autoscalers, machines, nodes):
    findings = []
    nodes_by_machineset = machineset_node_states(machines, nodes)
    autoscaler = next((ca for ca in cluster_autoscalers if name_of(ca) == CLUSTER_AUTOSCALER_NAME), None)
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
        name = name_of(machineset)
        ref = "MachineSet/%s" % namespaced_name(machineset)
        labels = machineset_node_labels(machineset)
        accelerator = labels.get(ACCELERATOR_LABEL)
        suggested = accelerator if accelerator and is_label_value(accelerator) else None
        suggested = suggested or labelled_for.get(name) or suggested_accelerator(states) or "<gpu-type>"
        findings += _accelerator_findings(ref, accelerator, suggested)
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
        if any(int((ma.get("spec") or {}).get("minReplicas") or 0) == 0 for ma in targeting):
            findings += _scale_from_zero_findings(ref, labels, machineset["metadata"].get("annotations") or {})
    if autoscaled_gpu_machinesets:
        findings += _cluster_autoscaler_findings(autoscaler)
    return findings + limit_findings


def _accelerator_findings(ref, accelerator, suggested):
    """A GPU MachineSet's accelerator node label: missing, or not a label value."""
    if accelerator is None:
        return [
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
        ]
    if not is_label_value(accelerator):
        return [
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
        ]
    return []


def _scale_from_zero_findings(ref, labels, annotations):
    """What a GPU MachineSet scaling from zero lacks: the GPU annotation, the zone label."""
    findings = []
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
    return findings


def _cluster_autoscaler_findings(autoscaler):
    """With autoscaled GPU MachineSets: no ClusterAutoscaler, or a delayAfterAdd shorter than a GPU node's start."""
    if autoscaler is None:
        return [
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
        ]
    delay = ((autoscaler.get("spec") or {}).get("scaleDown") or {}).get("delayAfterAdd")
    seconds = parse_duration(delay) if delay is not None else None
    if delay is not None and (seconds is None or seconds < MIN_DELAY_AFTER_ADD_SECONDS):
        return [
            finding(
                WARNING,
                "autoscaling",
                "ClusterAutoscaler/%s" % CLUSTER_AUTOSCALER_NAME,
                "spec.scaleDown.delayAfterAdd is %s: GPU nodes take 10-15 minutes to install the driver and "
                "advertise GPUs, so the autoscaler may remove or add nodes meanwhile" % delay,
                "set spec.scaleDown.delayAfterAdd: %s" % RECOMMENDED_DELAY_AFTER_ADD,
                "gpushare.k8s.gpu_autoscaling (delay_after_add)",
            )
        ]
    return []
