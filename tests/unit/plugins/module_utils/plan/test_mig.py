# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_mig and its helpers: what gpu_mig_config writes, refuses and waits for, without a cluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest
import yaml

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import find_gpu_model
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import MIG_PARTED_KEY
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_mig_layout import physical_gpu_count
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import (
    MigExpectation,
    MigRequest,
    expected_devices,
    plan_mig,
    single_strategy_problem,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import VKS, platform_without_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import RESTORE_ANNOTATION

NAMESPACE = "nvidia-gpu-operator"
SHIPPED = {
    "all-disabled": [{"devices": "all", "mig-enabled": False}],
    "all-enabled": [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
    "all-balanced": [
        {
            "device-filter": ["0x20F110DE"],
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
        }
    ],
    "all-1g.5gb": [
        {"device-filter": ["0x20F110DE"], "devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}
    ],
    "all-1g.10gb": [
        {"device-filter": ["0x233010DE"], "devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}
    ],
    "all-3g.40gb": [
        {"device-filter": ["0x233010DE"], "devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}
    ],
}
HALF_AND_WHOLE = [
    {"devices": [0], "mig-enabled": True, "mig-devices": {"3g.20gb": 2}},
    {"devices": [1], "mig-enabled": False},
]


def config_map(name, configs, annotations=None):
    metadata = {"name": name, "namespace": NAMESPACE}
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "data": {MIG_PARTED_KEY: yaml.safe_dump({"version": "v1", "mig-configs": configs})}}


SHIPPED_CONFIG_MAP = config_map("default-mig-parted-config", SHIPPED)


def policy(strategy="single", mig_config_map="default-mig-parted-config"):
    return {
        "metadata": {"name": "gpu-cluster-policy"},
        "spec": {
            "mig": {"strategy": strategy},
            "migManager": {"config": {"name": mig_config_map, "default": "all-disabled"}},
        },
    }


def gpu_node(
    name,
    product,
    count,
    memory,
    mig_capable=True,
    mig_config="all-disabled",
    state="success",
    strategy="single",
    extra=None,
    zone="us-east-1a",
):
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": str(memory),
        "nvidia.com/mig.capable": "true" if mig_capable else "false",
        "nvidia.com/mig.strategy": strategy,
        "topology.kubernetes.io/zone": zone,
    }
    if mig_capable and mig_config:
        labels.update({"nvidia.com/mig.config": mig_config, "nvidia.com/mig.config.state": state})
    labels.update(extra or {})
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": {"nvidia.com/gpu": str(count)}}}


def _with_pci_label(kwargs, device):
    """Node Feature Discovery's PCI label carrying the device ID (the A100 PCIe 40GB has two IDs)."""
    extra = dict(kwargs.pop("extra", None) or {})
    extra.setdefault("feature.node.kubernetes.io/pci-0302_10de_%s.present" % device, "true")
    kwargs["extra"] = extra
    return kwargs


def a100(name="gpu-a100-0", **kwargs):
    return gpu_node(name, "NVIDIA-A100-PCIE-40GB", 2, 40960, **_with_pci_label(kwargs, "20f1"))


def h100(name="gpu-h100-0", **kwargs):
    return gpu_node(name, "NVIDIA-H100-80GB-HBM3", 8, 81559, **_with_pci_label(kwargs, "2330"))


def t4(name="gpu-t4-0", **kwargs):
    return gpu_node(name, "Tesla-T4", 1, 15360, mig_capable=False, **kwargs)


def a100_mid_change(state, strategy="single"):
    """gpu-a100-0 while mig-manager changes it to all-1g.5gb: ``state`` pending or rebooting, its operands paused."""
    return a100(
        mig_config="all-1g.5gb",
        state=state,
        strategy=strategy,
        extra={"nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change"},
    )


def fleet():
    return [a100("gpu-a100-0"), a100("gpu-a100-1"), h100("gpu-h100-0"), t4("gpu-t4-0")]


def plan(request, nodes=None, the_policy=None, active=SHIPPED_CONFIG_MAP, target=None):
    return plan_mig(request, the_policy or policy(), active, target, nodes if nodes is not None else fleet(), NAMESPACE)


def refusal(request, **kwargs):
    with pytest.raises(GpuShareError) as error:
        plan(request, **kwargs)
    return error.value.msg


def merge(obj, patch):
    """Apply a JSON merge patch (RFC 7386) as the API server does."""
    result = copy.deepcopy(obj)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


@pytest.mark.parametrize(
    "request_kwargs, message",
    [
        (dict(), "either config"),
        (dict(config="all-balanced", layout=HALF_AND_WHOLE, config_name="x"), "either config"),
        (dict(config="half-and-half"), "not one of the MIG configs NVIDIA ships"),
        (dict(layout=HALF_AND_WHOLE), "needs config_name"),
        (dict(layout=HALF_AND_WHOLE, config_name="all-balanced"), "is a shipped MIG config name"),
        (dict(config="all-balanced", strategy="none"), "strategy must be one of"),
    ],
)
def test_invalid_requests(request_kwargs, message):
    assert message in refusal(MigRequest(["gpu-a100-0"], **request_kwargs))


def test_no_nodes_refused():
    assert "Say which nodes" in refusal(MigRequest([], config="all-balanced"))


def test_unknown_node_refused():
    assert "Node(s) not found: nope" in refusal(MigRequest(["nope"], config="all-balanced", strategy="mixed"))


def test_shipped_config_labels_node_clears_state_and_records_previous_label():
    result = plan(MigRequest(["gpu-a100-0"], config="all-1g.5gb"))
    assert (
        result.changed
        and not result.policy_patch
        and result.config_map_create is None
        and result.config_map_patch is None
    )
    patch = result.node_patches["gpu-a100-0"]
    assert patch["metadata"]["labels"] == {"nvidia.com/mig.config": "all-1g.5gb", "nvidia.com/mig.config.state": None}
    assert json.loads(patch["metadata"]["annotations"][RESTORE_ANNOTATION]) == {
        "labels": {"nvidia.com/mig.config": "all-disabled"}
    }
    assert result.expectations["gpu-a100-0"].devices == {"1g.5gb": 14}
    assert result.config_map == "default-mig-parted-config"
    assert result.before["nodes"] == {"gpu-a100-0": {"nvidia.com/mig.config": "all-disabled"}}
    assert result.after["nodes"] == {"gpu-a100-0": {"nvidia.com/mig.config": "all-1g.5gb"}}


def test_strategy_patched_only_when_it_differs_and_recorded():
    assert plan(MigRequest(["gpu-a100-0"], config="all-1g.5gb", strategy="single")).policy_patch is None
    result = plan(MigRequest(["gpu-a100-0"], config="all-balanced", strategy="mixed"))
    assert result.policy_patch["spec"] == {"mig": {"strategy": "mixed"}}
    assert json.loads(result.policy_patch["metadata"]["annotations"][RESTORE_ANNOTATION]) == {
        "spec": {"mig.strategy": "single"}
    }
    assert result.expectations["gpu-a100-0"].strategy == "mixed"
    assert result.after["cluster_policy"]["mig.strategy"] == "mixed"


def test_mixed_strategy_refused_while_any_node_uses_mps():
    nodes = fleet() + [
        t4("gpu-t4-1", extra={"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/mps.capable": "true"})
    ]
    with pytest.raises(GpuShareError, match="gpu-t4-1 use MPS"):
        plan(MigRequest(["gpu-a100-0"], config="all-balanced", strategy="mixed"), nodes=nodes)
    assert plan(MigRequest(["gpu-a100-0"], config="all-1g.5gb", strategy="single"), nodes=nodes).policy_patch is None


def test_strategy_change_warns_about_other_mig_nodes():
    nodes = fleet() + [
        h100(
            "gpu-h100-1",
            mig_config="all-1g.10gb",
            extra={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "nvidia.com/gpu.count": "56"},
        )
    ]
    result = plan(MigRequest(["gpu-a100-0"], config="all-balanced", strategy="mixed"), nodes=nodes)
    assert any("gpu-h100-1" in warning for warning in result.warnings)


def test_second_run_after_success_changes_nothing():
    request = MigRequest(["gpu-a100-0"], config="all-1g.5gb", strategy="mixed")
    the_policy = policy()
    first = plan(request, the_policy=the_policy)
    node = merge(a100("gpu-a100-0"), first.node_patches["gpu-a100-0"])
    node["metadata"]["labels"].update(
        {
            "nvidia.com/mig.config.state": "success",
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig-1g.5gb.count": "14",
        }
    )
    the_policy = merge(the_policy, first.policy_patch)
    second = plan(request, nodes=[node], the_policy=the_policy)
    assert not second.changed
    assert second.expectations["gpu-a100-0"].problem(node) is None


@pytest.mark.parametrize(
    "node, config, message",
    [
        (h100(), "all-3g.20gb", "MIG profile 3g.20gb does not exist on H100 80GB HBM3"),
        (a100(), "all-1g.20gb", "MIG profile 1g.20gb does not exist"),
        (t4(), "all-balanced", "T4 does not support MIG"),
        (gpu_node("gpu-l4-0", "NVIDIA-L4", 1, 23034, mig_capable=False), "all-enabled", "does not support MIG"),
        (gpu_node("gpu-a10-0", "NVIDIA-A10", 1, 23028, mig_capable=False), "all-1g.5gb", "does not support MIG"),
    ],
)
def test_shipped_config_foreign_to_the_gpu_refused(node, config, message):
    msg = refusal(MigRequest([node["metadata"]["name"]], config=config, strategy="mixed"), nodes=[node])
    assert message in msg and node["metadata"]["name"] in msg


def test_every_node_problem_reported_at_once():
    msg = refusal(MigRequest(["gpu-a100-0", "gpu-h100-0", "gpu-t4-0"], config="all-3g.20gb"))
    assert "gpu-h100-0" in msg and "gpu-t4-0" in msg and "gpu-a100-0" not in msg


def test_shipped_name_missing_from_the_configmap_mig_manager_reads_refused():
    active = config_map("default-mig-parted-config", {"all-disabled": SHIPPED["all-disabled"]})
    assert "has no config all-balanced" in refusal(
        MigRequest(["gpu-a100-0"], config="all-balanced", strategy="mixed"), active=active
    )
    assert "does not exist" in refusal(MigRequest(["gpu-a100-0"], config="all-balanced", strategy="mixed"), active=None)


def test_all_disabled_skips_gpus_without_mig():
    result = plan(
        MigRequest(["gpu-t4-0", "gpu-a100-0"], config="all-disabled"),
        nodes=[
            t4(),
            a100(
                mig_config="all-1g.5gb",
                extra={"nvidia.com/gpu.product": "NVIDIA-A100-PCIE-40GB-MIG-1g.5gb", "nvidia.com/gpu.count": "14"},
            ),
        ],
    )
    assert result.skipped == ["gpu-t4-0"]
    assert list(result.node_patches) == ["gpu-a100-0"]
    assert result.expectations["gpu-a100-0"].devices == {}


def test_cpu_node_refused():
    node = {"metadata": {"name": "worker-0", "labels": {}}, "status": {"capacity": {"cpu": "8"}}}
    assert "has no NVIDIA GPU" in refusal(
        MigRequest(["worker-0"], config="all-balanced", strategy="mixed"), nodes=[node]
    )


def test_node_with_change_still_pending_refused():
    node = a100_mid_change("pending")
    msg = refusal(MigRequest(["gpu-a100-0"], config="all-balanced", strategy="mixed"), nodes=[node])
    assert "previous MIG change to all-1g.5gb is still pending" in msg and "2833" in msg


def test_node_mig_manager_is_rebooting_refused_without_the_stuck_hint():
    node = a100_mid_change("rebooting")
    msg = refusal(MigRequest(["gpu-a100-0"], config="all-balanced", strategy="mixed"), nodes=[node])
    assert "mig-manager is rebooting it for its previous MIG change to all-1g.5gb" in msg and "2833" not in msg


def rebooting_policy(value="true"):
    the_policy = policy(strategy="mixed")
    the_policy["spec"]["migManager"]["env"] = [{"name": "WITH_REBOOT", "value": value}]
    return the_policy


def test_with_reboot_warns_about_the_nodes_whose_mig_mode_changes():
    in_mig = a100("gpu-a100-1", mig_config="all-1g.5gb", strategy="mixed")
    in_mig["status"]["capacity"] = {"nvidia.com/mig-1g.5gb": "14"}
    nodes = [a100("gpu-a100-0"), in_mig]
    request = MigRequest(["gpu-a100-0", "gpu-a100-1"], config="all-balanced", strategy="mixed")
    warned = plan(request, nodes=nodes, the_policy=rebooting_policy()).warnings
    # gpu-a100-1 stays in MIG mode (a new layout only): only gpu-a100-0 turns MIG on
    assert [w for w in warned if "WITH_REBOOT=true" in w and "node(s) gpu-a100-0 change MIG mode" in w]
    assert not [w for w in warned if "gpu-a100-1" in w]
    for value in ("false", "TRUE "):
        warned = plan(request, nodes=nodes, the_policy=rebooting_policy(value)).warnings
        assert bool([w for w in warned if "WITH_REBOOT" in w]) is (value != "false")
    assert not [w for w in plan(request, nodes=nodes).warnings if "WITH_REBOOT" in w]


def test_failed_change_under_the_same_name_refused():
    node = a100(mig_config="all-1g.5gb", state="failed")
    assert "does not retry an unchanged label" in refusal(MigRequest(["gpu-a100-0"], config="all-1g.5gb"), nodes=[node])
    # another name is a new change mig-manager acts on
    assert plan(MigRequest(["gpu-a100-0"], config="all-disabled"), nodes=[node]).node_patches


def test_physical_gpu_count_under_single_strategy():
    node = h100(
        mig_config="all-1g.10gb",
        extra={
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
            "nvidia.com/gpu.count": "56",
            "nvidia.com/gpu.memory": "10240",
        },
    )
    assert physical_gpu_count(NodeGpuState.from_node(node), {}) == 8
    assert physical_gpu_count(NodeGpuState.from_node(h100()), {}) == 8
    custom = h100(
        mig_config="mine",
        extra={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb", "nvidia.com/gpu.count": "16"},
    )
    mine = {"mine": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}]}
    assert physical_gpu_count(NodeGpuState.from_node(custom), mine) == 8
    assert physical_gpu_count(NodeGpuState.from_node(custom), {}) is None
    assert "cannot tell its number of physical GPUs" in refusal(
        MigRequest(["gpu-h100-0"], config="all-disabled"), nodes=[custom]
    )


def test_vks_refused_by_name():
    nodes = [gpu_node("vks-gpu-a10-0", "NVIDIA-A10", 1, 23028, mig_capable=False, zone="HCM03-1A")]
    assert platform_without_mig(nodes) == VKS
    assert platform_without_mig([{"metadata": {"name": "n", "labels": {"vks.vngcloud.vn/nodegroup": "gpu"}}}]) == VKS
    assert platform_without_mig(fleet()) is None
    assert "VNG Cloud VKS does not offer MIG" in refusal(
        MigRequest(["vks-gpu-a10-0"], config="all-balanced"), nodes=nodes
    )


def test_custom_layout_creates_configmap_from_the_shipped_one_and_points_the_policy_at_it():
    request = MigRequest(["gpu-a100-0"], layout=HALF_AND_WHOLE, config_name="half", strategy="mixed")
    result = plan(request)
    written = yaml.safe_load(result.config_map_create[MIG_PARTED_KEY])["mig-configs"]
    assert written["half"] == HALF_AND_WHOLE
    assert set(SHIPPED) <= set(written)  # the shipped names keep working through the new ConfigMap
    assert result.config_map == "custom-mig-parted-config"
    assert result.policy_patch["spec"] == {
        "mig": {"strategy": "mixed"},
        "migManager": {"config": {"name": "custom-mig-parted-config"}},
    }
    record = json.loads(result.policy_patch["metadata"]["annotations"][RESTORE_ANNOTATION])
    assert record == {
        "spec": {
            "mig.strategy": "single",
            "migManager.config": {"name": "default-mig-parted-config", "default": "all-disabled"},
        }
    }
    assert result.expectations["gpu-a100-0"].devices == {"3g.20gb": 2}
    assert result.before["config_map"] == {"half": None} and result.after["config_map"] == {"half": HALF_AND_WHOLE}


def test_custom_layout_merged_into_existing_configmap_keeping_other_configs():
    target = config_map("custom-mig-parted-config", {"theirs": SHIPPED["all-1g.5gb"]})
    result = plan(
        MigRequest(["gpu-a100-0"], layout=HALF_AND_WHOLE, config_name="half", strategy="mixed"), target=target
    )
    written = yaml.safe_load(result.config_map_patch["data"][MIG_PARTED_KEY])["mig-configs"]
    assert set(written) == {"theirs", "half", "all-disabled"}
    record = json.loads(result.config_map_patch["metadata"]["annotations"][RESTORE_ANNOTATION])
    assert record == {"data": {MIG_PARTED_KEY: target["data"][MIG_PARTED_KEY]}}


def test_custom_layout_second_run_changes_nothing():
    request = MigRequest(["gpu-a100-0"], layout=HALF_AND_WHOLE, config_name="half", strategy="mixed")
    first = plan(request)
    target = dict(config_map("custom-mig-parted-config", {}), data=first.config_map_create)
    node = merge(a100(), first.node_patches["gpu-a100-0"])
    node["metadata"]["labels"]["nvidia.com/mig.config.state"] = "success"
    second = plan(request, nodes=[node], the_policy=merge(policy(), first.policy_patch), target=target)
    assert not second.changed


def test_changing_a_layout_nodes_already_use_refused():
    target = config_map("custom-mig-parted-config", {"half": HALF_AND_WHOLE})
    other = [{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.40gb": 1}}]
    msg = refusal(
        MigRequest(["gpu-a100-0"], layout=other, config_name="half", strategy="mixed"),
        nodes=[a100(), a100("gpu-a100-1", mig_config="half")],
        target=target,
    )
    assert "891" in msg and "gpu-a100-1" in msg


@pytest.mark.parametrize(
    "layout, message",
    [
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 8}}], "holds at most 7"),
        (
            [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 3}}],
            "3 x 3g.20gb asked, but one A100 40GB holds at most",
        ),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {"4g.20gb": 1, "2g.10gb": 2}}], "8 compute slices"),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.20gb": 1}}], "does not exist on A100 40GB"),
        ([{"devices": [0], "mig-enabled": True, "mig-devices": {"7g.40gb": 1}}], "leaves GPU(s) 1 of its 2 unmatched"),
        ([{"devices": [0, 2], "mig-enabled": False}], "leaves GPU(s) 1 of its 2 unmatched"),
    ],
)
def test_invalid_custom_layouts_refused(layout, message):
    assert message in refusal(MigRequest(["gpu-a100-0"], layout=layout, config_name="mine", strategy="mixed"))


