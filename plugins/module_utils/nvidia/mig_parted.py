# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG layouts in mig-parted's format (the ``config.yaml`` key of the MIG ConfigMap).

Pure: no I/O. A layout is the list mig-parted keeps under one name of ``mig-configs``:
``[{"devices": "all" | [0, 1], "mig-enabled": True, "mig-devices": {"1g.10gb": 2}}]``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import (
    MAX_COMPUTE_SLICES,
    MEMORY_SLICES,
    describe_mig_profiles,
    is_valid_profile_name,
    profile_slices,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config, load_yaml_mapping

ALL_DISABLED = "all-disabled"
ALL_ENABLED = "all-enabled"
ALL_BALANCED = "all-balanced"
SHIPPED_PROFILE_PREFIX = "all-"
MIG_PARTED_KEY = "config.yaml"


def is_shipped_config_name(name):
    """True for the names mig-manager ships: all-disabled, all-enabled, all-balanced and all-<profile>."""
    if not isinstance(name, str):
        return False
    if name in (ALL_DISABLED, ALL_ENABLED, ALL_BALANCED):
        return True
    return name.startswith(SHIPPED_PROFILE_PREFIX) and is_valid_profile_name(name[len(SHIPPED_PROFILE_PREFIX) :])


def _entry(enabled, devices=None):
    return {"devices": "all", "mig-enabled": enabled, "mig-devices": dict(devices or {})}


def _subject(model, node_name):
    subject = model.name if model is not None else "an unknown GPU"
    return "node %s (%s)" % (node_name, subject) if node_name else subject


def resolve_shipped_config(name, model, gpu_count, node_name=None):
    """The layout a shipped config name stands for on ``model``.

    all-disabled: MIG off; all-enabled: MIG on with no instances; all-balanced: the model's balanced
    layout; all-<profile>: as many instances of the profile as one GPU holds. Raises GpuShareError for
    a name that is not shipped or does not fit the model.
    """
    if name == ALL_DISABLED:
        return [_entry(False)]
    if not is_shipped_config_name(name):
        raise GpuShareError(
            "'%s' is not a shipped MIG config name (all-disabled, all-enabled, all-balanced, all-<profile>)" % (name,)
        )
    _require_mig(model, "%s: MIG config %s" % (_subject(model, node_name), name))
    if name == ALL_ENABLED:
        layout = [_entry(True)]
    elif name == ALL_BALANCED:
        layout = [_entry(True, model.balanced)]
    else:
        profile = name[len(SHIPPED_PROFILE_PREFIX) :]
        if profile not in model.profiles:
            raise GpuShareError(
                "%s: MIG config %s uses profile %s, which %s does not have; valid profiles: %s"
                % (_subject(model, node_name), name, profile, model.name, describe_mig_profiles(model))
            )
        layout = [_entry(True, {profile: model.profiles[profile]})]
    validate_mig_layout(layout, model, gpu_count, node_name)
    return layout


def _require_mig(model, where):
    if model is None:
        raise GpuShareError(
            "%s: the GPU model is unknown, so MIG cannot be checked or configured; MIG needs a supported GPU" % where
        )
    if not model.mig_capable:
        raise GpuShareError("%s: %s does not support MIG; use time-slicing or MPS to share it" % (where, model.name))


def _device_indices(devices, gpu_count, where):
    """The GPU indices an entry's ``devices`` covers; None stands for every GPU when the count is unknown."""
    if devices == "all":
        return set(range(gpu_count)) if gpu_count is not None else None
    if (
        not isinstance(devices, list)
        or not devices
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in devices)
    ):
        raise GpuShareError("%s: devices must be 'all' or a non-empty list of GPU indices, got %r" % (where, devices))
    for index in devices:
        if index < 0 or (gpu_count is not None and index >= gpu_count):
            valid = "0-%d" % (gpu_count - 1) if gpu_count else "none"
            raise GpuShareError(
                "%s: GPU index %d does not exist; the node has %s GPUs (valid indices: %s)"
                % (where, index, gpu_count, valid)
            )
    if len(set(devices)) != len(devices):
        raise GpuShareError("%s: devices lists a GPU index twice: %r" % (where, devices))
    return set(devices)


def validate_mig_layout(layout, model, gpu_count, node_name=None):
    """Check a layout against what ``model`` can hold; raise GpuShareError naming node, model and the fix.

    Per GPU: only the model's profiles, at most each profile's max instances, at most the GPU's
    compute slices (7; 4 on an A30) and its eight memory slices (so 2x3g.20gb + 1g.5gb, 7 compute
    slices but 45GB, is refused on an A100 40GB as the driver would). Across entries: each GPU once.
    """
    subject = _subject(model, node_name)
    if not isinstance(layout, list) or not layout:
        raise GpuShareError(
            "%s: a MIG layout must be a non-empty list of {devices, mig-enabled, mig-devices} entries" % subject
        )
    if gpu_count is not None and (not isinstance(gpu_count, int) or gpu_count < 0):
        raise GpuShareError("%s: GPU count must be a non-negative integer, got %r" % (subject, gpu_count))
    claimed = set()
    claimed_all = False
    for position, entry in enumerate(layout):
        where = "%s: MIG layout entry %d" % (subject, position)
        if not isinstance(entry, dict):
            raise GpuShareError("%s must be a mapping, got %r" % (where, entry))
        indices = _device_indices(entry.get("devices", "all"), gpu_count, where)
        if indices is None:
            overlap = claimed_all or bool(claimed)
            claimed_all = True
        else:
            overlap = claimed_all or bool(indices & claimed)
            claimed |= indices
        if overlap:
            raise GpuShareError(
                "%s: devices %r overlap an earlier entry; each GPU may appear in one entry only"
                % (where, entry.get("devices", "all"))
            )
        _validate_entry(entry, model, where)


