# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_monitoring's plan: the DCGM exporter and its Prometheus ServiceMonitor switched on or off in the
ClusterPolicy (``spec.dcgmExporter.enabled``, ``spec.dcgmExporter.serviceMonitor.enabled``; reference
section 3). Pure; only the fields asked for are written, each recorded for ``gpu_reset restore: true``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites, recorded
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import read_record

# ClusterPolicy fields (dotted under spec) and the operator's default when a field is unset.
DCGM_EXPORTER_FIELD = "dcgmExporter.enabled"
SERVICE_MONITOR_FIELD = "dcgmExporter.serviceMonitor.enabled"
DEFAULTS = {DCGM_EXPORTER_FIELD: True, SERVICE_MONITOR_FIELD: False}


def _get(spec, path):
    for field in path.split("."):
        spec = spec.get(field) if isinstance(spec, dict) else None
    return spec


def _nested(path, value):
    result = value
    for field in reversed(path.split(".")):
        result = {field: result}
    return result


def _merge(target, patch):
    for key, value in patch.items():
        if isinstance(value, dict):
            _merge(target.setdefault(key, {}), value)
        else:
            target[key] = value
    return target


def _record_of(spec, path, recorded_paths):
    """What to record so that restore gives back exactly ``spec``: the value at ``path``, or null at its
    highest absent ancestor (so restoring removes the objects this task created, not only the field);
    nothing when that path or an ancestor is recorded already (the record keeps the first value)."""
    fields = path.split(".")
    if any(".".join(fields[:depth]) in recorded_paths for depth in range(1, len(fields) + 1)):
        return {}
    for depth in range(1, len(fields)):
        if _get(spec, ".".join(fields[:depth])) is None:
            return {".".join(fields[:depth]): None}
    return {path: _get(spec, path)}


def plan_monitoring(policy, dcgm_exporter=None, service_monitor=None):
    """The policy patch for the fields given (None: leave it), with the diff of what they show."""
    spec = policy.get("spec") or {}
    wanted = dict(
        (path, value)
        for path, value in ((DCGM_EXPORTER_FIELD, dcgm_exporter), (SERVICE_MONITOR_FIELD, service_monitor))
        if value is not None
    )
    plan = ObjectWrites()
    patch, previous, warnings = {}, {}, []
    for path, value in sorted(wanted.items()):
        current = _get(spec, path)
        effective = DEFAULTS[path] if current is None else current
        plan.before[path] = effective
        plan.after[path] = value
        if effective != value:
            _merge(patch, _nested(path, value))
            previous.update(_record_of(spec, path, read_record(policy).get("spec") or {}))
    if service_monitor and dcgm_exporter is False:
        warnings.append("The ServiceMonitor scrapes the DCGM exporter, which this task switches off.")
    elif service_monitor and dcgm_exporter is None and _get(spec, DCGM_EXPORTER_FIELD) is False:
        warnings.append("The ServiceMonitor scrapes the DCGM exporter, which the ClusterPolicy has switched off.")
    if patch:
        plan.policy_patch = recorded(policy, {"spec": patch}, "spec", previous)
    plan.warnings = warnings
    return plan