def test_single_strategy_refuses_layouts_it_cannot_advertise():
    assert "use strategy mixed" in refusal(MigRequest(["gpu-a100-0"], config="all-balanced", strategy="single"))
    assert "use strategy mixed" in refusal(MigRequest(["gpu-a100-0"], layout=HALF_AND_WHOLE, config_name="half"))
    assert plan(MigRequest(["gpu-a100-0"], config="all-balanced", strategy="mixed")).node_patches


@pytest.mark.parametrize(
    "layout, problem",
    [
        ([{"devices": "all", "mig-enabled": False}], False),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}], False),
        (
            [
                {"devices": [0], "mig-enabled": True, "mig-devices": {"1g.5gb": 7}},
                {"devices": [1], "mig-enabled": True, "mig-devices": {"1g.5gb": 3}},
            ],
            False,
        ),
        ([{"devices": "all", "mig-enabled": True, "mig-devices": {}}], True),
        (
            [
                {"devices": [0], "mig-enabled": True, "mig-devices": {"1g.5gb": 7}},
                {"devices": [1], "mig-enabled": True, "mig-devices": {"2g.10gb": 3}},
            ],
            True,
        ),
    ],
)
def test_single_strategy_problem(layout, problem):
    assert bool(single_strategy_problem(layout, 2)) is problem


