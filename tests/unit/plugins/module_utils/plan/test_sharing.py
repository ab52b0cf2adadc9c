# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_profile and NodeExpectation: what a device-plugin profile writes, restarts and waits for."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

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
    gfd_labels,
    h100_mig_mixed,
    h100_mig_single,
    labels_of,
    merge_patch,
    node,
    t4_node,
    t4_time_sliced,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import build_sharing_config
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import (
    RESTORE_ANNOTATION,
    created_record,
    read_record,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import (
    NodeExpectation,
    SharingRequest,
    plan_profile,
)

LABEL = "nvidia.com/device-plugin.config"
TS4 = build_sharing_config("time-slicing", 4)
TS2 = build_sharing_config("time-slicing", 2)
TS8 = build_sharing_config("time-slicing", 8)
MPS4 = build_sharing_config("mps", 4)


def present(key, config, node_names=None, make_default=False, restart=None):
    return SharingRequest(
        "present", key, CONFIG_MAP, config=config, node_names=node_names, make_default=make_default, restart=restart
    )


def absent(key, node_names=None, restart=None):
    return SharingRequest("absent", key, CONFIG_MAP, node_names=node_names, restart=restart)


class Cluster(object):
    """The objects plan_profile reads; ``apply`` makes a plan's writes the way apply_plan and the API server would."""

    def __init__(self, policy, cm, nodes):
        self.policy = policy
        self.config_map = cm
        self.nodes = dict((n["metadata"]["name"], n) for n in nodes)

    def plan(self, request):
        return plan_profile(
            request,
            NAMESPACE,
            copy.deepcopy(self.policy),
            copy.deepcopy(self.config_map),
            [copy.deepcopy(n) for n in self.nodes.values()],
        )

    def apply(self, plan):
        if plan.config_map_create is not None:
            assert self.config_map is None
            self.config_map = created_config_map(plan.config_map_create, created_record())
        elif plan.config_map_patch:
            self.config_map = merge_patch(self.config_map, plan.config_map_patch)
        if plan.policy_patch:
            self.policy = merge_patch(self.policy, plan.policy_patch)
        for name, patch in plan.node_patches.items():
            self.nodes[name] = merge_patch(self.nodes[name], patch)
        return self


def fresh_cluster(cm=None, policy=None):
    return Cluster(
        policy or cluster_policy(), cm, [t4_node("t4-a"), t4_node("t4-b"), t4_node("t4-c"), cpu_node("cpu-1")]
    )


# --- present on named nodes ---------------------------------------------------------------------


def test_present_creates_config_map_points_policy_and_labels_named_nodes():
    cluster = fresh_cluster()
    plan = cluster.plan(present("t4", TS4, ["t4-a", "t4-b"]))

    assert plan.namespace == NAMESPACE and plan.config_map == CONFIG_MAP
    assert plan.config_map_create == {"t4": dump_config(TS4)}
    assert plan.config_map_patch is None
    assert plan.policy_patch == {
        "spec": {"devicePlugin": {"config": {"name": CONFIG_MAP, "default": None}}},
        "metadata": {
            "annotations": {RESTORE_ANNOTATION: json.dumps({"spec": {"devicePlugin.config": None}})},
            "resourceVersion": cluster.policy["metadata"]["resourceVersion"],  # planned from it: 409 if it changed
        },
    }
    assert sorted(plan.node_patches) == ["t4-a", "t4-b"]
    assert plan.node_patches["t4-a"] == {
        "metadata": {
            "labels": {LABEL: "t4"},
            "annotations": {RESTORE_ANNOTATION: json.dumps({"labels": {LABEL: None}})},
            "resourceVersion": cluster.nodes["t4-a"]["metadata"]["resourceVersion"],
        }
    }
    assert plan.restart is False
    assert sorted(plan.expectations) == ["t4-a", "t4-b"]
    assert plan.expectations["t4-a"].describe() == "time-slicing nvidia.com/gpu x4"
    assert plan.warnings == []
    assert plan.changed is True
    assert plan.before == {
        "config_map": {"t4": None},
        "cluster_policy": {"devicePlugin.config": {"name": None, "default": None}},
        "nodes": {"t4-a": {LABEL: None}, "t4-b": {LABEL: None}},
    }
    assert plan.after == {
        "config_map": {"t4": dump_config(TS4)},
        "cluster_policy": {"devicePlugin.config": {"name": CONFIG_MAP, "default": None}},
        "nodes": {"t4-a": {LABEL: "t4"}, "t4-b": {LABEL: "t4"}},
    }


def test_present_patches_only_its_key_of_an_existing_config_map():
    other = dump_config(build_sharing_config("time-slicing", 3))
    cluster = fresh_cluster(
        cm=config_map({"a100": other, "unshared": "version: v1\n# kept by hand\n"}),
        policy=cluster_policy(config_name=CONFIG_MAP, default="a100"),
    )
    plan = cluster.plan(present("t4", TS4, ["t4-a"]))

    assert plan.config_map_create is None
    assert plan.config_map_patch == {
        "data": {"t4": dump_config(TS4)},
        "metadata": {
            "annotations": {RESTORE_ANNOTATION: json.dumps({"data": {"t4": None}})},
            "resourceVersion": cluster.config_map["metadata"]["resourceVersion"],
        },
    }
    # The policy already names this ConfigMap and keeps its default: no write.
    assert plan.policy_patch is None
    cluster.apply(plan)
    assert cluster.config_map["data"] == {
        "a100": other,
        "unshared": "version: v1\n# kept by hand\n",
        "t4": dump_config(TS4),
    }


def test_policy_patch_touches_only_device_plugin_config_and_warns_on_another_config_map():
    policy = cluster_policy(
        config_name="old-profiles",
        default="legacy",
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )
    cluster = fresh_cluster(policy=policy)
    plan = cluster.plan(present("t4", TS4, ["t4-a"], make_default=False))

    assert plan.policy_patch["spec"] == {"devicePlugin": {"config": {"name": CONFIG_MAP, "default": "legacy"}}}
    assert read_record({"metadata": plan.policy_patch["metadata"]}) == {
        "spec": {"devicePlugin.config": {"name": "old-profiles", "default": "legacy"}}
    }
    assert plan.warnings == [
        "ClusterPolicy cluster-policy pointed at ConfigMap old-profiles; it now points at time-slicing-config, "
        "so profiles kept only in old-profiles no longer apply."
    ]
    after = cluster.apply(plan).policy
    expected = copy.deepcopy(policy)
    expected["spec"]["devicePlugin"]["config"]["name"] = CONFIG_MAP
    expected["metadata"]["annotations"] = after["metadata"]["annotations"]
    assert after == expected


def test_node_label_patches_only_where_the_label_differs():
    cluster = Cluster(
        cluster_policy(config_name=CONFIG_MAP),
        config_map({"t4": dump_config(TS4)}),
        [t4_node("t4-a", config="t4"), t4_node("t4-b", config="other"), t4_node("t4-c")],
    )
    plan = cluster.plan(present("t4", TS4, ["t4-a", "t4-b", "t4-c"]))

    assert sorted(plan.node_patches) == ["t4-b", "t4-c"]
    assert read_record({"metadata": plan.node_patches["t4-b"]["metadata"]}) == {"labels": {LABEL: "other"}}
    assert plan.config_map_patch is None and plan.policy_patch is None
    # Every named node is waited for, labelled already or not.
    assert sorted(plan.expectations) == ["t4-a", "t4-b", "t4-c"]


def test_second_identical_plan_changes_nothing():
    cluster = fresh_cluster()
    request = present("t4", TS4, ["t4-a", "t4-b"])
    first = cluster.plan(request)
    assert first.changed
    cluster.apply(first)
    for name in ("t4-a", "t4-b"):  # what the device plugin shows once it applied the profile
        labels_of(cluster.nodes[name]).update(labels_of(t4_time_sliced(name, 4, config="t4")))
        cluster.nodes[name]["status"] = t4_time_sliced(name, 4)["status"]
    second = cluster.plan(request)

    assert second.changed is False
    assert (
        second.config_map_create,
        second.config_map_patch,
        second.policy_patch,
        second.node_patches,
        second.restart,
    ) == (None, None, None, {}, False)
    # Still waited for: the nodes must show the profile.
    assert sorted(second.expectations) == ["t4-a", "t4-b"]
    assert second.before["config_map"] == second.after["config_map"] == {"t4": dump_config(TS4)}


def test_restore_records_are_written_once_and_never_overwritten():
    original = dump_config(TS2)
    cluster = Cluster(
        cluster_policy(config_name="old-profiles", default="legacy"),
        config_map({"t4": original}),
        [t4_node("t4-a", config="hand-made"), t4_node("t4-b")],
    )

    cluster.apply(cluster.plan(present("t4", TS4, ["t4-a"])))
    assert read_record(cluster.config_map) == {"data": {"t4": original}}
    assert read_record(cluster.policy) == {
        "spec": {"devicePlugin.config": {"name": "old-profiles", "default": "legacy"}}
    }
    assert read_record(cluster.nodes["t4-a"]) == {"labels": {LABEL: "hand-made"}}

    # Change everything again: the records keep the pre-collection values, and no patch rewrites them.
    second = cluster.plan(present("t4", TS8, ["t4-a", "t4-b"], make_default=True))
    assert "metadata" not in second.config_map_patch
    assert "annotations" not in second.policy_patch["metadata"]  # only the resourceVersion it was planned from
    assert "metadata" in second.node_patches["t4-b"]  # t4-b is changed for the first time
    cluster.apply(second)
    assert read_record(cluster.config_map) == {"data": {"t4": original}}
    assert read_record(cluster.policy) == {
        "spec": {"devicePlugin.config": {"name": "old-profiles", "default": "legacy"}}
    }
    assert read_record(cluster.nodes["t4-b"]) == {"labels": {LABEL: None}}

    # Removing the profile does not touch the records either.
    third = cluster.plan(absent("t4"))
    assert "metadata" not in third.config_map_patch
    assert all("annotations" not in patch["metadata"] for patch in third.node_patches.values())
    cluster.apply(third)
    assert read_record(cluster.nodes["t4-a"]) == {"labels": {LABEL: "hand-made"}}
    assert LABEL not in labels_of(cluster.nodes["t4-a"])


def test_unrelated_annotations_survive_the_patches():
    cm = config_map({"t4": dump_config(TS2)}, annotations={"meta.helm.sh/release-name": "gpu-operator"})
    cluster = Cluster(cluster_policy(config_name=CONFIG_MAP), cm, [t4_node("t4-a")])
    cluster.apply(cluster.plan(present("t4", TS4, ["t4-a"])))
    assert annotations_of(cluster.config_map)["meta.helm.sh/release-name"] == "gpu-operator"
    assert annotations_of(cluster.nodes["t4-a"])["node.alpha.kubernetes.io/ttl"] == "0"


# --- restart decision -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "existing, node_label, policy_default, forced, shows_replicas, expected",
    [
        pytest.param(TS2, "t4", None, None, 2, True, id="content-changed-node-on-key"),
        pytest.param(TS2, None, "t4", None, 2, True, id="content-changed-node-on-key-by-default"),
        pytest.param(None, None, None, None, None, False, id="new-key-newly-labelled"),
        pytest.param(TS2, "other", None, None, 8, False, id="content-changed-node-moves-to-key"),
        pytest.param(TS4, "t4", None, None, 4, False, id="content-unchanged"),
        # Content staged earlier with restart_device_plugin=false: the node still shows the old one.
        pytest.param(TS4, "t4", None, None, 2, True, id="content-unchanged-node-stale"),
        pytest.param(TS4, "t4", None, True, 4, True, id="forced-true"),
        pytest.param(TS2, "t4", None, False, 2, False, id="forced-false"),
    ],
)
def test_restart_decision(existing, node_label, policy_default, forced, shows_replicas, expected):
    data = {"other": dump_config(TS8)}
    if existing is not None:
        data["t4"] = dump_config(existing)
    shown = (
        t4_time_sliced("t4-a", shows_replicas, config=node_label)
        if shows_replicas
        else t4_node("t4-a", config=node_label)
    )
    cluster = Cluster(cluster_policy(config_name=CONFIG_MAP, default=policy_default), config_map(data), [shown])
    plan = cluster.plan(present("t4", TS4, ["t4-a"], restart=forced))
    assert plan.restart is expected
    if forced:
        assert plan.changed is True


