# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles the collection ships (roles/rbac/files/, docs/RBAC.md), as data: what a refused access's message names
as the role granting it (``errors.access_hint``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The roles roles/rbac/files/ ships (docs/RBAC.md), as (kind, name, ("<API group> <resource>: <verbs>", ...)),
# "core" for the core group; the 403 message names the ones granting what was refused.
# tests/unit/plugins/module_utils/test_errors.py checks this table against those files; errors.access_hint
# reads it.
RBAC_ROLES = (
    (
        "ClusterRole",
        "gpushare-viewer",
        (
            "core nodes: list watch",
            "core pods: list watch",
            "core events: list watch",
            "core namespaces: get",
            "core resourcequotas: get list",
            "apps daemonsets: get list watch",
            "apps deployments: get list watch",
            "nvidia.com clusterpolicies: list",
            "machine.openshift.io machinesets: list",
            "machine.openshift.io machines: list",
            "autoscaling.openshift.io machineautoscalers: list",
            "autoscaling.openshift.io clusterautoscalers: list",
        ),
    ),
    (
        "ClusterRole",
        "gpushare-sharing",
        ("core nodes: patch", "core pods/eviction: create", "nvidia.com clusterpolicies: patch"),
    ),
    (
        "ClusterRole",
        "gpushare-readiness",
        (
            "nvidia.com clusterpolicies: patch",
            "core resourcequotas: create patch delete",
            "core pods: create delete",
            "apps deployments: create delete",
            "machine.openshift.io machinesets: patch",
            "machine.openshift.io machines: patch",
            "autoscaling.openshift.io machineautoscalers: create patch",
            "autoscaling.openshift.io clusterautoscalers: patch",
            "core nodes: patch",
        ),
    ),
    ("Role", "gpushare-viewer", ("core configmaps: get list", "core secrets: get")),
    ("Role", "gpushare-sharing", ("core configmaps: create patch delete", "apps daemonsets: patch")),
    (
        "Role",
        "gpushare-readiness",
        ("core secrets: create patch delete", "core configmaps: create patch delete", "apps daemonsets: patch"),
    ),
    ("Role", "gpushare-diagnostics", ("core pods/exec: get create",)),
)


def rbac_grants():
    """The shipped roles' rules as (kind, role, API group, resource, verb), "" for the core group, in table order."""
    grants = []
    for kind, role, rules in RBAC_ROLES:
        for rule in rules:
            target, verbs = rule.split(": ")
            group, resource = target.split(" ")
            for verb in verbs.split():
                grants.append((kind, role, "" if group == "core" else group, resource, verb))
    return grants