MIG_ROWS = [
    ("NVIDIA-A30", 24576, "1g.6gb", "3g.40gb"),
    ("NVIDIA-A100-PCIE-40GB", 40960, "1g.5gb", "1g.20gb"),
    ("NVIDIA-A100-SXM4-80GB", 81920, "1g.10gb", "1g.5gb"),
    ("NVIDIA-H100-80GB-HBM3", 81559, "1g.10gb", "3g.20gb"),
    ("NVIDIA-H800", 81559, "1g.10gb", "1g.12gb"),
    ("NVIDIA-H100-NVL", 95830, "1g.12gb", "3g.48gb"),
    ("NVIDIA-H100-SXM5-96GB", 97871, "1g.12gb", "3g.47gb"),
    ("NVIDIA-H200", 143771, "1g.18gb", "1g.10gb"),
    ("NVIDIA-GH200-144G-HBM3e", 146831, "1g.18gb", "3g.71gb"),
    ("NVIDIA-B200", 183359, "1g.23gb", "1g.18gb"),
]


@pytest.mark.parametrize("product, memory, own, foreign", MIG_ROWS)
def test_every_mig_row_balanced_own_and_foreign_profiles(product, memory, own, foreign):
    node = gpu_node("n", product, 4, memory)
    model = find_gpu_model(product, memory)
    balanced = plan(
        MigRequest(
            ["n"],
            layout=[{"devices": "all", "mig-enabled": True, "mig-devices": dict(model.balanced)}],
            config_name="b",
            strategy="mixed",
        ),
        nodes=[node],
    )
    assert balanced.expectations["n"].devices == dict((p, n * 4) for p, n in model.balanced.items())
    own_max = plan(
        MigRequest(
            ["n"],
            layout=[{"devices": "all", "mig-enabled": True, "mig-devices": {own: model.profiles[own]}}],
            config_name="o",
        ),
        nodes=[node],
    )
    assert own_max.expectations["n"].devices == {own: model.profiles[own] * 4}
    too_many = [{"devices": "all", "mig-enabled": True, "mig-devices": {own: model.profiles[own] + 1}}]
    assert "holds at most" in refusal(MigRequest(["n"], layout=too_many, config_name="o"), nodes=[node])
    assert "does not exist on" in refusal(
        MigRequest(
            ["n"],
            layout=[{"devices": "all", "mig-enabled": True, "mig-devices": {foreign: 1}}],
            config_name="f",
            strategy="mixed",
        ),
        nodes=[node],
    )