def test_unparsable_key_the_collection_added_is_repaired_and_restarts_its_nodes():
    added_by_collection = {RESTORE_ANNOTATION: json.dumps({"data": {"t4": None}})}
    cluster = Cluster(
        cluster_policy(config_name=CONFIG_MAP),
        config_map({"t4": "version: v1\nsharing: [unclosed"}, annotations=added_by_collection),
        [t4_node("t4-a", config="t4")],
    )
    plan = cluster.plan(present("t4", TS4, ["t4-a"]))
    # The key is recorded as added (restore removes it): the record stays as it is.
    assert plan.config_map_patch == {"data": {"t4": dump_config(TS4)}}
    assert plan.restart is True


def test_unparsable_key_of_someone_else_is_refused():
    cluster = Cluster(
        cluster_policy(config_name=CONFIG_MAP),
        config_map({"t4": "version: v1\nsharing: [unclosed"}),
        [t4_node("t4-a", config="t4")],
    )
    with pytest.raises(GpuShareError, match="key t4 is not valid YAML.*remove or fix key.s. t4"):
        cluster.plan(present("t4", TS4, ["t4-a"]))


# --- make_default -------------------------------------------------------------------------------


def test_make_default_targets_every_unlabelled_gpu_node_and_skips_cpu_nodes():
    cluster = Cluster(
        cluster_policy(),
        config_map({"other": dump_config(TS8)}),
        [t4_node("t4-a"), t4_node("t4-b", config="other"), a100_node("a100-1"), cpu_node("cpu-1")],
    )
    plan = cluster.plan(present("t4", TS4, make_default=True))

    assert plan.policy_patch["spec"] == {"devicePlugin": {"config": {"name": CONFIG_MAP, "default": "t4"}}}
    assert plan.node_patches == {}
    assert sorted(plan.expectations) == ["a100-1", "t4-a"]
    assert plan.restart is False
    assert plan.after["cluster_policy"] == {"devicePlugin.config": {"name": CONFIG_MAP, "default": "t4"}}


