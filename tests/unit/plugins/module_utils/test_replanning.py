# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restore record under concurrent runs, what needs no API server: a patch changing the record carries the
resourceVersion it was planned from, one keeping it does not, and a node relabelled by a later writer is not waited
for. ``write_replanning``'s re-plan on a 409 runs against the real API server in
tests/integration/test_replanning.py, and ten modules at once in tests/integration/test_concurrency.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import device_plugin_config_patch, recorded
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import (
    RESTORE_ANNOTATION,
    restore_patch,
)


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


def test_a_node_relabelled_after_this_tasks_write_is_not_waited_for():
    from ansible_collections.gpushare.k8s.plugins.module_utils.run.sharing import _unless_relabelled

    label = "nvidia.com/device-plugin.config"

    def node(version, value):
        return {"metadata": {"name": "n", "resourceVersion": str(version), "labels": {label: value}}}

    superseded = set()
    check = _unless_relabelled(lambda node: "not yet", "mine", "20", superseded, "n")
    # The watch replays what happened since the planning read: another run's label before this task's write
    # (version 15 < 20) is not a later writer's, so the task still waits.
    assert check(node(15, "theirs")) == "not yet" and superseded == set()
    assert check(node(20, "mine")) == "not yet"
    # Relabelled after this task's write: the later writer's profile stands, the node is no longer waited for.
    assert check(node(31, "theirs")) is None and superseded == {"n"}
    # A version that is not a number never counts as later.
    assert _unless_relabelled(lambda node: "not yet", "mine", "x", set(), "n")(node(31, "theirs")) == "not yet"
