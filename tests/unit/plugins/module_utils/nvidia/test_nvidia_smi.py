# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_nvidia_smi's pure parts: the parsers of ``nvidia-smi -L`` and ``nvidia-smi mig -lgi`` on real outputs, the
choice of the pod to run them in, and of its container. The pods/exec calls and the per-node reports are
tested against the local cluster (tests/integration/test_gpu_nvidia_smi.py).

Outputs: ``data/nvidia/nvidia-smi-*.txt`` next to this file (copies; its README names each source)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
from k8s_objects import NAMESPACE, container, pod

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube import pod_exec
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.nvidia_smi import (
    nvidia_smi_pod,
    parse_gpu_instances,
    parse_gpu_list,
)

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "nvidia")


def output(name):
    with open(os.path.join(DATA, name)) as data_file:
        return data_file.read()


def instance(gpu, profile, profile_id, instance_id, start, size):
    return dict(
        gpu=gpu,
        profile=profile,
        profile_id=profile_id,
        instance_id=instance_id,
        placement=dict(start=start, size=size),
    )


# --- nvidia-smi -L ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, gpu",
    [
        (
            "nvidia-smi-L-h100-80gb-hbm3.txt",
            dict(
                index=0,
                name="NVIDIA H100 80GB HBM3",
                uuid="GPU-4105e5ed-d7bd-00a7-11b9-802094451979",
                mig_devices=[],
            ),
        ),
        (
            "nvidia-smi-L-h200.txt",
            dict(index=0, name="NVIDIA H200", uuid="GPU-b1267e25-009c-4eeb-46c7-35a1f773ed67", mig_devices=[]),
        ),
    ],
)
def test_a_gpu_without_mig_is_one_line(name, gpu):
    assert parse_gpu_list(output(name)) == [gpu]


def test_mig_devices_are_listed_under_their_gpu_with_profile_index_and_uuid():
    (gpu,) = parse_gpu_list(output("nvidia-smi-L-h100-pcie-mig.txt"))
    assert (gpu["name"], gpu["uuid"]) == ("NVIDIA H100 PCIe", "GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02")
    assert gpu["mig_devices"] == [
        dict(index=0, profile="3g.40gb", uuid="MIG-da06d78f-7534-56a0-a062-62fef012be91"),
        dict(index=1, profile="1g.10gb", uuid="MIG-8aa1fc52-9818-58ec-bc64-8f0cae121bb4"),
        dict(index=2, profile="1g.10gb", uuid="MIG-42fa9c93-1430-5ccc-b623-c02fb93b7f5a"),
        dict(index=3, profile="1g.10gb", uuid="MIG-6d96b431-44ba-5360-80b0-9359561c927d"),
    ]


def test_drivers_before_r470_print_gpu_instance_and_compute_instance_in_the_mig_uuid():
    (gpu,) = parse_gpu_list(output("nvidia-smi-L-a100-sxm4-40gb-mig-legacy-uuid.txt"))
    assert gpu["name"] == "A100-SXM4-40GB"
    assert [device["profile"] for device in gpu["mig_devices"]] == ["1g.5gb"] * 7
    assert [device["index"] for device in gpu["mig_devices"]] == list(range(7))
    assert [device["uuid"].rsplit("/", 2)[1] for device in gpu["mig_devices"]] == [
        "7",
        "8",
        "9",
        "11",
        "12",
        "13",
        "14",
    ]
    assert gpu["mig_devices"][0]["uuid"] == "MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/7/0"


def test_several_gpus_some_with_mig():
    gpus = parse_gpu_list(output("nvidia-smi-L-a100-sxm4-80gb-four-gpus.txt"))
    assert [(gpu["index"], len(gpu["mig_devices"])) for gpu in gpus] == [(0, 4), (1, 0), (2, 0), (3, 0)]
    assert {device["profile"] for device in gpus[0]["mig_devices"]} == {"1g.20gb"}
    assert gpus[3]["uuid"] == "GPU-69ec2344-ebac-b028-f88f-452abb3d7f11"


def test_compute_instance_profiles_are_kept_as_printed():
    (gpu,) = parse_gpu_list(output("nvidia-smi-L-a100-sxm4-40gb-compute-instances.txt"))
    assert [device["profile"] for device in gpu["mig_devices"]] == ["1c.3g.20gb", "1c.3g.20gb"]


