# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG configs in mig-parted's format (the ``config.yaml`` key of the MIG ConfigMap), validated as
mig-parted reads them and as the GPU can hold them.

Pure: no I/O. A layout is the list mig-parted keeps under one name of ``mig-configs``:
``[{"device-filter": "0x233010DE", "devices": "all" | [0, 1], "mig-enabled": True, "mig-devices": {"1g.10gb": 2}}]``.

The rules (NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d):
- the parser is strict (``api/spec/v1/spec.go``): top-level keys ``version`` (required, exactly ``v1``)
  and ``mig-configs`` (at least one config, each a non-empty list); entry keys ``device-filter``,
  ``devices`` (required: ``all`` or a list of integers), ``mig-enabled`` (required, a bool) and
  ``mig-devices`` (required when MIG is on, a map of profile to count >= 0, not all 0; non-empty
  only when MIG is on). One bad config makes the whole file unreadable, ``all-disabled`` included;
- ``device-filter`` (a string or a list of strings, ``helpers.go:23-47``, ``pkg/types/device.go:60-137``):
  ``<devicevendor>[:<subsystemdevicevendor>]`` read with ``strconv.ParseUint(s, 0, 32)``; a filter
  that does not parse matches nothing, silently;
- every entry whose filter and devices match a GPU is applied to it, and ``assert`` then needs every
  GPU matched and in the state each matching entry describes (``assert.go:215-248``, ``config.go:50-94``);
