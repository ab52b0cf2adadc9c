# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/gpu_catalog: GPU models and their MIG profiles, found by device ID or by product and memory; every device ID
of NVIDIA's shipped MIG config is in the catalog, and memory matches NVML where it was measured."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from nvidia_rules import DEVICE_IDS, load

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import (
    MIG_GPU_MODELS,
    base_product,
    describe_mig_profiles,
    find_gpu_model,
    is_valid_profile_name,
    mig_memory_mib,
    mig_profile_of_product,
    model_by_device_id,
    profile_memory_gb,
    profile_slices,
)


def test_every_device_id_of_the_shipped_config_is_in_the_catalog():
    """mig-parted-rules.md section 6, pci-device-ids.json: the 27 device IDs of the shipped filters."""
    assert len(DEVICE_IDS) == 27
    for device_id in DEVICE_IDS:
        assert model_by_device_id(device_id) is not None, device_id
    assert sorted(d for model in MIG_GPU_MODELS for d in model.device_ids) == sorted(DEVICE_IDS)


@pytest.mark.parametrize(
    "dump, device_id", [("h100-80gb-hbm3-nvml.json", "0x233010DE"), ("h200-nvml.json", "0x233510DE")]
)
def test_catalog_matches_nvml_where_measured(dump, device_id):
    """The NVML dumps: every profile with its slices, most instances and memory (MiB), nothing more."""
    gpu = load(dump)["gpus"][0]
    model = model_by_device_id(device_id)
    measured = dict((p["name"][len("MIG ") :], p) for p in gpu["gpu_instance_profiles"])
    assert sorted(model.profiles) == sorted(measured)
    for name, record in measured.items():
        facts = model.facts[name]
        assert (facts["slices"], facts["max_count"], facts["memory_mib"]) == (
            record["sliceCount"],
            record["instanceCount"],
            record["memorySizeMB"],
        ), name
        assert facts["memory_source"].startswith("NVML")
    # found by product and memory as GFD labels the node
    product = gpu["name"].replace(" ", "-")
    assert find_gpu_model(product, gpu["memory_total_mib"]) is model


def test_unmeasured_memory_is_marked_as_the_rule():
    for model in MIG_GPU_MODELS:
        for name, facts in model.facts.items():
            assert facts["memory_source"].startswith("NVML") or facts["memory_source"].startswith("rule"), name