def test_a_media_extension_device():
    # Built from the H100 PCIe listing's layout (see the data README: no public capture of a +me device).
    text = output("nvidia-smi-L-h100-pcie-mig.txt") + (
        "  MIG 1g.10gb+me  Device  4: (UUID: MIG-00000000-0000-0000-0000-000000000000)\n"
    )
    assert parse_gpu_list(text)[0]["mig_devices"][4] == dict(
        index=4, profile="1g.10gb+me", uuid="MIG-00000000-0000-0000-0000-000000000000"
    )


@pytest.mark.parametrize(
    "text, line",
    [
        # What nvidia-smi prints when it cannot talk to the driver.
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n",
            1,
        ),
        # The full `nvidia-smi` table is not the listing.
        ("+-----------------------------------------------------------------------------------------+\n", 1),
        # A MIG device with no GPU above it.
        ("  MIG 1g.10gb     Device  0: (UUID: MIG-da06d78f-7534-56a0-a062-62fef012be91)\n", 1),
        # A profile go-nvlib's grammar refuses.
        (output("nvidia-smi-L-h100-pcie-mig.txt").replace("MIG 1g.10gb     Device  2", "MIG 1x.10gb     Device  2"), 4),
    ],
)
def test_anything_else_is_refused_naming_the_line(text, line):
    with pytest.raises(GpuShareError) as error:
        parse_gpu_list(text)
    assert "'nvidia-smi -L' printed something this module does not know, on line %d" % line in error.value.msg


def test_no_gpu_listed_is_an_error():
    with pytest.raises(GpuShareError, match="listed no GPU: 'No devices were found'"):
        parse_gpu_list("No devices were found\n")
    with pytest.raises(GpuShareError, match="listed no GPU"):
        parse_gpu_list("")


# --- nvidia-smi mig -lgi ------------------------------------------------------------------------


def test_gpu_instances_with_profile_ids_and_placements():
    assert parse_gpu_instances(output("nvidia-smi-mig-lgi-h100-pcie-mig.txt")) == [
        instance(0, "1g.10gb", 19, 7, 0, 1),
        instance(0, "1g.10gb", 19, 8, 1, 1),
        instance(0, "1g.10gb", 19, 9, 2, 1),
        instance(0, "3g.40gb", 9, 2, 4, 4),
    ]


def test_the_same_gpu_lists_as_many_devices_as_instances_of_each_profile():
    devices = parse_gpu_list(output("nvidia-smi-L-h100-pcie-mig.txt"))[0]["mig_devices"]
    instances = parse_gpu_instances(output("nvidia-smi-mig-lgi-h100-pcie-mig.txt"))
    assert sorted(device["profile"] for device in devices) == sorted(gi["profile"] for gi in instances)


def test_the_older_narrower_table():
    instances = parse_gpu_instances(output("nvidia-smi-mig-lgi-a100-40gb-all-1g.5gb.txt"))
    assert [(gi["instance_id"], gi["placement"]["start"]) for gi in instances] == [(7 + n, n) for n in range(7)]
    assert {(gi["gpu"], gi["profile"], gi["profile_id"], gi["placement"]["size"]) for gi in instances} == {
        (0, "1g.5gb", 19, 1)
    }


def test_several_gpus_and_profiles():
    instances = parse_gpu_instances(output("nvidia-smi-mig-lgi-two-gpus-three-profiles.txt"))
    assert [gi["gpu"] for gi in instances] == [0] * 4 + [1] * 4
    assert instances[2] == instance(0, "2g.20gb", 14, 3, 0, 2)
    assert instances[7] == instance(1, "3g.40gb", 9, 1, 4, 4)


def test_a_media_extension_instance():
    # Built from the H100 PCIe table's layout with the +me profile's name and ID as the reference H100's
    # `nvidia-smi mig -lgip` lists them (MIG 1g.10gb+me, 20); see the data README.
    rows = output("nvidia-smi-mig-lgi-h100-pcie-mig.txt") + (
        "|   0  MIG 1g.10gb+me      20       13          3:1     |\n"
        "+-------------------------------------------------------+\n"
    )
    assert parse_gpu_instances(rows)[-1] == instance(0, "1g.10gb+me", 20, 13, 3, 1)


@pytest.mark.parametrize(
    "text",
    [
        output("nvidia-smi-mig-lgi-h100-80gb-hbm3-mig-disabled.txt"),
        # MIG on, no GPU instance yet.
        "No GPU instances found: Not Found\n",
    ],
)
def test_mig_off_or_no_instance_is_an_empty_list(text):
    assert parse_gpu_instances(text) == []