def test_make_default_with_named_nodes_labels_them_and_waits_for_all():
    cluster = Cluster(cluster_policy(), None, [t4_node("t4-a"), t4_node("t4-b", config="other"), cpu_node("cpu-1")])
    plan = cluster.plan(present("t4", TS4, ["t4-b"], make_default=True))
    assert sorted(plan.node_patches) == ["t4-b"]
    assert sorted(plan.expectations) == ["t4-a", "t4-b"]


def test_make_default_refuses_when_an_unlabelled_node_cannot_take_the_profile():
    cluster = Cluster(cluster_policy(), None, [t4_node("t4-a"), h100_mig_single("h100-1")])
    with pytest.raises(GpuShareError, match="node h100-1 has its GPUs in MIG mode"):
        cluster.plan(present("t4", TS4, make_default=True))


# --- refusals -----------------------------------------------------------------------------------

MIXED_TS = build_sharing_config("time-slicing", 2, resources=["nvidia.com/mig-1g.10gb"], mig_strategy="mixed")
MIXED_TS_MISSING = build_sharing_config("time-slicing", 2, resources=["nvidia.com/mig-1g.5gb"], mig_strategy="mixed")


@pytest.mark.parametrize(
    "config, node_names, existing, message",
    [
        pytest.param(
            TS4,
            ["t4-a", "ghost", "also-missing"],
            None,
            r"^Node\(s\) not found: also-missing, ghost\.$",
            id="missing-nodes",
        ),
        pytest.param(TS4, ["cpu-1"], None, r"node cpu-1 has no NVIDIA GPU", id="cpu-node"),
        pytest.param(
            TS4,
            ["h100-single"],
            None,
            r"node h100-single has its GPUs in MIG mode \(NVIDIA-H100-80GB-HBM3-MIG-1g.10gb\): "
            r"nvidia.com/gpu counts MIG devices",
            id="mig-single-gpu",
        ),
        pytest.param(TS4, ["h100-mixed"], None, r"node h100-mixed has its GPUs in MIG mode", id="mig-mixed-gpu"),
        pytest.param(
            MPS4,
            ["h100-single"],
            None,
            r"node h100-single has MIG enabled \(NVIDIA-H100-80GB-HBM3-MIG-1g.10gb\): "
            r"MPS is not supported on MIG devices",
            id="mps-mig-single",
        ),
        pytest.param(
            MPS4, ["h100-mixed"], None, r"node h100-mixed has MIG enabled \(NVIDIA-H100-80GB-HBM3\)", id="mps-mig-mixed"
        ),
        pytest.param(
            TS4, ["t4-a"], MPS4, r"key t4 already holds a mps profile; choose another config_key", id="key-holds-mps"
        ),
        pytest.param(MPS4, ["t4-a"], TS2, r"key t4 already holds a time-slicing profile", id="key-holds-time-slicing"),
    ],
)
def test_refusals(config, node_names, existing, message):
    cm = config_map({"t4": dump_config(existing)}) if existing else None
    cluster = Cluster(
        cluster_policy(config_name=CONFIG_MAP),
        cm,
        [t4_node("t4-a"), cpu_node("cpu-1"), h100_mig_single("h100-single"), h100_mig_mixed("h100-mixed")],
    )
    with pytest.raises(GpuShareError, match=message):
        cluster.plan(present("t4", config, node_names))


