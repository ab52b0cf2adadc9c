# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one result builder: what every changing module returns about the operator, the plan's diff and
each node before and after; and the tail of the runners that neither drain nor wait (warn, result, write unless in
check mode)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import node_summary
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned, write_replanning


def plan_result(planned, **fields):
    """``changed`` and ``diff`` of ``planned.plan``, the operator's ``cluster_policy`` and ``namespace`` when the plan
    has one, plus ``fields``."""
    plan = planned.plan
    result = dict(changed=plan.changed)
    if planned.operator is not None:
        result.update(cluster_policy=planned.operator.policy_name, namespace=planned.operator.namespace)
    result.update(diff=dict(before=plan.before, after=plan.after))
    result.update(fields)
    return result


def new_result(operator, plan, fleet, node_names, **fields):
    """``plan_result`` with ``nodes`` (each with ``before``), for the runners that change nodes."""
    nodes = dict((name, dict(before=node_summary(fleet.nodes[name]))) for name in sorted(node_names))
    return plan_result(Planned(operator, plan), nodes=nodes, **fields)


def report_and_write(module, planned, read_and_plan, **fields):
    """The tail of a runner that neither drains nor waits: warn the plan's warnings, build ``plan_result``, and
    unless in check mode write what changes through ``write_replanning`` (every such plan writes on the version it
    read, or creates what another run may create first, so a 409 means read and plan again)."""
    for warning in planned.plan.warnings:
        module.ansible.warn(warning)
    result = plan_result(planned, **fields)
    if planned.plan.changed and not module.check_mode:
        write_replanning(module.kube, planned, read_and_plan)
    return result


def record_after(result, fleet, final_nodes):
    """Add each waited-for node's ``after`` summary (``final_nodes``: name -> node dict) and whether it rebooted since
    ``fleet`` was read: its kubelet's boot ID changed (mig-manager with ``WITH_REBOOT=true`` reboots a node whose GPUs
    cannot change MIG mode in place)."""
    for name, node in final_nodes.items():
        entry = result["nodes"].setdefault(name, {})
        entry["after"] = node_summary(node)
        before = _boot_id(fleet.nodes.get(name))
        entry["rebooted"] = bool(before) and before != _boot_id(node)


def _boot_id(node):
    return (((node or {}).get("status") or {}).get("nodeInfo") or {}).get("bootID")
