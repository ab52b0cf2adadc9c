# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/mig_layouts: every GPU layout one GPU of a model holds (the sharing planner's search space, issue 22),
checked against facts it is not built from:

- NVIDIA's shipped MIG config, read from its copy in ``data/nvidia`` (not from the generated catalog): every MIG-enabled
  entry, mixed ones (all-balanced) included, is a GPU layout of each model it applies to, and the count of an
  ``all-<profile>`` entry whose device filter names the model is the most: one more is not there;
- NVML's instance counts measured on an H100 80GB HBM3 and an H200 (``data/nvidia``): as many as NVML says, not one
  more;
- the placement cases of mig-parted's rules on the H100 (test_nvidia_rules' section 5 table): each fitting one of
  GPU instances is there, none of the refused ones.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from nvidia_rules import PLACEMENTS

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIG_GPU_MODELS, model_by_device_id
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_layouts import gpu_layouts
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import check_gpu_fits

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "nvidia")
MODELS = [model for model in MIG_GPU_MODELS if model.mig_capable]


def load(name):
    with open(os.path.join(DATA, name)) as handle:
        return json.load(handle)


def gpu_layout(mig_devices):
    return tuple(sorted((profile, count) for profile, count in mig_devices.items() if count))


def shipped_gpu_layouts():
    """(config name, model, GPU layout, whether the entry's device filter names the model) of every MIG-enabled entry
    of NVIDIA's shipped config, for each model its device filter names (an entry without a filter: each model that has
    all its profiles; its count may be below that model's most, as all-1g.24gb's 4 on a GB200's 7)."""
    cases = []
    for name, entries in sorted(load("default-mig-parted-config.json")["configs"].items()):
        for entry in entries:
            if not entry["mig-enabled"] or not entry["mig-devices"]:
                continue
            filtered = entry["device-filter"] is not None
            if filtered:
                models = [model_by_device_id(device_id) for device_id in entry["device-filter"]]
            else:
                models = [m for m in MODELS if all(p in m.profiles for p in entry["mig-devices"])]
            cases += [(name, model, gpu_layout(entry["mig-devices"]), filtered) for model in models]
    return cases


SHIPPED = shipped_gpu_layouts()


def test_the_shipped_config_names_every_model():
    assert set(case[1].name for case in SHIPPED) == set(model.name for model in MODELS)


@pytest.mark.parametrize(
    "name, model, layout, filtered", SHIPPED, ids=["%s-%s" % (case[0], case[1].name) for case in SHIPPED]
)
def test_every_gpu_layout_nvidia_ships_is_there_and_a_single_profiles_count_is_the_most(name, model, layout, filtered):
    known = set(gpu_layouts(model))
    assert layout in known
    if filtered and name != "all-balanced" and len(layout) == 1:
        [(profile, count)] = layout
        assert ((profile, count + 1),) not in known


@pytest.mark.parametrize(
    "dump, device_id", [("h100-80gb-hbm3-nvml.json", "0x233010DE"), ("h200-nvml.json", "0x233510DE")]
)
def test_as_many_instances_of_each_profile_as_nvml_measured_and_not_one_more(dump, device_id):
    known = set(gpu_layouts(model_by_device_id(device_id)))
    for record in load(dump)["gpus"][0]["gpu_instance_profiles"]:
        profile = record["name"][len("MIG ") :]
        assert ((profile, record["instanceCount"]),) in known, profile
        assert ((profile, record["instanceCount"] + 1),) not in known, profile


# Compute-instance splits (1c.7g.80gb) divide a GPU instance and are no GPU layout of their own.
GPU_INSTANCE_CASES = [(devices, error) for devices, error in PLACEMENTS if not any("c." in p for p in devices)]


@pytest.mark.parametrize("mig_devices, error", GPU_INSTANCE_CASES)
def test_the_h100_placement_cases_of_mig_parteds_rules(mig_devices, error):
    known = set(gpu_layouts(model_by_device_id("0x233010DE")))
    # Zero counts kept: a profile the model lacks is refused even at 0.
    assert (tuple(sorted(mig_devices.items())) in known) is (error is None)


@pytest.mark.parametrize("model", MODELS, ids=[model.name for model in MODELS])
def test_nothing_mig_parted_accepts_is_missing(model):
    """One instance more than a GPU layout, when mig-parted's check accepts it, is a GPU layout too: the enumeration
    stops adding a profile only where the rules refuse."""
    layouts = gpu_layouts(model)
    known = set(layouts)
    assert () in known and len(known) == len(layouts)
    for layout in layouts:
        for profile in model.profiles:
            bigger = dict(layout, **{profile: dict(layout).get(profile, 0) + 1})
            try:
                check_gpu_fits(bigger, model, "test")
            except GpuShareError:
                continue
            assert gpu_layout(bigger) in known, (layout, profile)