@pytest.mark.parametrize(
    "config, node, message",
    [
        pytest.param(MIXED_TS_MISSING, "h100-mixed", "nvidia.com/mig-1g.5gb match(es) no device", id="profile-missing"),
        pytest.param(MIXED_TS, "t4-a", "nvidia.com/mig-1g.10gb match(es) no device", id="mig-resource-on-t4"),
    ],
)
def test_resource_matching_no_device_is_a_warning_and_not_waited_for(config, node, message):
    """device-plugin-rules.md, resource names: a well-formed name that matches no device is accepted and
    silently ignored by the plugin; here a warning, and the wait does not expect it."""
    cluster = Cluster(
        cluster_policy(config_name=CONFIG_MAP, mig_strategy="mixed"),
        None,
        [t4_node("t4-a"), h100_mig_mixed("h100-mixed")],
    )
    plan = cluster.plan(present("t4", config, [node]))
    assert any(message in warning for warning in plan.warnings)
    assert plan.expectations[node].replicas == {}


def test_mps_on_mixed_strategy_without_mig_says_the_fix_is_the_strategy():
    cluster = Cluster(cluster_policy(config_name=CONFIG_MAP, mig_strategy="mixed"), None, [t4_node("t4-a")])
    with pytest.raises(GpuShareError, match="the MIG strategy is mixed.*change the strategy"):
        cluster.plan(present("t4", MPS4, ["t4-a"]))


