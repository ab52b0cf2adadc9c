# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/restore: ``apply_merge_patch`` (RFC 7386, as the API server merges) and ``plan_restore``, including a long
history of changes that restore must undo exactly."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import (
    CONFIG_MAP,
    a100_node,
    annotations_of,
    cluster_policy,
    config_map,
    labels_of,
    merge_patch,
    t4_node,
)
from reset_history import MIG_LABEL, MIG_STATE, MPS2, TS4, Cluster, user_cluster

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import build_sharing_config
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigRequest
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore import apply_merge_patch, plan_restore
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import RESTORE_ANNOTATION


def test_apply_merge_patch_follows_rfc_7386():
    target = {"a": {"b": 1, "c": 2}, "d": [1, 2], "e": "x"}
    assert apply_merge_patch(target, {"a": {"b": None, "f": 3}, "d": [3], "e": None}) == {
        "a": {"c": 2, "f": 3},
        "d": [3],
    }
    assert apply_merge_patch(target, "scalar") == "scalar"
    assert apply_merge_patch(None, {"a": {"b": 1}}) == {"a": {"b": 1}}
    assert target == {"a": {"b": 1, "c": 2}, "d": [1, 2], "e": "x"}, "the target is not changed in place"


def test_apply_merge_patch_agrees_with_the_api_servers_merge():
    node = a100_node("a100-a")
    patch = {"metadata": {"labels": {MIG_LABEL: "all-1g.5gb", MIG_STATE: None}, "annotations": {"x": "1"}}}
    assert apply_merge_patch(node, patch) == merge_patch(node, patch)


def test_restore_after_a_long_history_leaves_every_object_as_it_was():
    cluster = user_cluster()
    before = cluster.snapshot()
    cluster.profile("present", "everyone", TS4, make_default=True)
    cluster.profile("present", "mps", MPS2, node_names=["t4-b"])
    cluster.profile("present", "everyone", build_sharing_config("time-slicing", 8), make_default=True)
    cluster.profile("absent", "mps", node_names=["t4-b"])
    cluster.reset(node_names=["t4-a"], remove_profiles=True)
    cluster.mig(MigRequest(["a100-a"], config="all-1g.5gb", strategy="mixed"))
    assert cluster.snapshot() != before

    plan = cluster.restore()
    assert plan.changed and plan.restart
    assert plan.mig_changes == {"a100-a": "all-disabled"}
    assert (
        plan.node_patches["a100-a"]["metadata"]["labels"][MIG_STATE] is None
    ), "the old state must not pass for the new one"
    policy, config_maps, nodes = cluster.snapshot()
    old_policy, old_config_maps, old_nodes = before
    assert policy["spec"] == old_policy["spec"]
    assert annotations_of(policy) == annotations_of(old_policy)
    assert dict((n, (cm["data"], annotations_of(cm))) for n, cm in config_maps.items()) == dict(
        (n, (cm["data"], annotations_of(cm))) for n, cm in old_config_maps.items()
    )
    for name, node in nodes.items():
        old = old_nodes[name]
        assert annotations_of(node) == annotations_of(old), name
        labels, old_labels = labels_of(node), labels_of(old)
        assert dict((k, v) for k, v in labels.items() if k != MIG_STATE) == dict(
            (k, v) for k, v in old_labels.items() if k != MIG_STATE
        ), name

    assert not cluster.restore().changed, "a second restore finds nothing to do"


def test_restore_deletes_a_config_map_the_collection_created():
    cluster = Cluster(cluster_policy(), [], [t4_node("t4-a")])
    cluster.profile("present", "ts", TS4, node_names=["t4-a"])
    assert cluster.config_maps[CONFIG_MAP]["metadata"]["annotations"][RESTORE_ANNOTATION]
    plan = cluster.restore()
    assert plan.config_map_deletes == [CONFIG_MAP]
    assert plan.policy_patch["spec"]["devicePlugin"]["config"] is None
    assert CONFIG_MAP not in cluster.config_maps


def test_restore_expects_the_profile_of_a_config_map_it_never_changed():
    """The restored policy may name the user's own ConfigMap, unrecorded: its default is what nodes get."""
    users = config_map({"users-default": dump_config(TS4)}, name="users-cm")
    cluster = Cluster(cluster_policy(config_name="users-cm", default="users-default"), [users], [t4_node("t4-a")])
    cluster.profile("present", "mine", MPS2, node_names=["t4-a"])
    plan = plan_restore(cluster.policy, list(cluster.config_maps.values()), cluster.node_list())
    assert plan.expectations["t4-a"].method == "time-slicing"
    assert plan.expectations["t4-a"].replicas == {"nvidia.com/gpu": 4}


def test_restore_refuses_a_mig_change_on_a_node_still_busy_with_the_last_one():
    cluster = user_cluster()
    cluster.mig(MigRequest(["a100-a"], config="all-1g.5gb"))
    cluster.nodes["a100-a"] = merge_patch(cluster.nodes["a100-a"], {"metadata": {"labels": {MIG_STATE: "pending"}}})
    with pytest.raises(GpuShareError, match="a100-a: their previous MIG change is still in progress|node.s. a100-a"):
        cluster.restore()


def test_restore_with_nothing_recorded_changes_nothing():
    cluster = user_cluster()
    plan = cluster.restore()
    assert not plan.changed and not plan.restart
