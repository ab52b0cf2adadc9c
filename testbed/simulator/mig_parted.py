"""mig-parted, the tool nvidia-mig-manager runs: its strict config parser, its profile grammar, config
selection by name, device filters, and applying a config to a node's GPUs.

Rules: ``testbed/nvidia_data/README.md`` points to NVIDIA's sources; the reference
``mig-parted-rules.md`` restates them with file:line references (section numbers below are its).

A layout is a list with one entry per GPU: None when MIG is disabled on it, else
``{profile: instances}`` (empty when MIG is enabled without instances).
"""

import functools
import re

import yaml

from testbed.simulator import nvml

VERSION = "v1"
TOP_LEVEL_FIELDS = ("version", "mig-configs")
ENTRY_FIELDS = ("device-filter", "devices", "mig-enabled", "mig-devices")
ALL_DEVICES = "all"

# §2: [<C>c.]<G>g.<GB>gb[+attr[,attr...] | -attr[,attr...]], numbers parsed with Atoi (no range check).
_PROFILE = re.compile(r"^(?:([0-9]+)c\.)?([0-9]+)g\.([0-9]+)gb(?:([+-])(.*))?$")
_ATTRIBUTE = re.compile(r"^[A-Za-z](?:[A-Za-z0-9.]*[A-Za-z0-9])?$")
# §4: 0x<device:4 hex><vendor:4 hex>, optionally :0x<subsystem device><subsystem vendor> (any spelling
# strconv.ParseUint(s, 0, 32) reads, see _go_uint32).


class MigConfigError(Exception):
    """mig-manager could not apply the config; the message is the reason it reports."""


class Entry(object):
    """One parsed entry of a config: which GPUs it selects and what it puts on them."""

    def __init__(self, device_filter, devices, mig_enabled, mig_devices):
        self.device_filter = device_filter  # list of strings, empty for no filter
        self.devices = devices  # "all" or a list of GPU indices
        self.mig_enabled = mig_enabled
        self.mig_devices = mig_devices  # {profile as written: count}


# parsing (§1, §2) ----------------------------------------------------------------------------------