def test_refusal_lists_every_bad_node_at_once():
    cluster = Cluster(cluster_policy(), None, [t4_node("t4-a"), cpu_node("cpu-1"), h100_mig_single("h100-single")])
    with pytest.raises(GpuShareError) as error:
        cluster.plan(present("t4", TS4, ["cpu-1", "t4-a", "h100-single"]))
    assert error.value.msg.startswith("Cannot apply time-slicing profile 't4': node cpu-1 has no NVIDIA GPU")
    assert "node h100-single has its GPUs in MIG mode" in error.value.msg
    assert "t4-a" not in error.value.msg


def test_mixed_mig_resource_the_node_has_is_accepted():
    cluster = Cluster(cluster_policy(mig_strategy="mixed"), None, [h100_mig_mixed("h100-mixed")])
    plan = cluster.plan(present("mig-ts", MIXED_TS, ["h100-mixed"]))
    assert plan.expectations["h100-mixed"].describe() == "time-slicing nvidia.com/mig-1g.10gb x2"


def test_mps_on_whole_gpus_is_accepted():
    cluster = Cluster(cluster_policy(), None, [a100_node("a100-1")])
    plan = cluster.plan(present("a100-mps", MPS4, ["a100-1"]))
    assert plan.expectations["a100-1"].method == "mps"


