# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest
from k8s_objects import gfd_labels, node

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_DEVICE_PLUGIN_CONFIG,
    NodeGpuState,
    count_of_quantity,
    deploy_label,
    mig_label,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import findings_for_node

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

A100_UNSHARED = node(
    "a100-1",
    gfd_labels(
        "NVIDIA-A100-SXM4-40GB",
        8,
        40960,
        **{
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": "single",
            "nvidia.com/mig.config": "all-disabled",
            "nvidia.com/mig.config.state": "success",
        },
    ),
    capacity={"nvidia.com/gpu": "8"},
    taints=[GPU_TAINT],
)
T4_TIME_SLICED = node(
    "t4-1",
    gfd_labels(
        "Tesla-T4-SHARED",
        1,
        15360,
        replicas=4,
        strategy="time-slicing",
        **{"nvidia.com/mig.capable": "false", LABEL_DEVICE_PLUGIN_CONFIG: "t4"},
    ),
    capacity={"nvidia.com/gpu": "4"},
)
A100_MPS_RENAMED = node(
    "a100-mps",
    gfd_labels("NVIDIA-A100-PCIE-40GB", 2, 40960, replicas=10, strategy="mps", **{"nvidia.com/mps.capable": "true"}),
    capacity={"nvidia.com/gpu": "2", "nvidia.com/gpu.shared": "20"},
    allocatable={"nvidia.com/gpu": "0"},
)
H100_MIG_SINGLE = node(
    "h100-single",
    gfd_labels(
        "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        14,
        9984,
        **{
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": "single",
            "nvidia.com/mig.config": "all-1g.10gb",
            "nvidia.com/mig.config.state": "success",
        },
    ),
    capacity={"nvidia.com/gpu": "14"},
)
H100_MIG_MIXED = node(
    "h100-mixed",
    gfd_labels(
        "NVIDIA-H100-80GB-HBM3",
        2,
        81559,
        **{
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig.config": "all-balanced",
            "nvidia.com/mig.config.state": "success",
            "nvidia.com/mig-1g.10gb.count": "4",
            "nvidia.com/mig-1g.10gb.memory": "9984",
            "nvidia.com/mig-1g.10gb.slices.gi": "1",
            "nvidia.com/mig-2g.20gb.count": "2",
            "nvidia.com/mig-3g.40gb.count": "2",
            "nvidia.com/mig-3g.40gb.slices.ci": "3",
        },
    ),
    capacity={
        "nvidia.com/gpu": "0",
        "nvidia.com/mig-1g.10gb": "4",
        "nvidia.com/mig-2g.20gb": "2",
        "nvidia.com/mig-3g.40gb": "2",
    },
)
PAUSED_LEFT_BEHIND = node(
    "h100-stuck",
    gfd_labels(
        "NVIDIA-H100-PCIe",
        1,
        81559,
        **{
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": "single",
            "nvidia.com/mig.config": "all-disabled",
            "nvidia.com/mig.config.state": "success",
            "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change",
            "nvidia.com/gpu.deploy.gpu-feature-discovery": "paused-for-mig-change",
            "nvidia.com/gpu.deploy.dcgm-exporter": "paused-for-mig-change",
        },
    ),
    capacity={"nvidia.com/gpu": "1"},
    unschedulable=True,
)
CPU_NODE = node("cpu-1", {})


def test_unshared_a100():
    state = NodeGpuState.from_node(A100_UNSHARED)
    assert state.name == "a100-1"
    assert state.product == state.base_product == "NVIDIA-A100-SXM4-40GB"
    assert state.gpu_model.name == "A100 40GB"
    assert (state.count, state.memory_mib, state.replicas, state.sharing_strategy) == (8, 40960, 1, "none")
    assert state.mig_capable is True
    assert state.mig_enabled is False
    assert (state.mig_strategy, state.mig_config, state.mig_config_state) == ("single", "all-disabled", "success")
    assert state.mps_capable is False
    assert state.device_plugin_config is None
    assert state.paused_components == []
    assert state.capacity == {"nvidia.com/gpu": 8}
    assert state.allocatable == {"nvidia.com/gpu": 8}
    assert state.taints == [GPU_TAINT]
    assert state.unschedulable is False
    assert state.is_gpu_node is True
    assert findings_for_node(state) == []


def test_time_sliced_t4():
    state = NodeGpuState.from_node(T4_TIME_SLICED)
    assert state.base_product == "Tesla-T4"
    assert state.gpu_model.name == "T4"
    assert state.gpu_model.mig_capable is False
    assert (state.count, state.replicas, state.sharing_strategy) == (1, 4, "time-slicing")
    assert state.device_plugin_config == "t4"
    assert state.shared_resource() == "nvidia.com/gpu"
    assert findings_for_node(state, ["t4", "a100"]) == []


