# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/reset: reset to unshared (labels, the policy's default, the collection's unused keys, MIG off), on
API-shaped objects."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import (
    CONFIG_MAP,
    NAMESPACE,
    a100_node,
    annotations_of,
    cluster_policy,
    cpu_node,
    merge_patch,
    t4_node,
    t4_time_sliced,
)
from reset_history import LABEL, MIG_LABEL, MPS2, TS4, Cluster, user_cluster

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.reset import UNSHARED_KEY, mig_enabled_nodes, plan_reset


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