# --- absent -------------------------------------------------------------------------------------


def absent_cluster(policy_default=None, extra_data=None):
    data = {"t4": dump_config(TS4), "a100": dump_config(TS8)}
    data.update(extra_data or {})
    return Cluster(
        cluster_policy(config_name=CONFIG_MAP, default=policy_default),
        config_map(data),
        [
            t4_time_sliced("t4-a", 4, config="t4"),
            t4_time_sliced("t4-b", 4, config="t4"),
            a100_node("a100-1", config="a100"),
            t4_node("t4-c"),
            cpu_node("cpu-1"),
        ],
    )


def test_absent_everywhere_removes_key_and_labels():
    cluster = absent_cluster()
    plan = cluster.plan(absent("t4"))

    assert plan.config_map_patch == {
        "data": {"t4": None},
        "metadata": {
            "annotations": {RESTORE_ANNOTATION: json.dumps({"data": {"t4": dump_config(TS4)}})},
            "resourceVersion": cluster.config_map["metadata"]["resourceVersion"],
        },
    }
    assert sorted(plan.node_patches) == ["t4-a", "t4-b"]
    assert plan.node_patches["t4-a"]["metadata"]["labels"] == {LABEL: None}
    assert read_record({"metadata": plan.node_patches["t4-a"]["metadata"]}) == {"labels": {LABEL: "t4"}}
    assert plan.policy_patch is None
    assert plan.restart is False
    assert sorted(plan.expectations) == ["t4-a", "t4-b"]
    assert plan.expectations["t4-a"].describe() == "unshared"
    assert plan.after["config_map"] == {"t4": None}

    cluster.apply(plan)
    assert sorted(cluster.config_map["data"]) == ["a100"]
    assert LABEL not in labels_of(cluster.nodes["t4-a"])
    assert labels_of(cluster.nodes["a100-1"])[LABEL] == "a100"
    assert cluster.plan(absent("t4")).changed is False


def test_absent_everywhere_clears_the_policy_default_when_it_is_the_key():
    cluster = absent_cluster(policy_default="t4")
    plan = cluster.plan(absent("t4"))

    assert plan.policy_patch["spec"] == {"devicePlugin": {"config": {"name": CONFIG_MAP, "default": None}}}
    assert read_record({"metadata": plan.policy_patch["metadata"]}) == {
        "spec": {"devicePlugin.config": {"name": CONFIG_MAP, "default": "t4"}}
    }
    # Unlabelled GPU nodes used the key through the default: they are waited for too; CPU nodes are not.
    assert sorted(plan.expectations) == ["t4-a", "t4-b", "t4-c"]
    assert all(expectation.describe() == "unshared" for expectation in plan.expectations.values())
    assert plan.after["cluster_policy"] == {"devicePlugin.config": {"name": CONFIG_MAP, "default": None}}
    cluster.apply(plan)
    assert cluster.policy["spec"]["devicePlugin"]["config"] == {"name": CONFIG_MAP}


def test_absent_everywhere_expects_the_fallback_of_another_default_profile():
    cluster = absent_cluster(policy_default="fallback", extra_data={"fallback": dump_config(TS2)})
    plan = cluster.plan(absent("t4"))
    assert plan.policy_patch is None
    assert sorted(plan.expectations) == ["t4-a", "t4-b"]
    assert plan.expectations["t4-a"].describe() == "time-slicing nvidia.com/gpu x2"


