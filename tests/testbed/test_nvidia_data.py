"""The simulator's own NVIDIA facts (testbed/nvidia_data/, testbed/simulator/nvml.py), checked against
each other without a cluster: NVML dumps, NVIDIA's shipped MIG config, go-nvlib's naming rule."""

import os
import subprocess
import sys

import pytest

from testbed.simulator import mig_parted, nvml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEASURED = {"NVIDIA-H100-80GB-HBM3": "h100-80gb-hbm3-nvml.json", "NVIDIA-H200": "h200-nvml.json"}


def test_the_simulator_does_not_import_the_collection():
    """A wrong fact in the collection's catalog must not be confirmed by a stand-in that shares it."""
    code = (
        "import sys, testbed.seed, testbed.simulator.__main__, testbed.simulator.simulator; "
        "print(sorted(name for name in sys.modules if name.startswith('ansible_collections')))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, ".build")]))
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_nothing_in_the_testbed_reads_the_reference_folder():
    """nvidia_data/ holds copies; users do not have the folder they came from."""
    needle = "/".join(["", "shared", "reference"])
    offenders = []
    for top in ("testbed", os.path.join("tests", "testbed")):
        for folder, _dirs, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith(".py"):
                    with open(os.path.join(folder, name)) as source:
                        if needle in source.read():
                            offenders.append(os.path.join(folder, name))
    assert offenders == []


@pytest.mark.parametrize("product, dump", MEASURED.items())
def test_measured_gpus_take_every_fact_from_their_nvml_dump(product, dump):
    gpu = nvml.gpu(product)
    recorded = nvml.load(dump)["gpus"][0]
    assert nvml.gfd_product(recorded["name"]) == product
    assert (gpu.memory_mib, gpu.compute) == (recorded["memory_total_mib"], tuple(recorded["cuda_cc"]))
    assert {
        name: (profile.slices, profile.max_instances, profile.memory_mib, profile.profile_id)
        for name, profile in gpu.mig_profiles.items()
    } == {
        item["name"][len("MIG ") :]: (item["sliceCount"], item["instanceCount"], item["memorySizeMB"], item["id"])
        for item in recorded["gpu_instance_profiles"]
    }


def test_h100_profiles_as_measured():
    profiles = nvml.gpu("NVIDIA-H100-80GB-HBM3").mig_profiles
    assert {name: (profile.max_instances, profile.memory_mib) for name, profile in profiles.items()} == {
        "1g.10gb": (7, 9984),
        "1g.10gb+me": (1, 9984),
        "1g.20gb": (4, 20096),
        "2g.20gb": (3, 20096),
        "3g.40gb": (2, 40448),
        "4g.40gb": (1, 40448),
        "7g.80gb": (1, 81152),
    }


@pytest.mark.parametrize("product", sorted(nvml.gpus()))
def test_most_instances_agree_with_nvidia_shipped_configs(product):
    """Each profile's count in its shipped all-<profile> config (for this PCI id) is the most one GPU holds,
    including for the GPUs measured through NVML (a cross-check of two independent sources)."""
    gpu = nvml.gpu(product)
    configs = mig_parted.parse_config(mig_parted.shipped_config_yaml())
    hardware = {"product": product, "count": 1, "pci_device_id": gpu.pci_device_id}
    for name, profile in gpu.mig_profiles.items():
        assert mig_parted.apply_config(configs, "all-" + name.replace("+", "."), hardware, [None]) == [
            {name: profile.max_instances}
        ]


@pytest.mark.parametrize("product", sorted(nvml.gpus()))
def test_every_profile_memory_names_the_profile_under_go_nvlib_rule(product):
    gpu = nvml.gpu(product)
    for name, profile in gpu.mig_profiles.items():
        assert nvml.named_memory_gb(gpu.memory_mib, profile.memory_mib) == nvml.profile_memory_gb(name), name


def test_unmeasured_gpus_estimate_memory_as_the_named_share():
    a100 = nvml.gpu("NVIDIA-A100-PCIE-40GB").mig_profiles
    assert {name: profile.memory_mib for name, profile in a100.items()} == {
        "1g.5gb": 5120,
        "1g.5gb+me": 5120,
        "1g.10gb": 10240,
        "2g.10gb": 10240,
        "3g.20gb": 20480,
        "4g.20gb": 20480,
        "7g.40gb": 40960,
    }
    assert not any(profile.measured for profile in a100.values())


def test_balanced_layouts_are_nvidia_shipped_ones():
    configs = mig_parted.parse_config(mig_parted.shipped_config_yaml())
    expected = {
        "NVIDIA-A100-PCIE-40GB": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
        "NVIDIA-H100-80GB-HBM3": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
        "NVIDIA-H100-PCIe": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
        "NVIDIA-H200": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
    }
    for product, layout in expected.items():
        hardware = {"product": product, "count": 2, "pci_device_id": nvml.gpu(product).pci_device_id}
        assert mig_parted.apply_config(configs, "all-balanced", hardware, [None, None]) == [layout, layout]


def test_gpus_without_mig():
    for product in ("Tesla-T4", "NVIDIA-A10", "NVIDIA-L4"):
        assert not nvml.gpu(product).mig_capable
