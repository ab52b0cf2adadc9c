# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA device plugin's configuration file: one YAML document per ConfigMap key.

Pure: no I/O. The rules are those of k8s-device-plugin ``api/config/v1`` (reference file, section 1);
where the plugin silently does something surprising (MPS winning over time-slicing, replicas 1) we
refuse instead, because a silently ignored setting is what users trip over."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import is_valid_profile_name
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import load_yaml_mapping

RESOURCE_PREFIX = "nvidia.com/"
RESOURCE_GPU = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

# renameByDefault advertises each shared resource under this suffix (nvidia.com/gpu.shared).
SHARED_RESOURCE_SUFFIX = ".shared"
METHOD_TIME_SLICING = "time-slicing"
METHOD_MPS = "mps"
SHARING_METHODS = (METHOD_TIME_SLICING, METHOD_MPS)

# Key of each method under ``sharing:``.
SHARING_KEYS = {METHOD_TIME_SLICING: "timeSlicing", METHOD_MPS: "mps"}
# MIG strategies (--mig-strategy of the device plugin and GFD, spec.mig.strategy of the ClusterPolicy).
MIG_STRATEGY_NONE = "none"
MIG_STRATEGY_SINGLE = "single"
MIG_STRATEGY_MIXED = "mixed"
DEVICE_PLUGIN_MIG_STRATEGIES = (MIG_STRATEGY_NONE, MIG_STRATEGY_SINGLE, MIG_STRATEGY_MIXED)
MIN_REPLICAS = 2


def normalize_resource_name(name):
    """The plugin adds the ``nvidia.com/`` prefix to a resource name that lacks it."""
    return name if name.startswith(RESOURCE_PREFIX) else RESOURCE_PREFIX + name


def mig_resource_name(profile):
    """The mixed-strategy resource of a MIG profile: ``1g.10gb`` -> ``nvidia.com/mig-1g.10gb``."""
    return MIG_RESOURCE_PREFIX + profile


def build_sharing_config(
    method, replicas, resources=None, rename_by_default=False, fail_requests_greater_than_one=None, mig_strategy=None
):
    """The device plugin configuration sharing GPUs with ``method`` ('time-slicing' or 'mps').

    ``resources`` lists resource names (``gpu``, ``nvidia.com/mig-1g.10gb``) sharing ``replicas``
    each, or dicts ``{"name": ..., "replicas": ...}`` to give one resource its own count; default
    ``nvidia.com/gpu``. ``fail_requests_greater_than_one`` is written only when not None (MPS forces
    true when it is absent). Keys keep the order version, flags, sharing so dumps are deterministic.
    Raises GpuShareError saying what to fix.
    """
    if method not in SHARING_METHODS:
        raise GpuShareError("Sharing method must be one of %s, got %r" % (", ".join(SHARING_METHODS), method))
    if resources is None:
        resources = [RESOURCE_GPU]
    if not isinstance(resources, (list, tuple)):
        raise GpuShareError("resources must be a list of resource names, got %r" % (resources,))
    entries = []
    for resource in resources:
        if isinstance(resource, dict):
            name = resource.get("name")
            resource_replicas = resource.get("replicas", replicas)
        else:
            name, resource_replicas = resource, replicas
        if isinstance(name, str):
            name = normalize_resource_name(name)
        entries.append({"name": name, "replicas": resource_replicas})

    method_config = {"renameByDefault": rename_by_default}
    if fail_requests_greater_than_one is not None:
        method_config["failRequestsGreaterThanOne"] = fail_requests_greater_than_one
    method_config["resources"] = entries

    config = {"version": "v1"}
    if mig_strategy is not None:
        config["flags"] = {"migStrategy": mig_strategy}
    config["sharing"] = {SHARING_KEYS[method]: method_config}
    validate_sharing_config(config)
    return config


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_version(config, where):
    version = config.get("version")
    if version not in (None, "", "v1"):
        raise GpuShareError("%s: version must be v1 (or empty), got %r" % (where, version))


def validate_sharing_config(config, source="device plugin config"):
    """Apply NVIDIA's rules to a parsed device plugin config; raise GpuShareError on the first violation.

    ``source`` names the config in messages (e.g. "ConfigMap time-slicing-config key 'a100'").
    """
    if not isinstance(config, dict):
        raise GpuShareError("%s must be a mapping, got %s" % (source, type(config).__name__))
    _check_version(config, source)

    flags = config.get("flags")
    flags = {} if flags is None else flags
    if not isinstance(flags, dict):
        raise GpuShareError("%s: flags must be a mapping" % source)
    mig_strategy = flags.get("migStrategy")
    if mig_strategy is not None and mig_strategy not in DEVICE_PLUGIN_MIG_STRATEGIES:
        raise GpuShareError(
            "%s: flags.migStrategy must be one of %s, got %r"
            % (source, ", ".join(DEVICE_PLUGIN_MIG_STRATEGIES), mig_strategy)
        )

    sharing = config.get("sharing")
    sharing = {} if sharing is None else sharing
    if not isinstance(sharing, dict):
        raise GpuShareError("%s: sharing must be a mapping" % source)
    # The plugin parses any present method (``timeSlicing: {}`` fails for want of resources).
    configured = [method for method in SHARING_METHODS if sharing.get(SHARING_KEYS[method]) is not None]
    if len(configured) > 1:
        # The plugin would silently use MPS and ignore timeSlicing.
        raise GpuShareError("%s: sharing sets both timeSlicing and mps; they are mutually exclusive, keep one" % source)
    for method in configured:
        _validate_method(
            sharing[SHARING_KEYS[method]], method, mig_strategy, "%s: sharing.%s" % (source, SHARING_KEYS[method])
        )