def test_absent_from_given_nodes_only_unlabels_those_on_the_key():
    cluster = absent_cluster()
    plan = cluster.plan(absent("t4", node_names=["t4-a", "a100-1", "t4-c"]))
    assert sorted(plan.node_patches) == ["t4-a"]
    assert plan.config_map_patch is None
    assert plan.policy_patch is None
    assert sorted(plan.expectations) == ["t4-a"]
    assert plan.expectations["t4-a"].describe() == "unshared"
    assert plan.before["nodes"] == {"t4-a": {LABEL: "t4"}}


def test_absent_from_given_nodes_when_the_key_is_the_default_expects_the_key_again():
    # Removing the label makes the node fall back to the policy default, which is this very key: the
    # node keeps the profile, so waiting for "unshared" could only time out.
    cluster = absent_cluster(policy_default="t4")
    plan = cluster.plan(absent("t4", node_names=["t4-a"]))
    assert sorted(plan.node_patches) == ["t4-a"]
    assert plan.expectations["t4-a"].describe() == "time-slicing nvidia.com/gpu x4"


def test_absent_restart_only_when_forced_and_missing_nodes_refused():
    cluster = absent_cluster()
    assert cluster.plan(absent("t4", restart=True)).restart is True
    assert cluster.plan(absent("nothing-here")).changed is False
    with pytest.raises(GpuShareError, match="ghost"):
        cluster.plan(absent("t4", node_names=["ghost"]))


def test_absent_without_config_map():
    cluster = Cluster(cluster_policy(), None, [t4_node("t4-a")])
    plan = cluster.plan(absent("t4"))
    assert plan.changed is False
    assert plan.expectations == {}


# --- NodeExpectation.problem ---------------------------------------------------------------------


def renamed(method, replicas, count, product, mps=False, memory=40960):
    """A node where ``method`` x``replicas`` with renameByDefault is in effect (plain nvidia.com/gpu allocatable 0)."""
    extra = {"nvidia.com/mps.capable": "true"} if mps else {}
    return node(
        "renamed",
        gfd_labels(product, count, memory, replicas=replicas, strategy=method, **extra),
        capacity={"nvidia.com/gpu": str(count), "nvidia.com/gpu.shared": str(count * replicas)},
        allocatable={"nvidia.com/gpu": "0"},
    )


def test_unshared_expectation():
    expectation = NodeExpectation(None)
    assert expectation.method is None and expectation.describe() == "unshared"
    assert expectation.problem(t4_node("t4-a")) is None
    assert expectation.problem(a100_node("a100-1")) is None
    assert expectation.problem(t4_time_sliced("t4-a", 4)) == (
        "nvidia.com/gpu.replicas=4 (want 1); nvidia.com/gpu.sharing-strategy=time-slicing (want none); "
        "product Tesla-T4-SHARED still ends in -SHARED; allocatable nvidia.com/gpu=4 (want 1)"
    )
    # Still renamed: the plain resource is not allocatable yet.
    assert "allocatable nvidia.com/gpu=0 (want 2)" in expectation.problem(
        renamed("mps", 10, 2, "NVIDIA-A100-PCIE-40GB", mps=True)
    )
    # MIG nodes: nvidia.com/gpu counts MIG devices or is 0, so it is not compared.
    assert expectation.problem(h100_mig_single("h100")) is None
    assert expectation.problem(h100_mig_mixed("h100")) is None