def test_renamed_mps_a100():
    state = NodeGpuState.from_node(A100_MPS_RENAMED)
    assert state.mps_capable is True
    assert state.sharing_strategy == "mps"
    assert state.capacity == {"nvidia.com/gpu": 2, "nvidia.com/gpu.shared": 20}
    assert state.allocatable == {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 20}
    assert state.shared_resource() == "nvidia.com/gpu.shared"
    assert findings_for_node(state) == []


def test_renamed_with_wrong_count():
    broken = copy.deepcopy(A100_MPS_RENAMED)
    broken["status"]["capacity"]["nvidia.com/gpu.shared"] = "8"
    findings = findings_for_node(NodeGpuState.from_node(broken))
    assert len(findings) == 1
    assert findings[0].startswith(
        "capacity nvidia.com/gpu.shared is 8, expected nvidia.com/gpu.count 2 x nvidia.com/gpu.replicas 10 = 20"
    )


def test_mig_single_h100():
    state = NodeGpuState.from_node(H100_MIG_SINGLE)
    assert state.base_product == "NVIDIA-H100-80GB-HBM3"
    assert state.gpu_model.name == "H100 80GB HBM3"
    assert state.mig_enabled is True
    assert state.mig_resources == {}
    # count describes the MIG devices under the single strategy.
    assert state.count == 14
    assert findings_for_node(state) == []


def test_mig_mixed_h100():
    state = NodeGpuState.from_node(H100_MIG_MIXED)
    assert state.mig_enabled is True
    assert state.mig_strategy == "mixed"
    assert state.mig_resources == {"1g.10gb": 4, "2g.20gb": 2, "3g.40gb": 2}
    assert state.capacity["nvidia.com/mig-3g.40gb"] == 2
    # nvidia.com/gpu is 0 on MIG-enabled GPUs under mixed: not a finding.
    assert findings_for_node(state) == []


def test_mig_mixed_time_sliced_and_renamed():
    shared = copy.deepcopy(H100_MIG_MIXED)
    labels = shared["metadata"]["labels"]
    labels[mig_label("1g.10gb", "replicas")] = "2"
    shared["status"]["capacity"].pop("nvidia.com/mig-1g.10gb")
    shared["status"]["capacity"]["nvidia.com/mig-1g.10gb.shared"] = "8"
    state = NodeGpuState.from_node(shared)
    assert state.shared_resource("nvidia.com/mig-1g.10gb") == "nvidia.com/mig-1g.10gb.shared"
    assert findings_for_node(state) == []
    shared["status"]["capacity"]["nvidia.com/mig-1g.10gb.shared"] = "4"
    assert findings_for_node(NodeGpuState.from_node(shared)) == [
        "capacity nvidia.com/mig-1g.10gb.shared is 4, expected nvidia.com/mig-1g.10gb.count x 2 replicas = 8;"
        " the device plugin has not applied the current config (restart its DaemonSet)"
    ]


def test_mig_mixed_missing_resource():
    broken = copy.deepcopy(H100_MIG_MIXED)
    broken["status"]["capacity"].pop("nvidia.com/mig-2g.20gb")
    findings = findings_for_node(NodeGpuState.from_node(broken))
    assert [finding.split(";")[0] for finding in findings] == [
        "capacity nvidia.com/mig-2g.20gb is 0, expected nvidia.com/mig-2g.20gb.count x 1 replicas = 2"
    ]


def test_paused_labels_left_behind():
    state = NodeGpuState.from_node(PAUSED_LEFT_BEHIND)
    assert state.paused_components == ["dcgm-exporter", "device-plugin", "gpu-feature-discovery"]
    assert state.unschedulable is True
    findings = findings_for_node(state)
    assert len(findings) == 1
    assert (
        "nvidia.com/gpu.deploy.dcgm-exporter, nvidia.com/gpu.deploy.device-plugin, "
        "nvidia.com/gpu.deploy.gpu-feature-discovery" in findings[0]
    )
    assert "left behind while no MIG change is pending" in findings[0]


def test_pending_mig_change_is_reported_without_capacity_noise():
    pending = copy.deepcopy(PAUSED_LEFT_BEHIND)
    pending["metadata"]["labels"]["nvidia.com/mig.config"] = "all-1g.10gb"
    pending["metadata"]["labels"]["nvidia.com/mig.config.state"] = "pending"
    pending["status"]["capacity"]["nvidia.com/gpu"] = "0"
    findings = findings_for_node(NodeGpuState.from_node(pending))
    assert findings == [
        "MIG change to all-1g.10gb is pending; it cannot finish while GPU pods run on the node (mig-manager never "
        "evicts them)"
    ]


def test_failed_mig_change():
    failed = copy.deepcopy(H100_MIG_SINGLE)
    failed["metadata"]["labels"]["nvidia.com/mig.config"] = "all-3g.40gb"
    failed["metadata"]["labels"]["nvidia.com/mig.config.state"] = "failed"
    findings = findings_for_node(NodeGpuState.from_node(failed))
    assert len(findings) == 1
    assert findings[0].startswith("MIG change to all-3g.40gb failed; stop the GPU pods")