def test_expectation_problems_and_failure():
    expectation = MigExpectation("all-1g.5gb", {"1g.5gb": 14}, "mixed")
    pending = a100_mid_change("pending", strategy="mixed")
    assert "pending" in expectation.problem(pending) and "paused-for-mig-change" in expectation.problem(pending)
    assert "2833" in expectation.problem(pending)
    assert "want all-1g.5gb" in expectation.problem(a100())
    failed = a100(mig_config="all-1g.5gb", state="failed", strategy="mixed")
    assert expectation.failed(failed) and not expectation.failed(pending)
    wrong = a100(mig_config="all-1g.5gb", strategy="mixed", extra={"nvidia.com/mig-1g.5gb.count": "7"})
    assert "1g.5gb x7 (want 1g.5gb x14)" in expectation.problem(wrong)
    done = a100(mig_config="all-1g.5gb", strategy="mixed", extra={"nvidia.com/mig-1g.5gb.count": "14"})
    assert expectation.problem(done) is None


def test_expectation_while_mig_manager_reboots_the_node():
    expectation = MigExpectation("all-1g.5gb", {"1g.5gb": 14}, "mixed")
    node = a100_mid_change("rebooting", strategy="mixed")
    down = "Kubelet stopped posting node status."
    node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "message": down}]
    problem = expectation.problem(node)
    assert "state=rebooting" in problem and "not back yet (Ready=Unknown: %s)" % down in problem
    assert "wait_timeout" in problem and "2833" not in problem and not expectation.failed(node)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert "Ready again and mig-manager resumes" in expectation.problem(node)


