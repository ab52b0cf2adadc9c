"""MIG configurations as mig-parted reads them: config names -> the layout of every GPU of a node.

Reference file, section 4. A layout is a list with one entry per GPU: None when MIG is disabled on
it, else ``{profile: instances}`` (empty when MIG is enabled without instances). The profile table
comes from the collection's ``gpu_models`` so the facts live in one place.
"""

import yaml

from ansible_collections.gpushare.k8s.plugins.module_utils.gpu_models import (
    MEMORY_SLICES,
    find_gpu_model,
    profile_slices,
    sorted_profiles,
)

ALL_DISABLED = "all-disabled"
ALL_ENABLED = "all-enabled"
ALL_BALANCED = "all-balanced"


class MigConfigError(Exception):
    """mig-manager could not apply the config; the message is the reason it reports."""


def gpu_model_of(hardware):
    return find_gpu_model(hardware["product"], hardware["memory_mib"])


def shipped_gpu_layout(name, model):
    """One GPU's layout for a config name shipped in ``default-mig-parted-config``, or None if unknown."""
    if name == ALL_DISABLED:
        return None
    if name == ALL_ENABLED:
        return {}
    if name == ALL_BALANCED:
        return dict(model.balanced)
    profile = name[len("all-"):] if name.startswith("all-") else None
    if profile in model.profiles:
        return {profile: model.profiles[profile]}
    raise MigConfigError("MIG configuration '%s' is not valid for %s" % (name, model.name))


def shipped_layout(name, hardware):
    """The node's layout for a shipped config name."""
    model = gpu_model_of(hardware)
    if name == ALL_DISABLED:
        return [None] * hardware["count"]
    if model is None or not model.mig_capable:
        raise MigConfigError("GPU %s is not MIG capable" % hardware["product"])
    return [shipped_gpu_layout(name, model)] * hardware["count"]


def custom_layout(name, config_text, hardware, current_layout):
    """The node's layout for ``name`` in a mig-parted ``config.yaml``.

    Like mig-parted, every entry whose ``devices`` and ``device-filter`` match a GPU is applied in
    turn (the last one wins); a GPU no entry matches keeps its current layout.
    """
    try:
        document = yaml.safe_load(config_text) or {}
    except yaml.YAMLError as exc:
        raise MigConfigError("unable to parse config.yaml: %s" % exc)
    entries = (document.get("mig-configs") or {}).get(name)
    if entries is None:
        raise MigConfigError("MIG configuration '%s' not found in config.yaml" % name)
    model = gpu_model_of(hardware)
    layout = list(current_layout)
    for entry in entries:
        for index in range(hardware["count"]):
            if _entry_matches(entry, index, hardware):
                layout[index] = _entry_gpu_layout(entry, model, hardware)
    return layout


def _entry_matches(entry, index, hardware):
    devices = entry.get("devices", "all")
    if devices != "all" and index not in (devices or []):
        return False
    device_filter = entry.get("device-filter")
    if device_filter is None:
        return True
    filters = [device_filter] if isinstance(device_filter, str) else device_filter
    return hardware.get("pci_device_id", "").lower() in [str(item).lower() for item in filters]


def _entry_gpu_layout(entry, model, hardware):
    if not entry.get("mig-enabled"):
        if entry.get("mig-devices"):
            raise MigConfigError("mig-devices set with mig-enabled false")
        return None
    if model is None or not model.mig_capable:
        raise MigConfigError("GPU %s is not MIG capable" % hardware["product"])
    return dict(entry.get("mig-devices") or {})


def check_layout(layout, hardware):
    """Raise MigConfigError unless every GPU's instances fit its model (profiles, counts, slices)."""
    model = gpu_model_of(hardware)
    for gpu_layout in layout:
        if not gpu_layout:
            continue
        compute = memory = 0
        for profile, instances in gpu_layout.items():
            if profile not in model.profiles:
                raise MigConfigError("MIG profile %s is not valid for %s" % (profile, model.name))
            if instances > model.profiles[profile]:
                raise MigConfigError("at most %d instances of %s fit on %s" % (model.profiles[profile], profile, model.name))
            compute += profile_slices(profile) * instances
            memory += model.profile_memory_slices(profile) * instances
        if compute > model.max_compute_slices or memory > MEMORY_SLICES:
            raise MigConfigError("layout %s does not fit on one %s" % (gpu_layout, model.name))


def default_mig_parted_config(models_by_device_id):
    """The shipped ``config.yaml``: every shipped name, with one entry per MIG-capable GPU model.

    ``models_by_device_id`` maps PCI device ids (``0x20F110DE``) to catalog models.
    """
    mig_models = {device_id: model for device_id, model in models_by_device_id.items() if model.mig_capable}
    names = {ALL_BALANCED}
    for model in mig_models.values():
        names.update("all-" + profile for profile in model.profiles)
    configs = {
        ALL_DISABLED: [{"devices": "all", "mig-enabled": False}],
        ALL_ENABLED: [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
    }
    profile_names = ["all-" + profile for profile in sorted_profiles({name[len("all-"):] for name in names - {ALL_BALANCED}})]
    for name in [ALL_BALANCED] + profile_names:
        configs[name] = [
            {"device-filter": [device_id], "devices": "all", "mig-enabled": True, "mig-devices": shipped_gpu_layout(name, model)}
            for device_id, model in sorted(mig_models.items())
            if name == ALL_BALANCED or name[len("all-"):] in model.profiles
        ]
    return yaml.safe_dump({"version": "v1", "mig-configs": configs}, sort_keys=False)

