# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a gpu_preflight finding is (severity, check, object, message, fix, fixed_by), how findings are counted
and when they fail the task; the helpers every check family shares."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    NodeGpuState,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.operands import (
    LABEL_NFD_NVIDIA_PCI,
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


def labels_of(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def name_of(obj):
    return obj["metadata"]["name"]


def namespaced_name(obj):
    return "%s/%s" % (obj["metadata"].get("namespace"), obj["metadata"]["name"])


def is_gpu_node(node):
    """A GPU node for the operator: GFD's ``nvidia.com/gpu.present`` (or any GPU label/resource), or NFD's
    NVIDIA PCI label (set before the operator ever ran there)."""
    return NodeGpuState.from_node(node).is_gpu_node or labels_of(node).get(LABEL_NFD_NVIDIA_PCI) == "true"
