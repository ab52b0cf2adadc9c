# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one result builder: what every changing module returns about the operator, the plan's diff and
each node before and after."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import node_summary


def new_result(operator, plan, fleet, node_names, **fields):
    """``changed``, ``cluster_policy``, ``namespace``, ``diff`` and ``nodes`` (each with ``before``), plus
    ``fields``."""
    result = dict(
        changed=plan.changed,
        cluster_policy=operator.policy_name,
        namespace=operator.namespace,
        diff=dict(before=plan.before, after=plan.after),
        nodes=dict((name, dict(before=node_summary(fleet.nodes[name]))) for name in sorted(node_names)),
    )
    result.update(fields)
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