def parse_config(text):
    """``{config name: [Entry]}`` of a ``config.yaml``, or MigConfigError with mig-parted's reason."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MigConfigError("error parsing config file: %s" % exc)
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise MigConfigError(
            "error parsing config file: json: cannot unmarshal %s into Go value of type map" % _json_type(document)
        )
    if not document:
        return {}
    if "version" not in document:
        raise MigConfigError("unable to parse with missing 'version' field")
    version = document["version"]
    if not isinstance(version, str):
        raise MigConfigError("json: cannot unmarshal %s into Go value of type string" % _json_type(version))
    if version != VERSION:
        raise MigConfigError("unknown version: %s" % version)
    for field in document:
        if field not in TOP_LEVEL_FIELDS:
            raise MigConfigError("unexpected field: %s" % field)
    if "mig-configs" not in document:
        return {}
    configs = document["mig-configs"]
    if not isinstance(configs, dict) or not configs:
        raise MigConfigError("at least one entry in 'mig-configs' is required")
    parsed = {}
    for name, entries in configs.items():
        if not isinstance(entries, list) or not entries:
            raise MigConfigError("at least one entry in '%s' is required" % name)
        parsed[str(name)] = [_parse_entry(entry) for entry in entries]
    return parsed


def _json_type(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _parse_entry(entry):
    if not isinstance(entry, dict):
        raise MigConfigError("json: cannot unmarshal %s into Go value of type map" % _json_type(entry))
    for field in entry:
        if field not in ENTRY_FIELDS:
            raise MigConfigError("unexpected field: %s" % field)
    for field in ("devices", "mig-enabled"):
        if field not in entry:
            raise MigConfigError("missing required field: %s" % field)
    device_filter = entry.get("device-filter")
    if device_filter is None:
        device_filter = []
    elif isinstance(device_filter, str):
        device_filter = [device_filter]
    elif not (isinstance(device_filter, list) and all(isinstance(item, str) for item in device_filter)):
        raise MigConfigError("json: cannot unmarshal %s into 'device-filter'" % _json_type(device_filter))
    devices = entry["devices"]
    if isinstance(devices, str):
        if devices != ALL_DEVICES:
            raise MigConfigError("invalid string input for 'devices': %s" % devices)
    elif not (
        isinstance(devices, list) and all(isinstance(item, int) and not isinstance(item, bool) for item in devices)
    ):
        raise MigConfigError("json: cannot unmarshal %s into 'devices'" % _json_type(devices))
    mig_enabled = entry["mig-enabled"]
    if not isinstance(mig_enabled, bool):
        raise MigConfigError("json: cannot unmarshal %s into Go value of type bool" % _json_type(mig_enabled))
    if mig_enabled and "mig-devices" not in entry:
        raise MigConfigError("missing required field 'mig-devices' when 'mig-enabled' is true")
    mig_devices = entry.get("mig-devices") or {}
    if not isinstance(mig_devices, dict):
        raise MigConfigError("json: cannot unmarshal %s into 'mig-devices'" % _json_type(mig_devices))
    if not mig_enabled and mig_devices:
        raise MigConfigError("MIG devices included when 'mig-enabled' is false")
    _check_mig_devices(mig_devices)
    return Entry(device_filter, devices, mig_enabled, {str(profile): count for profile, count in mig_devices.items()})


def _check_mig_devices(mig_devices):
    """``MigConfig.AssertValidFormat``: well-formed profiles, counts >= 0, not all of them 0."""
    for profile, count in mig_devices.items():
        try:
            parse_profile(str(profile))
        except MigConfigError as exc:
            raise MigConfigError("error validating values in 'mig-devices' field: %s" % exc)
        if not isinstance(count, int) or isinstance(count, bool):
            raise MigConfigError("json: cannot unmarshal %s into a MIG device count" % _json_type(count))
        if count < 0:
            raise MigConfigError(
                "error validating values in 'mig-devices' field: invalid count for '%s': %d" % (profile, count)
            )
    if mig_devices and not any(mig_devices.values()):
        raise MigConfigError("error validating values in 'mig-devices' field: all counts for all MigProfiles are 0")


def parse_profile(profile):
    """``(C, G, GB, attribute suffix)`` of a profile string, or MigConfigError (go-nvlib's grammar, §2)."""
    if "+" in profile and "-" in profile:
        raise MigConfigError("invalid MIG profile '%s': contains both '+/-' attributes" % profile)
    match = _PROFILE.match(profile)
    if not match:
        raise MigConfigError("invalid MIG profile '%s'" % profile)
    compute, gpu, memory, sign, attributes = match.groups()
    suffix = ""
    if sign:
        names = attributes.split(",")
        if len(set(names)) != len(names) or not all(_ATTRIBUTE.match(name) for name in names):
            raise MigConfigError("invalid MIG profile '%s': bad attribute list" % profile)
        suffix = sign + attributes
    gpu_slices = int(gpu)
    return (int(compute) if compute is not None else gpu_slices), gpu_slices, int(memory), suffix


def canonical_profile(profile):
    """go-nvlib's ``String()``: ``<G>g.<GB>gb`` when C == G, else ``<C>c.<G>g.<GB>gb``, then the attributes."""
    compute, gpu, memory, suffix = parse_profile(profile)
    prefix = "" if compute == gpu else "%dc." % compute
    return "%s%dg.%dgb%s" % (prefix, gpu, memory, suffix)


# selecting GPUs (§4) ---------------------------------------------------------------------------------


# Go's strconv.ParseUint(s, 0, 32), which NewDeviceIDFromString uses: a 0x/0o/0b prefix or a leading 0
# (octal) picks the base, underscores may separate digits after a prefix, the value fits 32 bits.
_GO_UINT = re.compile(r"^(?:0[xX](_?[0-9a-fA-F]+)+|0[oO](_?[0-7]+)+|0[bB](_?[01]+)+|0(_?[0-7]+)*|[1-9](_?[0-9]+)*)$")


def _go_uint32(text):
    if not _GO_UINT.match(text):
        return None
    digits = text.replace("_", "")
    prefix = digits[:2].lower()
    if prefix in ("0x", "0o", "0b"):
        value = int(digits[2:], {"0x": 16, "0o": 8, "0b": 2}[prefix])
    elif digits.startswith("0") and len(digits) > 1:
        value = int(digits[1:], 8)
    else:
        value = int(digits)
    return value if value < 2**32 else None


def _parse_pci_id(text):
    """``(device, vendor, subsystem or None)`` as integers, or None when the filter does not parse."""
    parts = text.split(":")
    if len(parts) > 2:
        return None
    values = [_go_uint32(part) for part in parts]
    if any(value is None for value in values):
        return None
    primary = (values[0] >> 16, values[0] & 0xFFFF)
    return primary + ((values[1] >> 16, values[1] & 0xFFFF) if len(values) == 2 else None,)


def filter_matches(device_filter, hardware):
    """An empty filter matches every GPU; a filter that does not parse silently matches none."""
    if not device_filter:
        return True
    device = _parse_pci_id(hardware["pci_device_id"])
    subsystem = _parse_pci_id(hardware["pci_subsystem_id"]) if hardware.get("pci_subsystem_id") else None
    for text in device_filter:
        wanted = _parse_pci_id(text)
        if wanted is None or device is None or wanted[:2] != device[:2]:
            continue
        if wanted[2] is None or (subsystem is not None and wanted[2] == subsystem[:2]):
            return True
    return False


def devices_match(devices, index):
    return devices == ALL_DEVICES or index in devices


# applying (§5) -----------------------------------------------------------------------------------------


def apply_config(configs, name, hardware, current_layout):
    """The node's layout once config ``name`` is applied, or MigConfigError.

    Every entry whose ``devices`` and ``device-filter`` match a GPU is applied to it in turn, so the
    last one wins; a GPU no entry matches keeps its current layout.
    """
    if name not in configs:
        raise MigConfigError("selected mig-config not present: %s" % name)
    gpu = nvml.gpu_of(hardware)
    layout = list(current_layout)
    for entry in configs[name]:
        if not filter_matches(entry.device_filter, hardware):
            continue
        for index in range(hardware["count"]):
            if not devices_match(entry.devices, index):
                continue
            if not gpu.mig_capable:
                if entry.devices == ALL_DEVICES or not entry.mig_enabled:
                    continue  # skipped, as mig-parted skips GPUs without MIG
                raise MigConfigError("cannot set MIG config on non MIG-capable GPU %d (%s)" % (index, gpu.nvml_name))
            layout[index] = _gpu_layout(entry, gpu, index) if entry.mig_enabled else None
    return layout


def _gpu_layout(entry, gpu, index):
    """What one GPU holds for an entry; MigConfigError when it cannot be created on this model."""
    layout = {}
    for written, count in entry.mig_devices.items():
        if count == 0:
            continue
        compute, gpu_slices, _memory, _suffix = parse_profile(written)
        profile = canonical_profile(written)
        if compute != gpu_slices:
            raise MigConfigError("compute-instance profile %s: not modelled by the simulator" % written)
        if profile not in gpu.mig_profiles:
            # Real mig-parted looks the profile up on the GPU ("MIG profile %q not found on this GPU");
            # mig-parted-rules.md §5 notes that a profile no GPU of the node has may instead clear the GPU
            # and succeed (read from code, unverified). The simulator reports the failure.
            raise MigConfigError('MIG profile "%s" not found on this GPU (%d, %s)' % (written, index, gpu.nvml_name))
        layout[profile] = layout.get(profile, 0) + count
    _check_fits(layout, gpu, index)
    return layout


def _check_fits(layout, gpu, index):
    """Each profile within its most instances, all of them within the GPU's compute and memory slices."""
    compute = memory = 0
    for profile, count in layout.items():
        facts = gpu.mig_profiles[profile]
        if count > facts.max_instances:
            raise MigConfigError(
                "error attempting multiple config orderings: all orderings failed: at most %d x %s fit on GPU %d (%s)"
                % (facts.max_instances, profile, index, gpu.nvml_name)
            )
        compute += facts.slices * count
        memory += gpu.memory_slices(profile) * count
    if compute > gpu.compute_slices or memory > nvml.MEMORY_SLICES:
        raise MigConfigError(
            "error attempting multiple config orderings: all orderings failed: %s does not fit on GPU %d (%s)"
            % (
                ", ".join("%d x %s" % (count, profile) for profile, count in sorted(layout.items())),
                index,
                gpu.nvml_name,
            )
        )


# the shipped config (gpu-operator assets/state-mig-manager/0400_configmap.yaml) --------------------------


@functools.lru_cache(maxsize=None)
def shipped_config_yaml():
    """NVIDIA's shipped ``config.yaml`` (81 configs), rebuilt from its JSON copy in nvidia_data/.

    Keys absent in the source (null in the JSON) are left out, and the one scalar ``device-filter`` of
    the source stays a scalar, so the text parses as the original does. Made once per process: the reset between
    tests seeds it each time, and dumping it was a third of the reset's CPU.
    """
    shipped = nvml.load(nvml.SHIPPED_MIG_CONFIG)
    scalars = {(item["config"], item["entry_index"]): item["value"] for item in shipped["scalar_device_filters"]}
    configs = {}
    for name, entries in shipped["configs"].items():
        configs[name] = []
        for index, entry in enumerate(entries):
            written = {}
            if entry["device-filter"] is not None:
                written["device-filter"] = scalars.get((name, index), entry["device-filter"])
            written["devices"] = entry["devices"]
            written["mig-enabled"] = entry["mig-enabled"]
            if entry["mig-devices"] is not None:
                written["mig-devices"] = entry["mig-devices"]
            configs[name].append(written)
    return yaml.safe_dump({"version": shipped["version"], "mig-configs": configs}, sort_keys=False)
