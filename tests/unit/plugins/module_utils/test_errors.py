# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The 403 message (errors.forbidden_hint through error_from_exception): the verb, the resource and the shipped
role that grants them; and rbac.RBAC_ROLES equal to the manifests roles/rbac/files/ ships."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import error_from_exception, forbidden_hint
from ansible_collections.gpushare.k8s.plugins.module_utils.rbac import RBAC_ROLES, rbac_grants

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
RBAC_FILES = [os.path.join(ROOT, "roles", "rbac", "files", name) for name in ("clusterroles.yml", "roles.yml")]


def shipped_grants():
    grants = set()
    for path in RBAC_FILES:
        with open(path) as stream:
            for document in yaml.safe_load(stream)["items"]:
                for rule in document["rules"]:
                    for group in rule["apiGroups"]:
                        for resource in rule["resources"]:
                            for verb in rule["verbs"]:
                                grants.add((document["kind"], document["metadata"]["name"], group, resource, verb))
    return grants


def test_the_403_table_is_what_the_collection_ships():
    assert set(rbac_grants()) == shipped_grants()
    assert len(rbac_grants()) == len(set(rbac_grants()))  # no rule listed twice
    assert [name for _kind, name, _rules in RBAC_ROLES][:3] == [
        "gpushare-viewer",
        "gpushare-sharing",
        "gpushare-readiness",
    ]


def test_the_viewer_roles_only_read():
    assert {verb for _k, role, _g, _r, verb in shipped_grants() if role == "gpushare-viewer"} <= {
        "get",
        "list",
        "watch",
    }


class Forbidden(Exception):
    """The shape of kubernetes' ApiException for a 403 (status, reason, body)."""

    def __init__(self, message):
        super(Forbidden, self).__init__(message)
        self.status = 403
        self.reason = "Forbidden"
        self.body = json.dumps({"kind": "Status", "code": 403, "reason": "Forbidden", "message": message})


NODES = (
    'nodes "gpu-t4-0" is forbidden: User "system:serviceaccount:default:ops" cannot patch resource "nodes" in API '
    'group "" at the cluster scope'
)


def test_a_refused_node_patch_names_the_verb_the_resource_and_the_roles():
    error = error_from_exception("patch node gpu-t4-0", Forbidden(NODES))
    assert error.status == 403 and error.reason == "Forbidden"
    assert error.msg == (
        "Failed to patch node gpu-t4-0: %s (HTTP 403). The identity lacks 'patch' on 'nodes'; bind the "
        "gpushare-sharing ClusterRole or the gpushare-readiness ClusterRole (docs/RBAC.md)" % NODES
    )


@pytest.mark.parametrize(
    "message, hint",
    [
        (
            'User "u" cannot list resource "clusterpolicies" in API group "nvidia.com" at the cluster scope',
            "The identity lacks 'list' on 'clusterpolicies.nvidia.com'; bind the gpushare-viewer ClusterRole",
        ),
        (
            'User "u" cannot create resource "configmaps" in API group "" in the namespace "gpu-operator"',
            "The identity lacks 'create' on 'configmaps'; bind the gpushare-sharing Role in namespace gpu-operator "
            "or the gpushare-readiness Role in namespace gpu-operator",
        ),
        (
            'User "u" cannot create resource "pods/eviction" in API group "" in the namespace "ml"',
            "The identity lacks 'create' on 'pods/eviction'; bind the gpushare-sharing ClusterRole",
        ),
        (
            'User "u" cannot get resource "pods/exec" in API group "" in the namespace "gpu-operator"',
            "The identity lacks 'get' on 'pods/exec'; bind the gpushare-diagnostics Role in namespace gpu-operator",
        ),
        (
            'User "u" cannot deletecollection resource "nodes" in API group "" at the cluster scope',
            "The identity lacks 'deletecollection' on 'nodes'; no role of gpushare.k8s grants it",
        ),
    ],
)
def test_the_hint_names_the_role_granting_the_refused_verb(message, hint):
    assert forbidden_hint(message) == hint + " (docs/RBAC.md)"


def test_other_answers_get_no_hint():
    assert forbidden_hint("admission webhook denied the request") is None
    not_found = Forbidden(NODES)
    not_found.status = 404
    assert "lacks" not in error_from_exception("patch node gpu-t4-0", not_found).msg