# The reference file's MIG table, section 4: (product label, memory MiB, model name, profiles, balanced).
MIG_ROWS = [
    ("NVIDIA-A30", 24576, "A30 24GB", {"1g.6gb": 4, "2g.12gb": 2, "4g.24gb": 1}, {"1g.6gb": 2, "2g.12gb": 1}),
    (
        "NVIDIA-A100-PCIE-40GB",
        40960,
        "A100 40GB",
        {"1g.5gb": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
        {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
    ),
    (
        "NVIDIA-A100-SXM4-80GB",
        81920,
        "A100 80GB",
        {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
        {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    ),
    (
        "NVIDIA-H100-80GB-HBM3",
        81559,
        "H100 80GB HBM3",
        {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
        {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    ),
    (
        "NVIDIA-H800",
        81559,
        "H100 80GB",
        {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
        {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    ),
    (
        "NVIDIA-H100-NVL",
        95830,
        "H100 NVL 94GB",
        {"1g.12gb": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1, "7g.94gb": 1},
        {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
    ),
    (
        "NVIDIA-H100-SXM5-96GB",
        97871,
        "H100 96GB",
        {"1g.12gb": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.48gb": 2, "4g.48gb": 1, "7g.96gb": 1},
        {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
    ),
    (
        "NVIDIA-GH200-480GB",
        97871,
        "H100 96GB",
        {"1g.12gb": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.48gb": 2, "4g.48gb": 1, "7g.96gb": 1},
        {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
    ),
    (
        "NVIDIA-H20",
        97871,
        "H100 96GB",
        {"1g.12gb": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.48gb": 2, "4g.48gb": 1, "7g.96gb": 1},
        {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
    ),
    (
        "NVIDIA-H200",
        143771,
        "H200 141GB",
        {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
        {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
    ),
    (
        "NVIDIA-GH200-144G-HBM3e",
        146831,
        "GH200 144GB",
        {"1g.18gb": 7, "1g.36gb": 4, "2g.36gb": 3, "3g.72gb": 2, "4g.72gb": 1, "7g.144gb": 1},
        {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1},
    ),
    (
        "NVIDIA-B200",
        183359,
        "B200 180GB",
        {"1g.23gb": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1},
        {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},
    ),
]


@pytest.mark.parametrize("product, memory_mib, name, profiles, balanced", MIG_ROWS, ids=[row[0] for row in MIG_ROWS])
def test_mig_table_rows(product, memory_mib, name, profiles, balanced):
    """The reference's MIG table (profiles without attributes); the +me profile comes on top (max 1)."""
    model = find_gpu_model(product, memory_mib)
    assert model.name == name
    assert model.mig_capable is True
    assert dict((p, n) for p, n in model.profiles.items() if "+" not in p) == profiles
    smallest = min(profiles, key=lambda p: (profile_slices(p), profile_memory_gb(p)))
    media = dict((p, n) for p, n in model.profiles.items() if "+" in p)
    assert media[smallest + "+me"] == 1
    assert all(count == 1 and p.split("+")[0] in profiles for p, count in media.items())
    assert model.balanced == balanced


@pytest.mark.parametrize(
    "product, memory_mib, name",
    [
        ("NVIDIA-A100-SXM4-40GB", 40960, "A100 40GB"),
        ("NVIDIA-A100-80GB-PCIe", 81920, "A100 80GB"),
        # No size in the name: the memory label decides.
        ("NVIDIA-H100-PCIe", 81559, "H100 80GB"),
        # No memory label: the size in the name decides.
        ("NVIDIA-A100-SXM4-80GB", None, "A100 80GB"),
        ("NVIDIA-H100-80GB-HBM3", None, "H100 80GB HBM3"),
        # Name and memory disagree: the memory label is what the driver reports.
        ("NVIDIA-A100-PCIE-40GB", 81920, "A100 80GB"),
        # Suffixes GFD appends.
        ("NVIDIA-A100-PCIE-40GB-SHARED", 40960, "A100 40GB"),
        # MIG single strategy: the memory label is the MIG device's, the profile picks the row.
        ("NVIDIA-H100-PCIe-MIG-1g.10gb", 9728, "H100 80GB"),
        ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", 9728, "H100 80GB HBM3"),
        ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me", 9984, "H100 80GB HBM3"),
        ("NVIDIA-H100-PCIe-MIG-1g.12gb", 11008, "H100 96GB"),
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", 4864, "A100 40GB"),
        ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", 9728, "A100 80GB"),
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.10gb-SHARED", 9728, "A100 40GB"),
        ("NVIDIA-A100-SXM4-80GB-MIG-INVALID", 0, "A100 80GB"),
        ("NVIDIA-A800-SXM4-80GB", 81920, "A100 80GB"),
        # The H800 NVL (94 GB) must not be taken for an H800 80GB.
        ("NVIDIA-H800-NVL", 95830, "H100 NVL 94GB"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", 97887, "RTX PRO 6000 Blackwell 96GB"),
        ("NVIDIA-GB200", 189471, "GB200 186GB"),
        ("NVIDIA-B300-SXM6-AC", 275040, "B300 269GB"),
        ("NVIDIA-H100-NVL-SHARED", 95830, "H100 NVL 94GB"),
    ],
)
def test_find_gpu_model_picks_row(product, memory_mib, name):
    assert find_gpu_model(product, memory_mib).name == name


@pytest.mark.parametrize(
    "product, memory_mib",
    [
        # Unknown products.
        ("NVIDIA-Z9000", 40960),
        ("", 40960),
        (None, None),
        # RTX PRO 5000 Blackwell has MIG but no device ID in NVIDIA's config: unknown rather than wrongly "no MIG".
        ("NVIDIA-RTX-PRO-5000-Blackwell", 48000),
        # An H800 whose memory is neither 80 nor 94 GB.
        ("NVIDIA-H800", 60000),
        # Ambiguous: an A100 without size in name or memory.
        ("NVIDIA-A100", None),
        # A memory that matches no row and no size in the name.
        ("NVIDIA-GH200-480GB", 60000),
    ],
)
def test_find_gpu_model_unknown(product, memory_mib):
    assert find_gpu_model(product, memory_mib) is None


@pytest.mark.parametrize(
    "product, name",
    [
        ("Tesla-T4", "T4"),
        ("Tesla-T4-SHARED", "T4"),
        ("NVIDIA-A10", "A10"),
        ("NVIDIA-A10G", "A10G"),
        ("NVIDIA-L4", "L4"),
        ("NVIDIA-L40S", "L40S"),
        ("NVIDIA-A40", "A40"),
        ("Tesla-V100-SXM2-16GB", "V100 SXM2 16GB"),
        ("NVIDIA-RTX-A6000", "RTX A6000"),
        ("NVIDIA-GeForce-RTX-4090", "GeForce RTX 4090"),
    ],
)
def test_non_mig_gpus(product, name):
    model = find_gpu_model(product, 15360)
    assert model.name == name
    assert model.mig_capable is False
    assert model.profiles == {}
    assert model.balanced == {}
    assert model.compute_slices == 0


@pytest.mark.parametrize(
    "product, base",
    [
        ("Tesla-T4-SHARED", "Tesla-T4"),
        ("NVIDIA-H100-PCIe-MIG-1g.10gb", "NVIDIA-H100-PCIe"),
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", "NVIDIA-A100-SXM4-40GB"),
        ("NVIDIA-H100-80GB-HBM3-MIG-INVALID", "NVIDIA-H100-80GB-HBM3"),
        ("NVIDIA-A10G", "NVIDIA-A10G"),
    ],
)
def test_base_product(product, base):
    assert base_product(product) == base


@pytest.mark.parametrize(
    "product, profile",
    [
        ("NVIDIA-H100-PCIe-MIG-1g.10gb", "1g.10gb"),
        ("NVIDIA-A100-SXM4-40GB-MIG-3g.20gb-SHARED", "3g.20gb"),
        ("NVIDIA-H100-PCIe-MIG-INVALID", None),
        ("NVIDIA-H100-PCIe", None),
    ],
)
def test_mig_profile_of_product(product, profile):
    assert mig_profile_of_product(product) == profile


@pytest.mark.parametrize(
    "profile, slices, memory_gb", [("1g.5gb", 1, 5), ("3g.40gb", 3, 40), ("7g.141gb", 7, 141), ("4g.24gb", 4, 24)]
)
def test_profile_parts(profile, slices, memory_gb):
    assert is_valid_profile_name(profile)
    assert profile_slices(profile) == slices
    assert profile_memory_gb(profile) == memory_gb


@pytest.mark.parametrize("profile", ["", "3g", "3g.40", "3g.40GB", "1g.10gb.me", "gpu", None, 3])
def test_invalid_profile_names(profile):
    assert not is_valid_profile_name(profile)
    with pytest.raises(GpuShareError, match="MIG profile"):
        profile_slices(profile)


def test_compute_slices_follow_the_full_gpu_profile():
    assert find_gpu_model("NVIDIA-A30", 24576).compute_slices == 4
    assert find_gpu_model("NVIDIA-H100-PCIe", 81559).compute_slices == 7


@pytest.mark.parametrize(
    "product, memory_mib, profiles", [(row[0], row[1], row[3]) for row in MIG_ROWS], ids=[row[2] for row in MIG_ROWS]
)
def test_profile_memory_slices_fit_eight(product, memory_mib, profiles):
    model = find_gpu_model(product, memory_mib)
    # The table's max instances are the placements nvidia-smi mig -lgipp lists (memory and compute slices).
    for profile, most in profiles.items():
        assert most == len(model.placements(profile)), profile


def test_mig_memory_mib():
    model = find_gpu_model("NVIDIA-H100-PCIe", 81559)
    assert mig_memory_mib(model, "3g.40gb") == 40960
    with pytest.raises(
        GpuShareError, match=r"3g\.20gb does not exist on H100 80GB; valid profiles: 1g\.10gb \(max 7\)"
    ):
        mig_memory_mib(model, "3g.20gb")


def test_describe_profiles_orders_by_slices():
    model = find_gpu_model("NVIDIA-A30", 24576)
    assert describe_mig_profiles(model) == (
        "1g.6gb (max 4), 1g.6gb+me (max 1), 2g.12gb (max 2), 2g.12gb+me (max 1), 4g.24gb (max 1)"
    )
    assert describe_mig_profiles(find_gpu_model("Tesla-T4", 15360)) == "none"
