# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/restore_record: the gpushare.k8s/restore annotation keeps the pre-collection value of each field;
``restore_patch`` puts it back, ``keys_created_by_collection`` names what the collection added."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from k8s_objects import (
    CONFIG_MAP,
    annotations_of,
    cluster_policy,
    config_map,
    created_config_map,
    labels_of,
    merge_patch,
    t4_node,
)
from reset_history import LABEL

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import (
    RESTORE_ANNOTATION,
    created_record,
    keys_created_by_collection,
    read_record,
    record_patch,
    restore_patch,
)


def test_keys_created_by_collection():
    assert keys_created_by_collection(created_config_map({"a": "1", "b": "2"}, created_record())) == {"a", "b"}
    recorded_cm = config_map({"ours": "x", "changed": "y", "users": "z"})
    recorded_cm["metadata"]["annotations"] = record_patch(recorded_cm, "data", {"ours": None, "changed": "old"})
    assert keys_created_by_collection(recorded_cm) == {"ours"}
    assert keys_created_by_collection(config_map({"users": "z"})) == set()
    assert keys_created_by_collection(None) == set()


def test_restore_patch_without_record_or_for_a_created_object_is_none():
    assert restore_patch(t4_node("t4-a")) is None
    assert restore_patch(created_config_map({"a": "1"}, created_record())) is None


def test_restore_patch_puts_labels_and_data_back_and_drops_the_record():
    node = t4_node("t4-a", config="ts")
    node["metadata"]["annotations"][RESTORE_ANNOTATION] = record_patch(node, "labels", {LABEL: None})[
        RESTORE_ANNOTATION
    ]
    patch = restore_patch(node)
    restored = merge_patch(node, patch)
    assert LABEL not in labels_of(restored)
    assert RESTORE_ANNOTATION not in annotations_of(restored)
    assert annotations_of(restored)["node.alpha.kubernetes.io/ttl"] == "0", "other annotations are kept"


def test_restore_patch_replaces_a_recorded_spec_field_exactly():
    policy = cluster_policy(config_name="users-cm", default="users-key")
    record = record_patch(policy, "spec", {"devicePlugin.config": {"name": "users-cm", "default": "users-key"}})
    changed = merge_patch(
        policy,
        {
            "metadata": {"annotations": record},
            "spec": {"devicePlugin": {"config": {"name": CONFIG_MAP, "default": "ts", "extra": 1}}},
        },
    )
    restored = merge_patch(changed, restore_patch(changed))
    assert restored["spec"] == policy["spec"]
    assert RESTORE_ANNOTATION not in annotations_of(restored)


def test_restore_patch_removes_a_field_that_was_absent():
    policy = cluster_policy()
    record = record_patch(policy, "spec", {"devicePlugin.config": None})
    changed = merge_patch(
        policy,
        {
            "metadata": {"annotations": record},
            "spec": {"devicePlugin": {"config": {"name": CONFIG_MAP, "default": "ts"}}},
        },
    )
    assert merge_patch(changed, restore_patch(changed))["spec"] == policy["spec"]


def with_record(obj, text):
    obj["metadata"].setdefault("annotations", {})[RESTORE_ANNOTATION] = text
    return obj


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(None, id="no-object"),
        pytest.param({}, id="empty-dict"),
        pytest.param({"metadata": {"name": "x", "annotations": None}}, id="annotations-null"),
        pytest.param(t4_node("t4-a"), id="no-annotation"),
        pytest.param(with_record(t4_node("t4-a"), ""), id="empty-string"),
        pytest.param(with_record(t4_node("t4-a"), "{not json"), id="garbage"),
        pytest.param(with_record(t4_node("t4-a"), '["labels"]'), id="json-list"),
        pytest.param(with_record(t4_node("t4-a"), '"labels"'), id="json-string"),
        pytest.param(with_record(t4_node("t4-a"), "null"), id="json-null"),
    ],
)
def test_read_record_of_missing_or_garbage_annotation(obj):
    assert read_record(obj) == {}


def test_read_record():
    record = {"labels": {"nvidia.com/device-plugin.config": None, "nvidia.com/mig.config": "all-disabled"}}
    assert read_record(with_record(t4_node("t4-a"), json.dumps(record))) == record


def test_record_patch_on_a_fresh_object():
    patch = record_patch(t4_node("t4-a"), "labels", {"nvidia.com/device-plugin.config": None})
    assert patch == {RESTORE_ANNOTATION: '{"labels": {"nvidia.com/device-plugin.config": null}}'}


def test_record_patch_keeps_first_values():
    node = t4_node("t4-a", config="hand-made")
    node = merge_patch(
        node,
        {"metadata": {"annotations": record_patch(node, "labels", {"nvidia.com/device-plugin.config": "hand-made"})}},
    )
    # Our own value later must never replace the recorded one; nothing new means no write at all.
    assert record_patch(node, "labels", {"nvidia.com/device-plugin.config": "t4"}) == {}
    # A new field joins the record; the recorded one is kept as it was.
    patch = record_patch(
        node, "labels", {"nvidia.com/device-plugin.config": "t4", "nvidia.com/mig.config": "all-disabled"}
    )
    assert json.loads(patch[RESTORE_ANNOTATION]) == {
        "labels": {"nvidia.com/device-plugin.config": "hand-made", "nvidia.com/mig.config": "all-disabled"}
    }


def test_record_patch_keeps_a_recorded_null():
    node = with_record(t4_node("t4-a", config="t4"), json.dumps({"labels": {"nvidia.com/device-plugin.config": None}}))
    assert record_patch(node, "labels", {"nvidia.com/device-plugin.config": "t4"}) == {}


def test_record_patch_keeps_other_sections():
    cm = config_map({"t4": "old"}, annotations={RESTORE_ANNOTATION: json.dumps({"created": True}), "owner": "someone"})
    patch = record_patch(cm, "data", {"t4": "old"})
    assert list(patch) == [RESTORE_ANNOTATION]
    assert json.loads(patch[RESTORE_ANNOTATION]) == {"created": True, "data": {"t4": "old"}}


def test_record_patch_replaces_a_garbage_record():
    node = with_record(t4_node("t4-a"), "{not json")
    assert json.loads(record_patch(node, "labels", {"a": None})[RESTORE_ANNOTATION]) == {"labels": {"a": None}}


def test_record_patch_does_not_modify_its_input():
    node = with_record(t4_node("t4-a"), json.dumps({"labels": {"a": "1"}}))
    before = json.dumps(node, sort_keys=True)
    record_patch(node, "labels", {"b": "2"})
    assert json.dumps(node, sort_keys=True) == before


def test_created_record():
    assert created_record() == {RESTORE_ANNOTATION: '{"created": true}'}
    assert read_record({"metadata": {"annotations": created_record()}}) == {"created": True}