def _validate_entry(entry, model, where):
    enabled = entry.get("mig-enabled")
    if not isinstance(enabled, bool):
        raise GpuShareError("%s: mig-enabled must be true or false, got %r" % (where, enabled))
    devices = entry.get("mig-devices")
    devices = {} if devices is None else devices
    if not isinstance(devices, dict):
        raise GpuShareError("%s: mig-devices must map profiles to instance counts, got %r" % (where, devices))
    if not enabled:
        if any(devices.values()):
            raise GpuShareError(
                "%s: mig-devices is set but mig-enabled is false; enable MIG or drop mig-devices" % where
            )
        return
    _require_mig(model, where)
    compute_slices = 0
    memory_slices = 0
    for profile, count in devices.items():
        if profile not in model.profiles:
            raise GpuShareError(
                "%s: MIG profile %s does not exist on %s; valid profiles: %s"
                % (where, profile, model.name, describe_mig_profiles(model))
            )
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise GpuShareError("%s: the count of %s must be a non-negative integer, got %r" % (where, profile, count))
        if count > model.profiles[profile]:
            raise GpuShareError(
                "%s: %d x %s asked, but one %s holds at most %d"
                % (where, count, profile, model.name, model.profiles[profile])
            )
        compute_slices += count * profile_slices(profile)
        memory_slices += count * model.profile_memory_slices(profile)
    max_slices = min(model.max_compute_slices, MAX_COMPUTE_SLICES)
    if compute_slices > max_slices:
        raise GpuShareError(
            "%s: the layout uses %d compute slices per GPU, but a %s has %d; remove instances (the numbers before "
            "'g' add up to the slices)" % (where, compute_slices, model.name, max_slices)
        )
    if memory_slices > MEMORY_SLICES:
        raise GpuShareError(
            "%s: the layout needs %d/%d of the memory of a %s (%s); remove instances or pick smaller profiles"
            % (
                where,
                memory_slices,
                MEMORY_SLICES,
                model.name,
                ", ".join("%d x %s" % (n, p) for p, n in devices.items() if n),
            )
        )


def mig_devices_of(layout, gpu_count):
    """Total MIG instances per profile a (validated) layout creates on a node with ``gpu_count`` GPUs."""
    totals = {}
    for entry in layout:
        if not entry.get("mig-enabled"):
            continue
        devices = entry.get("devices", "all")
        gpus = gpu_count if devices == "all" else len(devices)
        for profile, count in (entry.get("mig-devices") or {}).items():
            if count:
                totals[profile] = totals.get(profile, 0) + count * gpus
    return totals


def build_mig_parted_config(existing_text, name, layout):
    """Merge the layout ``name`` into a mig-parted ``config.yaml`` text; return (new text, changed).

    Other named configs are kept. An ``all-disabled`` entry is added when missing: it is the name
    every reset (and the ClusterPolicy's ``migManager.config.default``) points at, and mig-manager
    fails a node whose label names a config the file lacks, so without it a node could never be
    brought back to MIG off through this ConfigMap. ``changed`` compares parsed data, so a mere
    formatting difference in ``existing_text`` is not a change (and the text is then returned as is).
    """
    if existing_text and existing_text.strip():
        current = load_yaml_mapping(existing_text, "mig-parted %s" % MIG_PARTED_KEY)
        if current.get("version") not in (None, "", "v1"):
            raise GpuShareError("mig-parted %s: version must be v1, got %r" % (MIG_PARTED_KEY, current.get("version")))
        if not isinstance(current.get("mig-configs") or {}, dict):
            raise GpuShareError("mig-parted %s: mig-configs must map config names to layouts" % MIG_PARTED_KEY)
    else:
        current = {}

    configs = copy.deepcopy(current.get("mig-configs") or {})
    configs[name] = copy.deepcopy(layout)
    configs.setdefault(ALL_DISABLED, [_entry(False)])
    merged = {"version": "v1", "mig-configs": configs}
    if merged == current:
        return existing_text, False
    return dump_config(merged), True


def mig_configs_of(config_map):
    """The ``mig-configs`` of a mig-parted ConfigMap (dict or None): name -> layout."""
    text = ((config_map or {}).get("data") or {}).get(MIG_PARTED_KEY)
    if not text or not text.strip():
        return {}
    configs = load_yaml_mapping(
        text, "ConfigMap %s key %s" % ((config_map.get("metadata") or {}).get("name"), MIG_PARTED_KEY)
    ).get("mig-configs")
    return configs if isinstance(configs, dict) else {}
