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


def record_after(result, final_nodes):
    """Add each waited-for node's ``after`` summary (``final_nodes``: name -> node dict)."""
    for name, node in final_nodes.items():
        result["nodes"].setdefault(name, {})["after"] = node_summary(node)
