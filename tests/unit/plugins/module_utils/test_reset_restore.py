# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_reset, plan_restore and their helpers (restore_patch, apply_merge_patch, keys_created_by_collection),
on API-shaped objects, including a long history of changes that restore must undo exactly."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest
from k8s_objects import (
    CONFIG_MAP,
    NAMESPACE,
    a100_node,
    annotations_of,
    cluster_policy,
    config_map,
    cpu_node,
    created_config_map,
    labels_of,
    merge_patch,
    t4_node,
    t4_time_sliced,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import build_sharing_config
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigRequest, plan_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.reset import (
    UNSHARED_KEY,
    mig_enabled_nodes,
    plan_reset,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore import apply_merge_patch, plan_restore
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import (
    RESTORE_ANNOTATION,
    created_record,
    keys_created_by_collection,
    record_patch,
    restore_patch,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import SharingRequest, plan_profile

LABEL = "nvidia.com/device-plugin.config"
MIG_LABEL = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
TS4 = build_sharing_config("time-slicing", 4)
MPS2 = build_sharing_config("mps", 2)
MIG_CONFIG_MAP = "default-mig-parted-config"
SHIPPED_MIG = config_map(
    {
        "config.yaml": "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
        "  all-1g.5gb:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        1g.5gb: 7\n"
    },
    name=MIG_CONFIG_MAP,
)


class Cluster(object):
    """The objects the planners read, changed the way the one writer and the API server change them."""

    def __init__(self, policy, config_maps, nodes):
        self.policy = policy
        self.config_maps = dict((cm["metadata"]["name"], cm) for cm in config_maps)
        self.nodes = dict((node["metadata"]["name"], node) for node in nodes)

    def node_list(self):
        return [copy.deepcopy(node) for node in self.nodes.values()]

    def apply(self, plan):
        for name, data in plan.config_map_creates.items():
            assert name not in self.config_maps
            self.config_maps[name] = created_config_map(data, created_record(), name=name)
        for name, patch in plan.config_map_patches.items():
            self.config_maps[name] = merge_patch(self.config_maps[name], patch)
        if plan.policy_patch:
            self.policy = merge_patch(self.policy, plan.policy_patch)
        for name, patch in plan.node_patches.items():
            self.nodes[name] = merge_patch(self.nodes[name], patch)
        for name in plan.config_map_deletes:
            del self.config_maps[name]
        return plan

    def profile(self, state, key, config=None, node_names=None, make_default=False):
        request = SharingRequest(
            state, key, CONFIG_MAP, config=config, node_names=node_names, make_default=make_default
        )
        cm = copy.deepcopy(self.config_maps.get(CONFIG_MAP))
        return self.apply(plan_profile(request, NAMESPACE, copy.deepcopy(self.policy), cm, self.node_list()))

    def reset(self, **kwargs):
        cm = copy.deepcopy(self.config_maps.get(CONFIG_MAP))
        return self.apply(plan_reset(NAMESPACE, CONFIG_MAP, copy.deepcopy(self.policy), cm, self.node_list(), **kwargs))

    def mig(self, request):
        active = copy.deepcopy(self.config_maps.get(MIG_CONFIG_MAP))
        return self.apply(plan_mig(request, copy.deepcopy(self.policy), active, None, self.node_list(), NAMESPACE))

    def restore(self):
        return self.apply(
            plan_restore(copy.deepcopy(self.policy), list(copy.deepcopy(self.config_maps).values()), self.node_list())
        )

    def snapshot(self):
        return copy.deepcopy((self.policy, self.config_maps, self.nodes))


def user_cluster():
    """A cluster a user prepared by hand: their own key in the device-plugin ConfigMap, their own labels and
    annotations on nodes, a policy that already names the ConfigMap."""
    t4 = t4_node("t4-a", annotations={"team": "vision"})
    t4["metadata"]["labels"]["pool"] = "inference"
    return Cluster(
        cluster_policy(config_name=CONFIG_MAP),
        [config_map({"users-own-key": "version: v1\n"}, annotations={"owner": "platform"}), copy.deepcopy(SHIPPED_MIG)],
        [t4, t4_node("t4-b"), a100_node("a100-a"), cpu_node("cpu-1")],
    )


# --- apply_merge_patch ---------------------------------------------------------------------------


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


# --- keys_created_by_collection --------------------------------------------------------------------


def test_keys_created_by_collection():
    assert keys_created_by_collection(created_config_map({"a": "1", "b": "2"}, created_record())) == {"a", "b"}
    recorded_cm = config_map({"ours": "x", "changed": "y", "users": "z"})
    recorded_cm["metadata"]["annotations"] = record_patch(recorded_cm, "data", {"ours": None, "changed": "old"})
    assert keys_created_by_collection(recorded_cm) == {"ours"}
    assert keys_created_by_collection(config_map({"users": "z"})) == set()
    assert keys_created_by_collection(None) == set()


# --- restore_patch ---------------------------------------------------------------------------------


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


# --- plan_reset --------------------------------------------------------------------------------------


def test_reset_of_every_node_removes_labels_and_the_policy_default():
    cluster = user_cluster()
    cluster.profile("present", "ts", TS4, make_default=True, node_names=["t4-b"])
    plan = cluster.reset()
    assert sorted(plan.expectations) == ["a100-a", "t4-a", "t4-b"]
    assert plan.node_patches["t4-b"]["metadata"]["labels"] == {LABEL: None}
    assert plan.policy_patch["spec"]["devicePlugin"]["config"] == {"name": CONFIG_MAP, "default": None}
    assert plan.restart
    assert all(expectation.method is None for expectation in plan.expectations.values())


def test_reset_of_some_nodes_points_them_at_unshared_when_the_default_shares():
    cluster = user_cluster()
    cluster.profile("present", "ts", TS4, make_default=True)
    plan = cluster.reset(node_names=["t4-a"])
    assert plan.node_patches["t4-a"]["metadata"]["labels"] == {LABEL: UNSHARED_KEY}
    assert plan.config_map_patch["data"] == {UNSHARED_KEY: dump_config({"version": "v1"})}
    assert plan.policy_patch is None
    assert sorted(plan.expectations) == ["t4-a"]


def test_reset_refuses_an_unknown_config_key_and_unknown_nodes():
    cluster = user_cluster()
    with pytest.raises(GpuShareError, match="config_key 'nope' is not a key of ConfigMap"):
        cluster.reset(config_key="nope")
    with pytest.raises(GpuShareError, match="Node.s. not found: ghost"):
        cluster.reset(node_names=["ghost"])


def test_reset_remove_profiles_removes_only_the_collections_unused_keys():
    cluster = user_cluster()
    cluster.profile("present", "ts", TS4, node_names=["t4-a"])
    cluster.profile("present", "mps", MPS2, node_names=["t4-b"])
    plan = cluster.reset(node_names=["t4-a"], remove_profiles=True)
    assert plan.config_map_patch["data"] == {"ts": None}, "mps is still used by t4-b; users-own-key is the user's"


def test_reset_twice_writes_nothing_the_second_time():
    cluster = Cluster(cluster_policy(), [], [t4_time_sliced("t4-a", 4, config="ts"), cpu_node("cpu-1")])
    cluster.reset()
    # What the device plugin shows once it applied the reset.
    cluster.nodes["t4-a"] = merge_patch(
        t4_node("t4-a"), {"metadata": {"annotations": annotations_of(cluster.nodes["t4-a"])}}
    )
    second = cluster.reset()
    assert not second.changed
    assert second.changing_nodes(Fleet(cluster.node_list())) == []


def test_changing_nodes_are_the_relabelled_and_the_not_yet_unshared():
    nodes = [t4_time_sliced("t4-a", 4), t4_node("t4-b"), t4_time_sliced("t4-c", 2, config="ts")]
    plan = plan_reset(NAMESPACE, CONFIG_MAP, cluster_policy(), None, nodes)
    assert plan.changing_nodes(Fleet(nodes)) == [
        "t4-a",
        "t4-c",
    ], "t4-b is unshared already: its pods are not in the way"


def test_mig_enabled_nodes():
    nodes = [
        a100_node("a100-a"),
        merge_patch(a100_node("a100-b"), {"metadata": {"labels": {MIG_LABEL: "all-1g.5gb"}}}),
        t4_node("t4-a"),
    ]
    assert mig_enabled_nodes(nodes, ["a100-a", "a100-b", "t4-a"]) == ["a100-b"]
    assert mig_enabled_nodes(nodes, ["a100-a"]) == []


# --- plan_restore ----------------------------------------------------------------------------------


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
