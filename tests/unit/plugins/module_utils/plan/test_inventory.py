# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/inventory: toleration matching, profiles of a ConfigMap and gpu_info's findings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from k8s_objects import (
    CONFIG_MAP,
    GPU_CONTAINER,
    GPU_TAINT,
    GPU_TOLERATION,
    a100_node,
    cluster_policy,
    config_map,
    container,
    cpu_node,
    node,
    pod,
    t4_node,
    t4_time_sliced,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import build_sharing_config
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import (
    build_inventory,
    describe_device_plugin_profiles,
    tolerates,
    untolerated_taints,
)

DEDICATED_TAINT = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    "toleration, taint, expected",
    [
        pytest.param({"operator": "Exists"}, DEDICATED_TAINT, True, id="exists-without-key-matches-all"),
        pytest.param(
            {"operator": "Exists"}, {"key": "x", "effect": "NoExecute"}, True, id="exists-without-key-any-effect"
        ),
        pytest.param({"key": "dedicated", "operator": "Exists"}, DEDICATED_TAINT, True, id="exists-with-key"),
        pytest.param({"key": "other", "operator": "Exists"}, DEDICATED_TAINT, False, id="exists-other-key"),
        pytest.param(
            {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
            DEDICATED_TAINT,
            True,
            id="exists-same-effect",
        ),
        pytest.param(
            {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
            DEDICATED_TAINT,
            False,
            id="exists-other-effect",
        ),
        pytest.param(
            {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
            DEDICATED_TAINT,
            True,
            id="equal-value",
        ),
        pytest.param({"key": "dedicated", "value": "ml"}, DEDICATED_TAINT, True, id="equal-is-the-default-operator"),
        pytest.param(
            {"key": "dedicated", "operator": "Equal", "value": "batch"}, DEDICATED_TAINT, False, id="equal-other-value"
        ),
        pytest.param({"key": "dedicated", "operator": "Equal"}, DEDICATED_TAINT, False, id="equal-missing-value"),
        pytest.param(
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": ""},
            {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
            True,
            id="equal-empty-value-matches-valueless-taint",
        ),
        pytest.param(GPU_TOLERATION, GPU_TAINT, True, id="chart-default-gpu-toleration"),
    ],
)
def test_tolerates(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_untolerated_taints():
    taints = [
        GPU_TAINT,
        DEDICATED_TAINT,
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"},
        {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    ]
    assert untolerated_taints(taints, [GPU_TOLERATION]) == [taints[1], taints[2]]
    assert (
        untolerated_taints(
            taints,
            [
                GPU_TOLERATION,
                {"key": "dedicated", "operator": "Exists"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
            ],
        )
        == []
    )
    assert untolerated_taints(taints, [{"operator": "Exists"}]) == []
    # PreferNoSchedule never keeps a pod off a node.
    assert untolerated_taints([taints[3]], []) == []
    assert untolerated_taints(None, None) == []
    assert untolerated_taints([GPU_TAINT], None) == [GPU_TAINT]


def test_describe_profiles():
    cm = config_map(
        {
            "t4": dump_config(build_sharing_config("time-slicing", 4)),
            "a100-mps": dump_config(build_sharing_config("mps", 10, rename_by_default=True)),
            "mig": dump_config(
                build_sharing_config(
                    "time-slicing",
                    2,
                    resources=["nvidia.com/mig-1g.10gb", {"name": "nvidia.com/mig-3g.40gb", "replicas": 3}],
                    mig_strategy="mixed",
                )
            ),
            "plain": "version: v1\nflags:\n  migStrategy: none\n",
            "broken": "version: v1\nsharing:\n  timeSlicing: [oops",
        }
    )
    profiles = describe_device_plugin_profiles(cm)
    assert list(profiles) == ["a100-mps", "broken", "mig", "plain", "t4"]
    assert profiles["t4"] == {"method": "time-slicing", "rename_by_default": False, "resources": {"nvidia.com/gpu": 4}}
    assert profiles["a100-mps"] == {"method": "mps", "rename_by_default": True, "resources": {"nvidia.com/gpu": 10}}
    assert profiles["mig"]["resources"] == {"nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-3g.40gb": 3}
    assert profiles["plain"] == {"method": "none", "rename_by_default": False, "resources": {}}
    assert list(profiles["broken"]) == ["error"]
    assert profiles["broken"]["error"].startswith("key broken is not valid YAML")


@pytest.mark.parametrize(
    "cm", [None, config_map({}), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP}}]
)
def test_describe_profiles_of_nothing(cm):
    assert describe_device_plugin_profiles(cm) == {}


def test_describe_profiles_wrong_version():
    profiles = describe_device_plugin_profiles(config_map({"v2": "version: v2\n"}))
    assert "version must be v1" in profiles["v2"]["error"]


def findings_about(inventory, obj):
    return [finding["message"] for finding in inventory["findings"] if finding["object"] == obj]


def test_build_inventory_of_a_healthy_cluster():
    policy = cluster_policy(config_name=CONFIG_MAP, default="t4", tolerations=[GPU_TOLERATION])
    cm = config_map({"t4": dump_config(build_sharing_config("time-slicing", 4))})
    nodes = [t4_time_sliced("t4-a", 4), t4_time_sliced("t4-b", 4, config="t4"), cpu_node("cpu-1")]
    for gpu_node in nodes[:2]:
        gpu_node["spec"]["taints"] = [dict(GPU_TAINT)]
    pods = [
        pod("train", GPU_CONTAINER, node_name="t4-a"),
        pod("web", [container(limits={"cpu": "1"})], node_name="cpu-1"),
    ]

    inventory = build_inventory(policy, cm, nodes, pods)
    assert inventory["findings"] == []
    assert sorted(inventory["nodes"]) == ["t4-a", "t4-b"]
    assert inventory["nodes"]["t4-a"]["gpu_pods"][0]["name"] == "train"
    assert inventory["nodes"]["t4-b"]["gpu_pods"] == []
    assert inventory["nodes"]["t4-a"]["findings"] == []
    assert inventory["cluster_policy"] == {
        "name": "cluster-policy",
        "device_plugin_enabled": True,
        "device_plugin_config": {"name": CONFIG_MAP, "default": "t4"},
        "mig_strategy": "single",
        "mig_manager_config": {"name": "default-mig-parted-config", "default": "all-disabled"},
        "daemonset_tolerations": [GPU_TOLERATION],
    }
    assert inventory["profiles"]["t4"]["resources"] == {"nvidia.com/gpu": 4}
    assert json.loads(json.dumps(inventory)) == inventory


def test_policy_naming_a_missing_config_map():
    inventory = build_inventory(cluster_policy(config_name=CONFIG_MAP, default="t4"), None, [t4_node("t4-a")], [])
    assert findings_about(inventory, "ClusterPolicy/cluster-policy") == [
        "spec.devicePlugin.config.name names ConfigMap time-slicing-config, which does not exist: the device plugin "
        "hangs until it does"
    ]
    assert inventory["profiles"] == {}


def test_default_key_missing_from_the_config_map():
    cm = config_map({"a100": dump_config(build_sharing_config("time-slicing", 2))})
    inventory = build_inventory(cluster_policy(config_name=CONFIG_MAP, default="t4"), cm, [], [])
    assert findings_about(inventory, "ClusterPolicy/cluster-policy") == [
        "spec.devicePlugin.config.default names key t4, which the ConfigMap lacks"
    ]


def test_policy_without_device_plugin_config_has_no_policy_finding():
    inventory = build_inventory(cluster_policy(), None, [t4_node("t4-a")], [])
    assert inventory["findings"] == []
    assert inventory["cluster_policy"]["device_plugin_config"] == {"name": None, "default": None}


def test_untolerated_taint_is_a_node_finding():
    policy = cluster_policy(tolerations=[GPU_TOLERATION])
    tainted = t4_node(
        "t4-a",
        taints=[dict(GPU_TAINT), dict(DEDICATED_TAINT), {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}],
    )
    inventory = build_inventory(policy, None, [tainted], [])
    expected = (
        "taints dedicated:NoSchedule are not tolerated by spec.daemonsets.tolerations: the operator's DaemonSets "
        "(driver included) "
        "never land on this node"
    )
    assert inventory["nodes"]["t4-a"]["findings"] == [expected]
    assert findings_about(inventory, "Node/t4-a") == [expected]


def test_gpu_taint_is_tolerated_by_the_operator_default_when_the_policy_sets_no_tolerations():
    # Reference §3/§5: the operator's DaemonSets tolerate nvidia.com/gpu:NoSchedule by default.
    inventory = build_inventory(cluster_policy(tolerations=None), None, [t4_node("t4-a", taints=[dict(GPU_TAINT)])], [])
    assert inventory["findings"] == []
    inventory = build_inventory(
        cluster_policy(tolerations=None), None, [t4_node("t4-a", taints=[dict(GPU_TAINT), dict(DEDICATED_TAINT)])], []
    )
    assert [finding["message"].split(" are ")[0] for finding in inventory["findings"]] == [
        "taints dedicated:NoSchedule"
    ]


def test_node_findings_are_forwarded():
    cm = config_map({"t4": dump_config(build_sharing_config("time-slicing", 4))})
    stale = t4_time_sliced("t4-a", 4, config="t4")
    stale["status"]["capacity"]["nvidia.com/gpu"] = stale["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    lost = a100_node("a100-1", config="a100-typo")
    bare = node("new-gpu", {}, capacity={"nvidia.com/gpu": "1"})
    inventory = build_inventory(
        cluster_policy(config_name=CONFIG_MAP, tolerations=[GPU_TOLERATION]),
        cm,
        [stale, lost, bare, cpu_node("cpu-1")],
        [],
    )

    assert sorted(inventory["nodes"]) == ["a100-1", "new-gpu", "t4-a"]
    assert [f["message"].split(";")[0] for f in inventory["findings"] if f["object"] == "Node/t4-a"] == [
        "capacity nvidia.com/gpu is 1, expected nvidia.com/gpu.count 1 x nvidia.com/gpu.replicas 4 = 4"
    ]
    assert findings_about(inventory, "Node/a100-1") == [
        "label nvidia.com/device-plugin.config=a100-typo names no key of the device plugin ConfigMap (keys: t4); the "
        "plugin ignores it"
    ]
    assert findings_about(inventory, "Node/new-gpu") == [
        "label nvidia.com/gpu.count is missing; GPU Feature Discovery is not running on the node"
    ]
    for name, entry in inventory["nodes"].items():
        assert entry["findings"] == findings_about(inventory, "Node/%s" % name)


def test_without_config_map_unknown_keys_are_not_reported():
    inventory = build_inventory(cluster_policy(), None, [a100_node("a100-1", config="anything")], [])
    assert inventory["findings"] == []


def test_without_policy():
    inventory = build_inventory(None, None, [t4_node("t4-a")], [pod("train", GPU_CONTAINER, node_name="t4-a")])
    assert inventory["cluster_policy"] is None
    assert inventory["findings"] == []
    assert len(inventory["nodes"]["t4-a"]["gpu_pods"]) == 1
