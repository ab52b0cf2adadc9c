# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/objects: a patch changing the restore record carries the resourceVersion it was planned from, one keeping
it does not; the device-plugin pair always does. ``write_replanning``'s re-plan on a 409 runs against the real API
server in tests/integration/test_replanning.py, and ten modules at once in tests/integration/test_concurrency.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import device_plugin_config_patch, recorded
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import RESTORE_ANNOTATION, restore_patch


def config_map(data, record=None):
    annotations = {"owner": "team-a"}
    if record is not None:
        annotations[RESTORE_ANNOTATION] = json.dumps(record)
    return {
        "metadata": {
            "name": "profiles",
            "namespace": "gpu-operator",
            "resourceVersion": "10",
            "annotations": annotations,
        },
        "data": data,
    }


def test_a_record_change_is_made_on_the_version_read_and_a_kept_record_is_not():
    first = recorded(config_map({}), {"data": {"a": "1"}}, "data", {"a": None})
    assert first["metadata"]["resourceVersion"] == "10"
    # Already recorded: no annotation, and no precondition (other writers' changes cannot be lost by it).
    again = recorded(config_map({"a": "1"}, {"data": {"a": None}}), {"data": {"a": "2"}}, "data", {"a": "1"})
    assert again == {"data": {"a": "2"}}
    assert restore_patch(config_map({"a": "1"}, {"data": {"a": None}}))["metadata"]["resourceVersion"] == "10"


def test_the_device_plugin_pair_is_always_made_on_the_version_read():
    policy = {
        "metadata": {
            "name": "p",
            "resourceVersion": "7",
            "annotations": {RESTORE_ANNOTATION: json.dumps({"spec": {"devicePlugin.config": None}})},
        },
        "spec": {},
    }
    patch = device_plugin_config_patch(policy, "profiles", "ts-4")
    assert patch["metadata"] == {"resourceVersion": "7"}  # record kept, but the pair is written whole