def test_mig_invalid_product():
    invalid = copy.deepcopy(H100_MIG_SINGLE)
    invalid["metadata"]["labels"].update(
        {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-INVALID", "nvidia.com/gpu.count": "0"}
    )
    invalid["status"]["capacity"]["nvidia.com/gpu"] = "0"
    state = NodeGpuState.from_node(invalid)
    assert state.mig_enabled is True
    assert state.gpu_model.name == "H100 80GB HBM3"
    assert findings_for_node(state) == [
        "GPU Feature Discovery reports an inconsistent MIG layout (NVIDIA-H100-80GB-HBM3-MIG-INVALID); apply a "
        "layout valid for this GPU"
    ]


@pytest.mark.parametrize(
    "capacity, expected",
    [
        ("4", []),
        ("1", ["capacity nvidia.com/gpu is 1, expected nvidia.com/gpu.count 1 x nvidia.com/gpu.replicas 4 = 4"]),
        (None, ["capacity nvidia.com/gpu is 0, expected nvidia.com/gpu.count 1 x nvidia.com/gpu.replicas 4 = 4"]),
    ],
)
def test_time_sliced_capacity(capacity, expected):
    t4 = copy.deepcopy(T4_TIME_SLICED)
    if capacity is None:
        del t4["status"]["capacity"]["nvidia.com/gpu"]
    else:
        t4["status"]["capacity"]["nvidia.com/gpu"] = capacity
    assert [finding.split(";")[0] for finding in findings_for_node(NodeGpuState.from_node(t4))] == expected


def test_unknown_config_key():
    findings = findings_for_node(NodeGpuState.from_node(T4_TIME_SLICED), config_keys=["any", "a100"])
    assert findings == [
        "label nvidia.com/device-plugin.config=t4 names no key of the device plugin ConfigMap (keys: a100, any); the "
        "plugin ignores it"
    ]
    assert findings_for_node(NodeGpuState.from_node(T4_TIME_SLICED), config_keys=[])[0].endswith(
        "(keys: none); the plugin ignores it"
    )


def test_gpu_node_without_gfd():
    bare = node("bare", {}, capacity={"nvidia.com/gpu": "1"})
    state = NodeGpuState.from_node(bare)
    assert state.is_gpu_node is True
    assert state.product is None and state.gpu_model is None
    assert state.count == 0 and state.replicas == 1 and state.sharing_strategy == "none"
    assert findings_for_node(state) == [
        "label nvidia.com/gpu.count is missing; GPU Feature Discovery is not running on the node"
    ]


def test_cpu_node():
    state = NodeGpuState.from_node(CPU_NODE)
    assert state.is_gpu_node is False
    assert state.capacity == {} and state.taints == []
    assert findings_for_node(state, config_keys=[]) == []


def test_gpu_present_alone_makes_a_gpu_node():
    assert NodeGpuState.from_node(node("new", {"nvidia.com/gpu.present": "true"})).is_gpu_node is True


def test_empty_node_dict():
    state = NodeGpuState.from_node({})
    assert state.name is None
    assert state.is_gpu_node is False


@pytest.mark.parametrize(
    "fixture",
    [A100_UNSHARED, T4_TIME_SLICED, A100_MPS_RENAMED, H100_MIG_SINGLE, H100_MIG_MIXED, PAUSED_LEFT_BEHIND, CPU_NODE],
)
def test_to_dict_is_json(fixture):
    result = NodeGpuState.from_node(fixture).to_dict()
    assert json.loads(json.dumps(result)) == result
    assert result["name"] == fixture["metadata"]["name"]


def test_to_dict_content():
    result = NodeGpuState.from_node(H100_MIG_MIXED).to_dict()
    assert result["gpu_model"] == "H100 80GB HBM3"
    assert result["mig_resources"] == {"1g.10gb": 4, "2g.20gb": 2, "3g.40gb": 2}
    assert result["capacity"]["nvidia.com/mig-1g.10gb"] == 4
    assert "cpu" not in result["capacity"]


def test_deploy_label():
    assert deploy_label("device-plugin") == "nvidia.com/gpu.deploy.device-plugin"


@pytest.mark.parametrize(
    "quantity, count",
    [
        ("8", 8),
        ("20k", 20000),
        ("1M", 1000000),
        ("2Ki", 2048),
        ("1.5k", 1500),
        ("2e3", 2000),
        ("25e-1", None),
        ("0.5", None),
        ("100m", None),
        ("lots", None),
        (None, None),
    ],
)
def test_counts_read_in_kubernetes_quantity_forms(quantity, count):
    # The API server writes 20,000 advertised devices as "20k": a wait must read it as 20000.
    assert count_of_quantity(quantity) == count