def test_single_strategy_devices_read_from_product_and_count():
    node = h100(
        mig_config="all-1g.10gb",
        extra={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "nvidia.com/gpu.count": "56"},
    )
    assert MigExpectation("all-1g.10gb", {"1g.10gb": 56}, "single").problem(node) is None
    assert MigExpectation("all-1g.10gb", None).problem(node) is None


def test_expected_devices_of_all_enabled_is_not_comparable():
    assert expected_devices([{"devices": "all", "mig-enabled": True, "mig-devices": {}}], 2) is None
    assert expected_devices([{"devices": "all", "mig-enabled": False}], 2) == {}


def test_unknown_gpu_refused_with_its_name_and_what_to_do():
    unknown = gpu_node("gpu-x-0", "NVIDIA-RTX-PRO-5000-Blackwell", 1, 48000)
    message = refusal(MigRequest(["gpu-x-0"], config="all-enabled", strategy="mixed"), nodes=[unknown])
    assert "NVIDIA-RTX-PRO-5000-Blackwell, 48000 MiB" in message
    assert "is not one the collection's catalog knows" in message and "upgrade gpushare.k8s" in message


def test_h800_nvl_is_not_an_h800_80gb():
    node = gpu_node("gpu-nvl-0", "NVIDIA-H800-NVL", 2, 95830)
    message = refusal(MigRequest(["gpu-nvl-0"], config="all-1g.10gb", strategy="mixed"), nodes=[node])
    assert "H100 NVL 94GB" in message