def test_unshared_expectation_sees_time_sliced_mig_resources():
    shared = h100_mig_mixed("h100")
    shared["metadata"]["labels"]["nvidia.com/mig-1g.10gb.replicas"] = "2"
    shared["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "8"
    shared["status"]["capacity"]["nvidia.com/mig-1g.10gb"] = "8"
    assert (
        NodeExpectation(None).problem(shared)
        == "nvidia.com/mig-1g.10gb.replicas=2 (want 1); allocatable nvidia.com/mig-1g.10gb=8 (want 4)"
    )
    # Renamed: the plain MIG resource is not advertised until the plugin reloads.
    del shared["status"]["allocatable"]["nvidia.com/mig-1g.10gb"]
    shared["status"]["allocatable"]["nvidia.com/mig-1g.10gb.shared"] = "8"
    assert "allocatable nvidia.com/mig-1g.10gb=0 (want 4)" in NodeExpectation(None).problem(shared)


def test_time_slicing_expectation():
    expectation = NodeExpectation(TS4)
    assert expectation.method == "time-slicing" and expectation.replicas == {"nvidia.com/gpu": 4}
    assert expectation.problem(t4_time_sliced("t4-a", 4)) is None
    assert expectation.problem(t4_time_sliced("t4-a", 4, count=2)) is None
    assert expectation.problem(t4_node("t4-a")) == (
        "nvidia.com/gpu.replicas=1 (want 4); nvidia.com/gpu.sharing-strategy=none (want time-slicing); "
        "product Tesla-T4 lacks -SHARED; allocatable nvidia.com/gpu=1 (want 4)"
    )
    # Labels already updated by GFD, the plugin still advertising the old count.
    stale = t4_time_sliced("t4-a", 4)
    stale["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    assert expectation.problem(stale) == "allocatable nvidia.com/gpu=2 (want 4)"


def test_rename_by_default_expectation():
    config = build_sharing_config("time-slicing", 4, rename_by_default=True)
    expectation = NodeExpectation(config)
    assert expectation.rename_by_default is True
    assert expectation.problem(renamed("time-slicing", 4, 1, "Tesla-T4", memory=15360)) is None
    # The -SHARED product is not required with renameByDefault, the .shared resource is.
    not_renamed = t4_time_sliced("t4-a", 4)
    assert expectation.problem(not_renamed) == "allocatable nvidia.com/gpu.shared=0 (want 4)"


def test_mps_expectation():
    config = build_sharing_config("mps", 10, rename_by_default=True)
    expectation = NodeExpectation(config)
    assert expectation.describe() == "mps nvidia.com/gpu x10"
    assert expectation.problem(renamed("mps", 10, 2, "NVIDIA-A100-PCIE-40GB", mps=True)) is None
    assert (
        expectation.problem(renamed("mps", 10, 2, "NVIDIA-A100-PCIE-40GB", mps=False))
        == "nvidia.com/mps.capable is not true"
    )
    plain = NodeExpectation(MPS4)
    shared = node(
        "a100",
        gfd_labels(
            "NVIDIA-A100-PCIE-40GB-SHARED", 2, 40960, replicas=4, strategy="mps", **{"nvidia.com/mps.capable": "true"}
        ),
        capacity={"nvidia.com/gpu": "8"},
    )
    assert plain.problem(shared) is None
    assert plain.problem(a100_node("a100")).endswith("; nvidia.com/mps.capable is not true")


def test_mixed_mig_expectation():
    expectation = NodeExpectation(MIXED_TS)
    before = h100_mig_mixed("h100")
    assert (
        expectation.problem(before)
        == "nvidia.com/mig-1g.10gb.replicas=1 (want 2); allocatable nvidia.com/mig-1g.10gb=4 (want 8)"
    )
    after = copy.deepcopy(before)
    after["metadata"]["labels"]["nvidia.com/mig-1g.10gb.replicas"] = "2"
    after["status"]["capacity"]["nvidia.com/mig-1g.10gb"] = after["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = (
        "8"
    )
    assert expectation.problem(after) is None

    renamed_config = build_sharing_config(
        "time-slicing", 2, resources=["nvidia.com/mig-1g.10gb"], rename_by_default=True, mig_strategy="mixed"
    )
    renamed_after = copy.deepcopy(after)
    del renamed_after["status"]["allocatable"]["nvidia.com/mig-1g.10gb"]
    renamed_after["status"]["allocatable"]["nvidia.com/mig-1g.10gb.shared"] = "8"
    assert NodeExpectation(renamed_config).problem(renamed_after) is None
    assert NodeExpectation(renamed_config).problem(after) == "allocatable nvidia.com/mig-1g.10gb.shared=0 (want 8)"
