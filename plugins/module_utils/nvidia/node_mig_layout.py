# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's MIG layout as NVIDIA's components make it: the layout its ``nvidia.com/mig.config`` label stands for (the
config mig-manager reads, else NVIDIA's shipped one), that layout GPU by GPU, and the node's physical GPUs (GPU Feature
Discovery's single strategy counts MIG devices instead). Shared by gpu_mig_config's planner (plan/mig.py) and
gpu_sharing_plan's (plan/sharing_planner/supply.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import MIG_STRATEGY_SINGLE
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import mig_profile_of_product
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import (
    ALL_DEVICES,
    gpu_indices,
    gpu_layout_of,
    is_shipped_config_name,
    resolve_shipped_config,
)


def layout_per_gpu(layout, gpu_count):
    """A validated layout GPU by GPU: index -> its GPU layout (``nvidia/mig_layouts``' form: sorted (profile, count)
    pairs, counts above zero; empty with MIG on and no instances), or None where MIG is off."""
    per_gpu = {}
    for entry in layout:
        for index in gpu_indices(entry, gpu_count):
            per_gpu[index] = gpu_layout_of(entry)
    return per_gpu


def current_layout(state, configs, gpu_count=None):
    """The layout a node's current mig.config label stands for (from ``configs``, the ConfigMap mig-manager reads,
    else NVIDIA's shipped one) on its ``gpu_count`` GPUs (None: unknown, only ``devices: all`` entries resolve), or
    None when it cannot be read back. ``state``: the node's ``NodeGpuState``."""
    name = state.mig_config
    layout = configs.get(name)
    layout = layout if isinstance(layout, list) else None
    if layout is None and not is_shipped_config_name(name):
        return None
    try:
        return resolve_shipped_config(
            name, state.gpu_model, gpu_count, state.name, device_id=state.pci_device_id, layout=layout
        )
    except GpuShareError:
        return None


def physical_gpu_count(state, configs):
    """The node's physical GPUs. GFD's single strategy counts MIG devices in ``gpu.count`` instead, so
    the count is then derived from the layout the node's label names; None when that is not possible."""
    profile = mig_profile_of_product(state.product) if state.mig_strategy == MIG_STRATEGY_SINGLE else None
    if not profile:
        return state.count
    layout = current_layout(state, configs)
    if (
        not layout
        or len(layout) != 1
        or layout[0].get("devices", ALL_DEVICES) != ALL_DEVICES
        or layout[0].get("device-filter")
    ):
        return None
    per_gpu = (layout[0].get("mig-devices") or {}).get(profile)
    if not per_gpu or state.count % per_gpu:
        return None
    return state.count // per_gpu