def test_media_extension_layout_and_canonical_rewrite():
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1c.1g.10gb+me": 1, "1g.10gb": 6}}]
    result = plan(MigRequest(["gpu-h100-0"], layout=layout, config_name="me-and-six", strategy="mixed"))
    assert result.expectations["gpu-h100-0"].devices == {"1g.10gb+me": 8, "1g.10gb": 48}
    assert any("rewritten as 1g.10gb+me" in warning for warning in result.warnings)
    written = yaml.safe_load(result.config_map_create[MIG_PARTED_KEY])["mig-configs"]["me-and-six"]
    assert written == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb+me": 1, "1g.10gb": 6}}]


def test_typo_in_a_custom_layout_refused_before_any_write():
    layout = [{"devices": "all", "mig-enabled": True, "mig-device": {"1g.10gb": 7}}]
    message = refusal(MigRequest(["gpu-h100-0"], layout=layout, config_name="typo", strategy="mixed"))
    assert "unexpected field 'mig-device'" in message


def test_broken_config_elsewhere_in_the_configmap_refused():
    broken = config_map("custom-mig-parted-config", dict(SHIPPED, other=[{"devices": "all"}]))
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.80gb": 1}}]
    message = refusal(MigRequest(["gpu-h100-0"], layout=layout, config_name="whole", strategy="mixed"), target=broken)
    assert "config other entry 0: missing required field mig-enabled" in message