- at apply time each profile must exist on the GPU and the instances must fit (``pkg/mig/config/config.go``):
  checked here against the catalog (most instances, the one media extension, placements).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import (
    NVIDIA_VENDOR_ID,
    describe_mig_profiles,
    device_id_string,
    is_media_extension,
    unknown_gpu_message,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_profile import (
    VALID_SLICE_COUNTS,
    name_form,
    parse_mig_profile,
    profile_from_name_form,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.nvidia_data import SHIPPED_MIG_CONFIGS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import (
    document_shape_problem,
    dump_config,
    load_yaml_document,
    load_yaml_mapping,
    yaml_type_name,
)

ALL_DISABLED = "all-disabled"
ALL_ENABLED = "all-enabled"
ALL_BALANCED = "all-balanced"
SHIPPED_PROFILE_PREFIX = "all-"
MIG_PARTED_KEY = "config.yaml"
VERSION = "v1"
TOP_LEVEL_FIELDS = ("version", "mig-configs")
ENTRY_FIELDS = ("device-filter", "devices", "mig-enabled", "mig-devices")
ALL_DEVICES = "all"
_UINT32 = 2**32


def gpu_indices(entry, gpu_count):
    """The GPU indices a config entry's ``devices`` names on a node of ``gpu_count`` GPUs: every one for ``all`` (also
    when ``devices`` is absent, mig-parted's default), else the listed ones that exist."""
    devices = entry.get("devices", ALL_DEVICES)
    return list(range(gpu_count)) if devices == ALL_DEVICES else [i for i in devices if 0 <= i < gpu_count]


def is_shipped_config_name(name):
    """True for the 81 config names the GPU Operator ships (``all-1g.10gb.me``: ``+`` written ``.``)."""
    return isinstance(name, str) and name in SHIPPED_MIG_CONFIGS


def shipped_config_hint(name):
    """A hint for a name that is not shipped: the ``.`` spelling of ``+``, or the closest shipped names."""
    if not isinstance(name, str):
        return ""
    if name.startswith(SHIPPED_PROFILE_PREFIX) and "+" in name and name_form(name) in SHIPPED_MIG_CONFIGS:
        return " (config names write + as '.': %s)" % name_form(name)
    profile = profile_from_name_form(name[len(SHIPPED_PROFILE_PREFIX) :]) if name.startswith("all-") else None
    if profile:
        try:
            canonical = SHIPPED_PROFILE_PREFIX + name_form(parse_mig_profile(profile).canonical)
        except GpuShareError:
            canonical = None
        if canonical in SHIPPED_MIG_CONFIGS and canonical != name:
            return " (the canonical name is %s)" % canonical
    return ""


def shipped_layout(name):
    """The entries NVIDIA ships under ``name`` (a copy), KeyError when it is not shipped."""
    return copy.deepcopy(SHIPPED_MIG_CONFIGS[name])


# the strict parser (spec.go) --------------------------------------------------------------------------


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def normalize_entry(entry, where, warnings):
    """One entry checked as mig-parted's parser checks it; returns it with canonical profile keys.

    ``where`` names the entry in messages (``layout entry 0``); a non-canonical profile key is rewritten
    with a warning appended to ``warnings`` (mig-parted compares the keys as strings).
    """
    if not isinstance(entry, dict):
        raise GpuShareError(
            "%s must be a mapping with devices, mig-enabled and mig-devices, got %s" % (where, yaml_type_name(entry))
        )
    for field in entry:
        if field not in ENTRY_FIELDS:
            raise GpuShareError(
                "%s: unexpected field %r; mig-parted accepts only %s (its parser is strict, and one bad entry makes "
                "the whole config.yaml unreadable)" % (where, field, ", ".join(ENTRY_FIELDS))
            )
    for field in ("devices", "mig-enabled"):
        if field not in entry:
            raise GpuShareError(
                "%s: missing required field %s; set devices: all (or a list of GPU indices) and mig-enabled: true "
                "or false" % (where, field)
            )
    result = {}
    if "device-filter" in entry:
        device_filter = entry["device-filter"]
        if not (
            device_filter is None
            or isinstance(device_filter, str)
            or (isinstance(device_filter, list) and all(isinstance(item, str) for item in device_filter))
        ):
            raise GpuShareError(
                '%s: device-filter must be a string or a list of strings such as "0x233010DE", got %r'
                % (where, device_filter)
            )
        for item in [device_filter] if isinstance(device_filter, str) else device_filter or []:
            if isinstance(device_filter, str) and item == "":
                continue
            reason = filter_problem(item)
            if reason:
                warnings.append(
                    "%s: device-filter %r never matches a GPU (%s); the entry is ignored" % (where, item, reason)
                )
        result["device-filter"] = device_filter
    devices = entry["devices"]
    if isinstance(devices, str):
        if devices != ALL_DEVICES:
            raise GpuShareError("%s: devices must be 'all' or a list of GPU indices, got %r" % (where, devices))
    elif not (isinstance(devices, list) and all(_is_int(item) for item in devices)):
        raise GpuShareError("%s: devices must be 'all' or a list of GPU indices (integers), got %r" % (where, devices))
    result["devices"] = devices
    enabled = entry["mig-enabled"]
    if not isinstance(enabled, bool):
        raise GpuShareError("%s: mig-enabled must be true or false, got %r" % (where, enabled))
    result["mig-enabled"] = enabled
    if enabled and entry.get("mig-devices") is None:
        raise GpuShareError(
            '%s: mig-enabled is true, so mig-devices is required: a map of profile to count such as {"1g.10gb": 7}, '
            "or {} for MIG on without instances" % where
        )
    if "mig-devices" in entry:
        mig_devices = entry["mig-devices"]
        if mig_devices is not None and not isinstance(mig_devices, dict):
            raise GpuShareError("%s: mig-devices must map profiles to counts, got %r" % (where, mig_devices))
        if not enabled and mig_devices:
            raise GpuShareError(
                "%s: mig-devices is set but mig-enabled is false (mig-parted refuses it); enable MIG or drop "
                "mig-devices" % where
            )
        if mig_devices is not None:
            result["mig-devices"] = _normalize_mig_devices(mig_devices, where, warnings)
    return result


def _normalize_mig_devices(mig_devices, where, warnings):
    """``MigConfig.AssertValidFormat``: well-formed profiles, counts integers >= 0, not all 0."""
    result = {}
    for profile, count in mig_devices.items():
        try:
            parsed = parse_mig_profile(profile)
        except GpuShareError as exc:
            hint = ""
            plus = profile_from_name_form(profile) if isinstance(profile, str) else None
            if plus and plus != profile:
                hint = "; inside mig-devices attributes keep the '+': %s" % plus
            raise GpuShareError("%s: mig-devices key %s%s" % (where, exc.msg, hint))
        if not _is_int(count):
            raise GpuShareError("%s: mig-devices count of %s must be an integer, got %r" % (where, profile, count))
        if count < 0:
            raise GpuShareError("%s: mig-devices count of %s must be >= 0, got %d" % (where, profile, count))
        canonical = parsed.canonical
        if canonical != profile:
            warnings.append(
                "%s: MIG profile %s rewritten as %s (mig-parted compares profiles as strings, so only the canonical "
                "form is ever seen as applied)" % (where, profile, canonical)
            )
        if canonical in result:
            raise GpuShareError("%s: mig-devices lists %s twice (as %s too)" % (where, canonical, profile))
        result[canonical] = count
    if result and not any(result.values()):
        raise GpuShareError("%s: all counts in mig-devices are 0; give at least one instance, or use {}" % where)
    return result


def normalize_layout(layout, where="MIG layout", warnings=None):
    """A layout (the list under one config name) checked as mig-parted parses it; canonical keys."""
    warnings = [] if warnings is None else warnings
    if not isinstance(layout, list) or not layout:
        raise GpuShareError(
            "%s must be a non-empty list of {devices, mig-enabled, mig-devices} entries (mig-parted: at least one "
            "entry is required)" % where
        )
    return [normalize_entry(entry, "%s entry %d" % (where, index), warnings) for index, entry in enumerate(layout)]


def validate_mig_parted_document(document, where, warnings=None):
    """A whole ``config.yaml`` (parsed) as mig-parted reads it; returns {name: normalized layout}."""
    warnings = [] if warnings is None else warnings
    if document is None or document == {}:
        return {}
    if not isinstance(document, dict):
        raise GpuShareError("%s must be a mapping with version and mig-configs" % where)
    if "version" not in document:
        raise GpuShareError("%s: missing 'version' field; set version: v1" % where)
    if document["version"] != VERSION:
        raise GpuShareError("%s: version must be v1, got %r" % (where, document["version"]))
    for field in document:
        if field not in TOP_LEVEL_FIELDS:
            raise GpuShareError("%s: unexpected field %r; only version and mig-configs are allowed" % (where, field))
    if "mig-configs" not in document:
        return {}
    configs = document["mig-configs"]
    if not isinstance(configs, dict) or not configs:
        raise GpuShareError("%s: mig-configs needs at least one config" % where)
    return dict(
        (name, normalize_layout(layout, "%s config %s" % (where, name), warnings)) for name, layout in configs.items()
    )


def not_a_config_file(text, where):
    """Why ``text`` (a ConfigMap key's value, named ``where``) is not a mig-parted config file, None when it is one:
    what mig-parted's strict parser reads, an empty document included (spec_test.go:143-167). A field other than
    version and mig-configs is named before what the text lacks: it says the text is something else."""
    try:
        document = load_yaml_document(text, where)
        problem = document_shape_problem(document, TOP_LEVEL_FIELDS, where, "a mig-parted config file")
        if problem:
            return problem
        validate_mig_parted_document(document, where)
    except GpuShareError as exc:
        return exc.msg
    return None


# device filters (helpers.go, pkg/types/device.go) -----------------------------------------------------------


def _parse_uint32(text):
    """``strconv.ParseUint(text, 0, 32)``: 0x/0o/0b prefixes, a leading 0 for octal, underscores between digits."""
    if not text:
        return None
    lowered = text.lower()
    base, digits, prefixed = 10, text, False
    if lowered.startswith("0x"):
        base, digits, prefixed = 16, text[2:], True
    elif lowered.startswith("0b"):
        base, digits, prefixed = 2, text[2:], True
    elif lowered.startswith("0o"):
        base, digits, prefixed = 8, text[2:], True
    elif text.startswith("0") and len(text) > 1:
        base, digits, prefixed = 8, text[1:], True
    if "_" in digits:
        if not re.match(r"^_?[0-9A-Za-z]+(_[0-9A-Za-z]+)*$", digits) or (digits.startswith("_") and not prefixed):
            return None
        digits = digits.replace("_", "")
    if not digits or not all(char in "0123456789abcdef"[:base] for char in digits.lower()):
        return None
    value = int(digits, base)
    return value if value < _UINT32 else None


def parse_device_filter(text):
    """(device, vendor, (subsystem device, subsystem vendor) or None) as ints, None when it does not parse."""
    if not isinstance(text, str):
        return None
    parts = text.split(":")
    if len(parts) > 2:
        return None
    values = [_parse_uint32(part) for part in parts]
    if any(value is None for value in values):
        return None
    primary = (values[0] >> 16, values[0] & 0xFFFF)
    subsystem = (values[1] >> 16, values[1] & 0xFFFF) if len(values) == 2 else None
    return primary + (subsystem,)


def filter_problem(text):
    """Why a device-filter string can never match an NVIDIA GPU, or None."""
    parsed = parse_device_filter(text)
    if parsed is None:
        return "mig-parted cannot parse it, expected 0x<device><vendor> such as 0x233010DE"
    if parsed[1] != NVIDIA_VENDOR_ID:
        return "its vendor 0x%04X is not NVIDIA's 0x10DE" % parsed[1]
    return None


def _filters(entry):
    device_filter = entry.get("device-filter")
    if isinstance(device_filter, str):
        return [device_filter] if device_filter else []
    return list(device_filter or [])


def filter_matches(entry, model, device_id, where):
    """True/False: does the entry's device-filter match the node's GPU. Raises when it cannot be told
    (the node's device ID is unknown and the filter names only some of the model's device IDs)."""
    filters = _filters(entry)
    if not filters:
        return True
    known = [device_id_string(device_id)] if device_id else list(model.device_ids if model else ())
    hits = set()
    for text in filters:
        parsed = parse_device_filter(text)
        if parsed is None:
            continue
        primary = "0x%04X%04X" % parsed[:2]
        if primary not in known:
            continue
        if parsed[2] is not None:
            raise GpuShareError(
                "%s: device-filter %r also names a subsystem ID, which no node label shows, so whether it matches "
                "cannot be checked; use the primary ID %s" % (where, text, primary)
            )
        hits.add(primary)
    if not hits:
        if not known:
            raise GpuShareError(
                "%s: the node's PCI device ID is unknown (%s has none in NVIDIA's filters), so device-filter %r "
                "cannot be checked; drop device-filter for this node"
                % (where, model.name if model else "its GPU", filters)
            )
        return False
    if len(hits) == len(known):
        return True
    raise GpuShareError(
        "%s: device-filter %r names some of the device IDs a %s may have (%s) and no label says which one this node "
        "has; list all of them, or label the node with Node Feature Discovery's PCI device labels"
        % (where, filters, model.name, ", ".join(known))
    )


# fitting a GPU (pkg/mig/config/config.go; placements from nvidia-smi mig -lgipp) ----------------------------


def _gpu_instances(mig_devices, model, where):
    """[(GPU-instance profile, count)] the instances of one GPU need; compute-instance profiles
    (``1c.7g.80gb``) share GPU instances of their profile as mig-parted does (``config.go:150-205``)."""
    compute_instances = {}
    for profile, count in mig_devices.items():
        # A profile the GPU lacks is refused even at count 0: mig-parted's Flatten() then returns nothing
        # and the apply would clear the GPU (mig-parted-rules.md section 5).
        parsed = parse_mig_profile(profile)
        gpu_instance = parsed.gpu_instance
        if gpu_instance not in model.profiles:
            raise GpuShareError(
                "%s: MIG profile %s does not exist on %s; valid profiles: %s"
                % (where, profile, model.name, describe_mig_profiles(model))
            )
        if parsed.is_compute_instance and not (
            parsed.compute in VALID_SLICE_COUNTS
            and parsed.compute < parsed.gpu
            and 2 * parsed.compute <= parsed.gpu + 1
        ):
            raise GpuShareError(
                "%s: compute-instance profile %s does not exist: a %dg instance splits into compute instances of "
                "C slices with C < G and 2C <= G+1 (go-nvlib device.go:400-406)" % (where, profile, parsed.gpu)
            )
        if count:
            compute_instances.setdefault(gpu_instance, []).extend([parsed.compute] * count)
    result = []
    for gpu_instance, sizes in compute_instances.items():
        capacity = model.facts[gpu_instance]["slices"]
        bins = []
        for size in sorted(sizes, reverse=True):
            for index, used in enumerate(bins):
                if used + size <= capacity:
                    bins[index] += size
                    break
            else:
                bins.append(size)
        result.append((gpu_instance, len(bins)))
    return result


def _placeable(instances, model):
    """Whether the GPU instances (profile names) can all be placed, as mig-parted tries every order."""
    order = sorted(instances, key=lambda profile: -model.facts[profile]["memory_slices"])
    used = [False] * model.memory_slices

    def place(index):
        if index == len(order):
            return True
        profile = order[index]
        size = model.facts[profile]["memory_slices"]
        for start in model.placements(profile):
            if not any(used[start : start + size]):
                for slot in range(start, start + size):
                    used[slot] = True
                if place(index + 1):
                    return True
                for slot in range(start, start + size):
                    used[slot] = False
        return False

    return place(0)


def check_gpu_fits(mig_devices, model, where):
    """Raise unless one GPU of ``model`` can hold ``mig-devices`` (profiles, counts, placement)."""
    instances = _gpu_instances(mig_devices, model, where)
    media = 0
    compute = 0
    for profile, count in instances:
        if count > model.profiles[profile]:
            raise GpuShareError(
                "%s: %d x %s asked, but one %s holds at most %d; lower the count"
                % (where, count, profile, model.name, model.profiles[profile])
            )
        if is_media_extension(profile):
            media += count
        compute += count * model.facts[profile]["slices"]
    if media > 1:
        raise GpuShareError(
            "%s: %s ask for %d instances with the media extension (+me, +me.all), but a GPU has one; keep one"
            % (where, ", ".join(p for p, _n in instances if is_media_extension(p)), media)
        )
    described = ", ".join("%d x %s" % (count, profile) for profile, count in sorted(mig_devices.items()) if count)
    if compute > model.compute_slices:
        raise GpuShareError(
            "%s: the layout uses %d compute slices per GPU, but a %s has %d; remove instances (the numbers before "
            "'g' add up to the slices): %s" % (where, compute, model.name, model.compute_slices, described)
        )
    flat = [profile for profile, count in instances for _index in range(count)]
    if not _placeable(flat, model):
        raise GpuShareError(
            "%s: %s do not fit on one %s: its %d memory slices have no placement for them all (profile memory "
            "slices: %s); remove instances or pick smaller profiles"
            % (
                where,
                described,
                model.name,
                model.memory_slices,
                ", ".join("%s %d" % (p, model.facts[p]["memory_slices"]) for p, _n in instances),
            )
        )


# a layout on one node ----------------------------------------------------------------------------------------


def _subject(model, node_name):
    subject = model.name if model is not None else "an unknown GPU"
    return "node %s (%s)" % (node_name, subject) if node_name else subject


def _require_mig(model, where, product=None, memory_mib=None):
    if model is None:
        raise GpuShareError("%s: %s" % (where, unknown_gpu_message(product, memory_mib)))
    if not model.mig_capable:
        raise GpuShareError("%s: %s does not support MIG; use time-slicing or MPS to share it" % (where, model.name))


def validate_mig_layout(
    layout, model, gpu_count, node_name=None, device_id=None, warnings=None, product=None, memory_mib=None
):
    """Check a layout on a node of ``gpu_count`` GPUs of ``model``; return the layout that node gets:
    entries without device-filter, canonical profiles, one entry per distinct GPU layout, no overlap.

    Raises GpuShareError naming the node, the entry, the field and the fix: format (as mig-parted
    parses it), GPUs not covered, GPUs matched by entries that disagree, profiles the model lacks,
    counts, the media extension, compute slices and placement. ``gpu_count`` None means "unknown":
    only ``devices: all`` entries are then resolved.
    """
    warnings = [] if warnings is None else warnings
    subject = _subject(model, node_name)
    entries = normalize_layout(layout, "%s: MIG layout" % subject, warnings)
    if gpu_count is not None and (not _is_int(gpu_count) or gpu_count < 0):
        raise GpuShareError("%s: GPU count must be a non-negative integer, got %r" % (subject, gpu_count))
    count = 1 if gpu_count is None else gpu_count
    per_gpu = {}
    for position, entry in enumerate(entries):
        where = "%s: MIG layout entry %d" % (subject, position)
        if entry["mig-enabled"] or _filters(entry):
            _require_mig(model, where, product, memory_mib)
        if not filter_matches(entry, model, device_id, where):
            continue
        devices = entry["devices"]
        indices = gpu_indices(entry, count)
        if devices != ALL_DEVICES and gpu_count is not None:
            missing = sorted(set(i for i in devices if not 0 <= i < count))
            if missing:
                warnings.append(
                    "%s: GPU index(es) %s do not exist on the node (%d GPUs), mig-parted skips them"
                    % (where, ", ".join(map(str, missing)), gpu_count)
                )
        state = gpu_layout_of(entry)
        if entry["mig-enabled"]:
            check_gpu_fits(entry.get("mig-devices") or {}, model, where)
        for index in indices:
            if index in per_gpu and per_gpu[index][1] != state:
                raise GpuShareError(
                    "%s: GPU %d is also matched by entry %d with another layout; mig-parted applies both and its "
                    "check then fails: give each GPU one layout" % (where, index, per_gpu[index][0])
                )
            per_gpu.setdefault(index, (position, state))
    uncovered = sorted(set(range(count)) - set(per_gpu))
    if uncovered:
        if gpu_count is None:
            raise GpuShareError("%s: the layout does not cover every GPU (devices: all)" % subject)
        raise GpuShareError(
            "%s: the layout leaves GPU(s) %s of its %d unmatched (devices or device-filter), and mig-parted's check "
            "fails when a GPU matches no entry; add an entry for them (mig-enabled: false turns MIG off) or use "
            "devices: all" % (subject, ", ".join(map(str, uncovered)), count)
        )
    return _effective(per_gpu, gpu_count)


def _effective(per_gpu, gpu_count):
    return layout_entries(dict((index, state) for index, (_entry, state) in per_gpu.items()), gpu_count)


def gpu_layout_of(entry):
    """The GPU layout an entry gives each GPU it covers (sorted (profile, count) pairs, counts above zero; empty with
    MIG on and no instances), or None where it turns MIG off: the one per-GPU form (docs/DESIGN.md, "Words")."""
    if not entry.get("mig-enabled"):
        return None
    return tuple(sorted((profile, count) for profile, count in (entry.get("mig-devices") or {}).items() if count))


def layout_entries(per_gpu, gpu_count):
    """mig-parted entries for ``{index: GPU layout or None}``: one per distinct GPU layout, in the order of its first
    GPU, with ``devices: all`` when it covers every GPU (or the GPU count is not known)."""
    groups = []
    for index in sorted(per_gpu):
        gpu_layout = per_gpu[index]
        for group in groups:
            if group[0] == gpu_layout:
                group[1].append(index)
                break
        else:
            groups.append((gpu_layout, [index]))
    result = []
    for gpu_layout, indices in groups:
        devices = ALL_DEVICES if gpu_count is None or len(indices) == gpu_count else indices
        result.append(
            {"devices": devices, "mig-enabled": gpu_layout is not None, "mig-devices": dict(gpu_layout or ())}
        )
    return result


def resolve_shipped_config(
    name, model, gpu_count, node_name=None, device_id=None, layout=None, warnings=None, product=None, memory_mib=None
):
    """The layout a shipped config name gives a node: NVIDIA's entries under that name (or ``layout``, the
    content the node's MIG ConfigMap holds under it), with their device filters applied to the node's
    GPU. Raises GpuShareError when the config does not target this GPU or does not fit it."""
    if layout is None:
        if not is_shipped_config_name(name):
            raise GpuShareError(
                "'%s' is not a config NVIDIA ships%s; shipped names are all-disabled, all-enabled, all-balanced and "
                "all-<profile> with + written '.' (all-1g.10gb.me)" % (name, shipped_config_hint(name))
            )
        layout = shipped_layout(name)
    if name == ALL_DISABLED or all(not entry.get("mig-enabled") for entry in layout if isinstance(entry, dict)):
        if model is None or not model.mig_capable:
            return [{"devices": ALL_DEVICES, "mig-enabled": False, "mig-devices": {}}]
    _require_mig(model, "%s: MIG config %s" % (_subject(model, node_name), name), product, memory_mib)
    try:
        return validate_mig_layout(layout, model, gpu_count, node_name, device_id, warnings, product, memory_mib)
    except GpuShareError as exc:
        raise GpuShareError("MIG config %s: %s" % (name, exc.msg))


def mig_devices_of(layout, gpu_count):
    """Total MIG instances per profile an effective layout (``validate_mig_layout``) creates on a node."""
    totals = {}
    for entry in layout:
        if not entry.get("mig-enabled"):
            continue
        gpus = len(gpu_indices(entry, gpu_count))
        for profile, count in (entry.get("mig-devices") or {}).items():
            if count:
                totals[profile] = totals.get(profile, 0) + count * gpus
    return totals


def build_mig_parted_config(existing_text, name, layout, warnings=None):
    """Merge the layout ``name`` into a mig-parted ``config.yaml`` text; return (new text, changed).

    Other named configs are kept, and the whole result is checked as mig-parted's strict parser
    reads it (one bad config would make every config unreadable, ``all-disabled`` included). An
    ``all-disabled`` entry is added when missing: every reset points at it. ``changed`` compares
    parsed data, so a mere formatting difference in ``existing_text`` is not a change.
    """
    where = "mig-parted %s" % MIG_PARTED_KEY
    if existing_text and existing_text.strip():
        current = load_yaml_mapping(existing_text, where)
        if current.get("version") not in (None, "", VERSION):
            raise GpuShareError("%s: version must be v1, got %r" % (where, current.get("version")))
        if not isinstance(current.get("mig-configs") or {}, dict):
            raise GpuShareError("%s: mig-configs must map config names to layouts" % where)
    else:
        current = {}

    configs = copy.deepcopy(current.get("mig-configs") or {})
    configs[name] = copy.deepcopy(layout)
    configs.setdefault(ALL_DISABLED, [{"devices": ALL_DEVICES, "mig-enabled": False, "mig-devices": {}}])
    merged = {"version": VERSION, "mig-configs": configs}
    try:
        validate_mig_parted_document(merged, where, [] if warnings is None else warnings)
    except GpuShareError as exc:
        raise GpuShareError(
            "%s; mig-manager could not read the ConfigMap at all after this write: fix or remove that config "
            "first" % exc.msg
        )
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
