# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ClusterAutoscaler's GPU limits (OpenShift): entries with no valid type, a type no GPU MachineSet carries,
an entry a later one overrides; one exact fix or the choices."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import (
    namedtuple,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    is_label_value,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    gpu_limit_text,
    machineset_accelerators,
    machineset_node_labels,
    never_matching_reason,
    suggested_accelerator,
    superseding_index,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    ACCELERATOR_LABEL,
    CLUSTER_AUTOSCALER_NAME,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    ERROR,
    WARNING,
    finding,
    name_of,
)

# GPU MachineSets as the ClusterAutoscaler's GPU limits see them: their valid GPU type (None when the label is missing
# or invalid), else the type their nodes' product suggests, and whether a MachineAutoscaler scales one of them.
LimitTarget = namedtuple("LimitTarget", "names gpu_type suggested autoscaled")


def _limit_targets(gpu_machinesets, gpu_limits):
    """What an entry matching no GPU MachineSet may have been meant for: each GPU type MachineSets carry with no
    entry (one target for the MachineSets sharing it), and each GPU MachineSet without a valid type."""
    listed = set(entry.get("type") for entry in gpu_limits)
    by_type, unlabelled = {}, []
    for machineset, states, targeting in gpu_machinesets:
        name = name_of(machineset)
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
        useless_finding, labelled, gpu_type = _useless_entry_finding(
            index, entry, reason, targets, len(useless) == 1, severity
        )
        findings.append(useless_finding)
        if labelled:
            labelled_for[labelled] = entry["type"]
        if gpu_type:
            retyped.add(gpu_type)
    return findings, labelled_for, retyped


def _useless_entry_finding(index, entry, reason, targets, alone, severity):
    """(finding, MachineSet its fix labels or None, type its fix sets the entry to or None) for an entry that limits
    nothing: the one exact fix when it is the only such entry (``alone``) with one fix, else the choices."""
    options = _limit_fix_options(index, entry, targets)
    message = "spec.resourceLimits.gpus[%d] %s limits nothing: %s" % (
        index,
        gpu_limit_text(entry),
        reason or "no GPU MachineSet carries %s=%s" % (ACCELERATOR_LABEL, entry.get("type")),
    )
    fixed_by = "gpushare.k8s.gpu_autoscaling (gpu_limit)" if reason else "oc edit clusterautoscaler default"
    labelled = gpu_type = None
    if alone and len(options) == 1:
        [(fix, labelled, gpu_type)] = options
        if labelled:
            fixed_by = "gpushare.k8s.gpu_autoscaling (machinesets: [%s], accelerator: %s)" % (labelled, entry["type"])
        if gpu_type:
            message += ", and there is no entry of type %s (MachineSet %s)" % (gpu_type, ", ".join(targets[0].names))
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
    return (
        finding(severity, "autoscaling", "ClusterAutoscaler/%s" % CLUSTER_AUTOSCALER_NAME, message, fix, fixed_by),
        labelled,
        gpu_type,
    )