@pytest.mark.parametrize("state", ["pending", "failed"])
def test_a_replan_takes_the_tasks_own_label_for_its_own_change(state):
    """A conflict (409) after this task labelled a node makes it read and plan again; the node then shows the task's
    own config, pending or already failed. The first plan checked that node, so it is not refused as an earlier
    change: it gets no second patch, and its expectation stays for the wait, which reports the failure."""
    written = a100(mig_config="all-1g.5gb", state=state)
    other = a100("gpu-a100-1")
    replan = plan(
        MigRequest(["gpu-a100-0", "gpu-a100-1"], config="all-1g.5gb", checked_nodes=["gpu-a100-0", "gpu-a100-1"]),
        nodes=[written, other],
    )
    assert sorted(replan.node_patches) == ["gpu-a100-1"]
    assert sorted(replan.expectations) == ["gpu-a100-0", "gpu-a100-1"]
    assert replan.expectations["gpu-a100-0"].failed(written) is (state == "failed")
    # A first plan that sees the node so: pending on the very config asked for is a change under way, waited for
    # with nothing written (the sharing role's rounds, a run after one that stopped waiting); failed is refused.
    if state == "pending":
        first = plan(MigRequest(["gpu-a100-0"], config="all-1g.5gb"), nodes=[written])
        assert first.node_patches == {} and sorted(first.expectations) == ["gpu-a100-0"]
    else:
        assert "failed, and mig-manager does not retry" in refusal(
            MigRequest(["gpu-a100-0"], config="all-1g.5gb"), nodes=[written]
        )


def test_a_replan_still_refuses_another_change_pending_on_a_checked_node():
    """Checked by the first plan, but now pending on another config: someone else's change, still refused."""
    node = a100(mig_config="all-balanced", state="pending")
    msg = refusal(MigRequest(["gpu-a100-0"], config="all-1g.5gb", checked_nodes=["gpu-a100-0"]), nodes=[node])
    assert "previous MIG change to all-balanced is still pending" in msg