def _validate_method(method_config, method, mig_strategy, where):
    if not isinstance(method_config, dict):
        raise GpuShareError("%s must be a mapping" % where)
    for flag in ("renameByDefault", "failRequestsGreaterThanOne"):
        if method_config.get(flag) is not None and not isinstance(method_config[flag], bool):
            raise GpuShareError("%s.%s must be true or false, got %r" % (where, flag, method_config[flag]))
    if method == METHOD_MPS and mig_strategy == MIG_STRATEGY_MIXED:
        raise GpuShareError(
            "%s: MPS cannot be used with migStrategy mixed; use time-slicing or another MIG strategy" % where
        )

    resources = method_config.get("resources")
    if not isinstance(resources, list) or not resources:
        raise GpuShareError(
            "%s.resources must list at least one resource, e.g. {name: nvidia.com/gpu, replicas: 4}" % where
        )
    seen = set()
    for index, resource in enumerate(resources):
        item = "%s.resources[%d]" % (where, index)
        if not isinstance(resource, dict):
            raise GpuShareError("%s must be a mapping with name and replicas" % item)
        name = resource.get("name")
        if not isinstance(name, str) or not name:
            raise GpuShareError("%s.name is required, e.g. nvidia.com/gpu" % item)
        name = normalize_resource_name(name)
        _check_resource_name(name, method, mig_strategy, item)
        if name in seen:
            raise GpuShareError("%s: resource %s is listed twice; list each resource once" % (item, name))
        seen.add(name)
        replicas = resource.get("replicas")
        if not _is_int(replicas) or replicas < MIN_REPLICAS:
            raise GpuShareError(
                "%s: replicas of %s must be an integer >= %d, got %r; to stop sharing, remove the sharing config "
                "instead" % (item, name, MIN_REPLICAS, replicas)
            )


def _check_resource_name(name, method, mig_strategy, item):
    if name == RESOURCE_GPU:
        return
    if method == METHOD_MPS:
        raise GpuShareError(
            "%s: MPS can share only %s (full GPUs, not MIG devices), got %s" % (item, RESOURCE_GPU, name)
        )
    profile = name[len(MIG_RESOURCE_PREFIX) :] if name.startswith(MIG_RESOURCE_PREFIX) else None
    if profile is None or not is_valid_profile_name(profile):
        raise GpuShareError(
            "%s: time-slicing can share %s or %s<profile> (e.g. %s), got %s"
            % (item, RESOURCE_GPU, MIG_RESOURCE_PREFIX, mig_resource_name("1g.10gb"), name)
        )
    if mig_strategy in (MIG_STRATEGY_NONE, MIG_STRATEGY_SINGLE):
        raise GpuShareError(
            "%s: %s exists only with migStrategy mixed (with %s MIG devices are %s); set migStrategy mixed or share %s"
            % (item, name, mig_strategy, RESOURCE_GPU, RESOURCE_GPU)
        )


def sharing_method_of(config):
    """'mps', 'time-slicing' or None, as the device plugin decides it.

    A method counts only if one of its resources has replicas > 1; when both are set, MPS wins, as in
    the plugin (validate_sharing_config refuses such a config).
    """
    sharing = config.get("sharing") if isinstance(config, dict) else None
    if not isinstance(sharing, dict):
        return None
    for method in (METHOD_MPS, METHOD_TIME_SLICING):
        method_config = sharing.get(SHARING_KEYS[method])
        resources = method_config.get("resources") if isinstance(method_config, dict) else None
        if isinstance(resources, list) and any(
            isinstance(r, dict) and _is_int(r.get("replicas")) and r["replicas"] > 1 for r in resources
        ):
            return method
    return None


def parse_sharing_config(text, source="device plugin config"):
    """Parse one ConfigMap key of device plugin config; raise GpuShareError if not YAML, not a mapping or not
    version v1.

    The sharing rules are checked separately by validate_sharing_config.
    """
    config = load_yaml_mapping(text, source)
    _check_version(config, source)
    return config


def mps_client_limits(memory_mib, replicas):
    """The limits NVIDIA's MPS control daemon gives each of ``replicas`` clients sharing one GPU of
    ``memory_mib`` (None when unknown)."""
    return dict(
        active_thread_percentage=100 // replicas,
        pinned_device_memory_limit_mib=memory_mib // replicas if memory_mib else None,
    )