@pytest.mark.parametrize(
    "text, message",
    [
        (
            output("nvidia-smi-mig-lgi-h100-pcie-mig.txt").replace("MIG 3g.40gb          9", "MIG 3g.40gb          x"),
            "on line 12: '|   0  MIG 3g.40gb          x        2          4:4     |'",
        ),
        (
            output("nvidia-smi-mig-lgi-h100-pcie-mig.txt").replace(
                "MIG 1g.10gb         19        8", "MIG 1g.10gb+  19 8"
            ),
            "on line 8:",
        ),
        ("Failed to display GPU instances: Insufficient Permissions\n", "on line 1:"),
        ("", "printed neither its GPU-instance table nor one of No MIG-enabled devices found, No GPU instances"),
    ],
)
def test_anything_else_is_a_clear_error(text, message):
    with pytest.raises(GpuShareError) as error:
        parse_gpu_instances(text)
    assert "'nvidia-smi mig -lgi'" in error.value.msg and message in error.value.msg


# --- the pod and container (nvidia/nvidia_smi.py, kube/pod_exec.py) ------------------------------


def operand_pod(name, daemonset, node, phase="Running", containers=("nvidia-driver-ctr",), annotations=None):
    result = pod(name, [container(ctr) for ctr in containers], namespace=NAMESPACE, node_name=node, phase=phase)
    result["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": daemonset}]
    if annotations:
        result["metadata"]["annotations"] = annotations
    return result


def test_the_container_is_the_one_kubectl_exec_picks():
    annotated = operand_pod(
        "nvidia-driver-daemonset-x7k2p",
        "nvidia-driver-daemonset",
        "gpu-h100-0",
        containers=("nvidia-peermem-ctr", "nvidia-driver-ctr"),
        annotations={"kubectl.kubernetes.io/default-container": "nvidia-driver-ctr"},
    )
    assert pod_exec.default_container(annotated) == "nvidia-driver-ctr"
    toolkit = operand_pod(
        "nvidia-container-toolkit-daemonset-4h2lq",
        "nvidia-container-toolkit-daemonset",
        "gpu-h100-0",
        containers=("nvidia-container-toolkit-ctr",),
    )
    assert pod_exec.default_container(toolkit) == "nvidia-container-toolkit-ctr"


def test_the_driver_pod_first_then_the_toolkit_pod():
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    toolkit = operand_pod(
        "nvidia-container-toolkit-daemonset-4h2lq", "nvidia-container-toolkit-daemonset", "gpu-h100-0"
    )
    elsewhere = operand_pod("nvidia-driver-daemonset-9zq8m", "nvidia-driver-daemonset", "gpu-h100-1")
    assert nvidia_smi_pod([toolkit, elsewhere, driver], "gpu-h100-0", NAMESPACE) is driver
    # Preinstalled driver: no driver pod on the node.
    assert nvidia_smi_pod([toolkit, elsewhere], "gpu-h100-0", NAMESPACE) is toolkit
    # OpenShift's Driver Toolkit path: one driver DaemonSet per RHCOS version.
    versioned = operand_pod("nvidia-driver-daemonset-415.92.2024-0-abcde", "nvidia-driver-daemonset-415.92.2024-0", "n")
    assert nvidia_smi_pod([versioned], "n", NAMESPACE) is versioned


def test_no_pod_names_the_daemonsets_looked_for():
    deleting = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    deleting["metadata"]["deletionTimestamp"] = "2026-11-23T10:00:00Z"
    with pytest.raises(GpuShareError) as error:
        nvidia_smi_pod([deleting], "gpu-h100-0", NAMESPACE)
    assert error.value.msg.startswith(
        "No pod of the DaemonSet nvidia-driver-daemonset* (the operator's driver) or "
        "nvidia-container-toolkit-daemonset (preinstalled drivers) runs on node gpu-h100-0 in namespace "
        "gpu-operator:"
    )


def test_a_driver_pod_that_is_not_running_is_not_replaced_by_the_toolkit_pod():
    starting = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0", phase="Pending")
    toolkit = operand_pod(
        "nvidia-container-toolkit-daemonset-4h2lq", "nvidia-container-toolkit-daemonset", "gpu-h100-0"
    )
    with pytest.raises(GpuShareError, match="nvidia-driver-daemonset-x7k2p on node gpu-h100-0 is Pending, not Running"):
        nvidia_smi_pod([starting, toolkit], "gpu-h100-0", NAMESPACE)
