# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA device plugin's configuration file: one YAML document per ConfigMap key.

Pure: no I/O. The rules are those of k8s-device-plugin ``api/config/v1`` (reference file, section 1);
where the plugin silently does something surprising (MPS winning over time-slicing, replicas 1) we
refuse instead, because a silently ignored setting is what users trip over."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_profile import (
    name_form,
    parse_mig_profile,
    profile_from_name_form,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import (
    document_shape_problem,
    load_yaml_document,
    load_yaml_mapping,
)

RESOURCE_PREFIX = "nvidia.com/"
RESOURCE_GPU = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

# renameByDefault advertises each shared resource under this suffix (nvidia.com/gpu.shared).
SHARED_RESOURCE_SUFFIX = ".shared"
RESOURCE_GPU_SHARED = RESOURCE_GPU + SHARED_RESOURCE_SUFFIX
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
# The MPS control daemon refuses more clients than this per GPU (k8s-device-plugin
# cmd/mps-control-daemon/mps/device.go:34-55, enforced at mps/manager.go:97-99): 48 from compute
# capability 7.5 on, 16 below.
MPS_MAX_CLIENTS = 48
MPS_MAX_CLIENTS_BEFORE_VOLTA_MPS = 16
MPS_FULL_LIMIT_COMPUTE_CAPABILITY = (7, 5)
# The kubelet reads a device plugin's whole device list as one gRPC ListAndWatch message, with grpc-go's default
# limit of 4 MiB (kubernetes/kubernetes#109304; raising it, #127049, was closed unmerged). NVIDIA's plugin lists
# one device per replica, ID "<GPU or MIG UUID>::<replica>" (replicas.go), so a list above the limit fails
# ListAndWatch ("received message larger than max") and the node advertises none of that resource.
KUBELET_DEVICE_LIST_LIMIT_BYTES = 4 * 1024 * 1024
# Encoded bytes of one replicated device apart from its replica number: the ID ("GPU-" or "MIG-", a 36-character
# UUID, "::") and health "Healthy", with the protobuf tags and lengths; without the NUMA topology (6 more bytes
# where the node has one), so that only lists certain to exceed the limit are refused.
_DEVICE_BYTES_BEFORE_NUMBER = 55


def device_list_bytes(devices):
    """About how many bytes the plugin's ListAndWatch message takes for ``devices`` replicated devices."""
    total, digits, start = 0, 1, 0
    while start < devices:
        end = min(devices, 10**digits)
        total += (end - start) * (_DEVICE_BYTES_BEFORE_NUMBER + digits)
        start, digits = end, digits + 1
    return total


def most_replicas_advertised(devices_per_replica_set):
    """The largest replicas count whose device list (``devices_per_replica_set`` GPUs or MIG devices, each
    replicated) stays within the kubelet's limit."""
    low, high = 1, KUBELET_DEVICE_LIST_LIMIT_BYTES
    while low < high:
        middle = (low + high + 1) // 2
        if device_list_bytes(devices_per_replica_set * middle) <= KUBELET_DEVICE_LIST_LIMIT_BYTES:
            low = middle
        else:
            high = middle - 1
    return low


# resources.go:46-64: the full name at most 63 characters, the part after nvidia.com/ a lowercase
# RFC 1123 DNS subdomain (the apimachinery regex, copied).
MAX_RESOURCE_NAME_LENGTH = 63
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")


def _is_uuid(text):
    """google/uuid Parse: xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, in braces, after urn:uuid:, or 32 hex digits."""
    if len(text) == 45 and text[:9].lower() == "urn:uuid:":
        text = text[9:]
    elif len(text) == 38 and text[0] == "{" and text[-1] == "}":
        text = text[1:-1]
    if len(text) == 32:
        return bool(_HEX.match(text))
    if len(text) != 36 or any(text[i] != "-" for i in (8, 13, 18, 23)):
        return False
    return bool(_HEX.match(text.replace("-", "")))


def _is_uint(text):
    return bool(re.match(r"^[0-9]+$", text))


def _is_device_ref(text):
    """replicas.go:99-163: a GPU index, '<gpu>:<mig>', GPU-<uuid>, MIG-<uuid> or MIG-GPU-<uuid>/<gi>/<ci>."""
    if _is_uint(text):
        return True
    parts = text.split(":", 1)
    if len(parts) == 2 and all(_is_uint(part) for part in parts):
        return True
    if text.startswith("GPU-"):
        return _is_uuid(text[4:])
    if text.startswith("MIG-"):
        suffix = text[4:]
        if _is_uuid(suffix):
            return True
        split = suffix.split("/", 2)
        return (
            len(split) == 3
            and split[0].startswith("GPU-")
            and _is_uuid(split[0][4:])
            and all(_is_uint(part) for part in split[1:])
        )
    return False


def mps_max_clients(compute_capability=None):
    """Most MPS clients (replicas) per GPU the control daemon accepts; ``compute_capability`` is
    (major, minor) from the nvidia.com/gpu.compute.major/minor labels, None when unknown (then 48)."""
    if compute_capability is not None and tuple(compute_capability) < MPS_FULL_LIMIT_COMPUTE_CAPABILITY:
        return MPS_MAX_CLIENTS_BEFORE_VOLTA_MPS
    return MPS_MAX_CLIENTS


def check_resource_name(name, where):
    """The full resource name (``nvidia.com/`` added when missing), or GpuShareError as the plugin
    refuses it (resources.go:46-64)."""
    if not isinstance(name, str) or not name:
        raise GpuShareError("%s: name is required, e.g. nvidia.com/gpu" % where)
    full = normalize_resource_name(name)
    if len(full) > MAX_RESOURCE_NAME_LENGTH:
        raise GpuShareError(
            "%s: resource name %s has %d characters; the device plugin allows at most %d (nvidia.com/ included)"
            % (where, full, len(full), MAX_RESOURCE_NAME_LENGTH)
        )
    if not _DNS_SUBDOMAIN.match(full[len(RESOURCE_PREFIX) :]):
        hint = ""
        if "+" in full:
            hint = "; MIG attributes are written with '.' in resource names: %s" % name_form(full)
        raise GpuShareError(
            "%s: incorrect format for resource name %s: after nvidia.com/ it must be a lowercase DNS subdomain "
            "(a-z, 0-9, '-', '.')%s" % (where, full, hint)
        )
    return full


def mig_profile_of_resource(name):
    """The MIG profile a mixed-strategy resource stands for (``nvidia.com/mig-1g.10gb.me`` -> ``1g.10gb+me``),
    None for any other name. Only profiles with C == G are advertised (rm.go:140-147)."""
    if not isinstance(name, str) or not name.startswith(MIG_RESOURCE_PREFIX):
        return None
    profile = profile_from_name_form(name[len(MIG_RESOURCE_PREFIX) :])
    if profile is None or parse_mig_profile(profile).is_compute_instance:
        return None
    return profile


def check_devices_field(devices, where):
    """A resource's ``devices`` as ReplicatedDevices.UnmarshalJSON reads it (replicas.go:268-323)."""
    if isinstance(devices, bool):
        raise GpuShareError("%s: devices must be 'all', a count > 0 or a list of GPU indices/UUIDs" % where)
    if isinstance(devices, str) or devices is None:
        if devices != "all":
            raise GpuShareError("%s: devices set as %r but the only valid string input is 'all'" % (where, devices))
        return
    if isinstance(devices, int):
        if devices <= 0:
            raise GpuShareError("%s: a count of devices must be > 0, got %d" % (where, devices))
        return
    if isinstance(devices, list):
        for item in devices:
            ok = (isinstance(item, int) and not isinstance(item, bool) and item >= 0) or (
                isinstance(item, str) and _is_device_ref(item)
            )
            if not ok:
                raise GpuShareError(
                    "%s: unsupported type for device in devices list: %r (a GPU index, '<gpu>:<mig>', GPU-<uuid>, "
                    "MIG-<uuid> or MIG-GPU-<uuid>/<gi>/<ci>)" % (where, item)
                )
        return
    raise GpuShareError("%s: devices must be 'all', a count > 0 or a list, got %r" % (where, devices))


def normalize_resource_name(name):
    """The plugin adds the ``nvidia.com/`` prefix to a resource name that lacks it."""
    return name if name.startswith(RESOURCE_PREFIX) else RESOURCE_PREFIX + name


def mig_resource_name(profile):
    """The mixed-strategy resource of a MIG profile: ``1g.10gb`` -> ``nvidia.com/mig-1g.10gb``, ``+`` written
    ``.`` (``1g.10gb+me`` -> ``nvidia.com/mig-1g.10gb.me``, rm.go:140-147)."""
    return MIG_RESOURCE_PREFIX + name_form(profile)


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
    if version is None or (isinstance(version, str) and version in ("", "v1")):
        return
    raise GpuShareError("%s: unknown version %r; version must be v1 (or empty)" % (where, version))


def validate_sharing_config(config, source="device plugin config"):
    """Apply NVIDIA's rules to a parsed device plugin config; raise GpuShareError on the first violation,
    return warnings (names that can never match a device: the plugin accepts and silently ignores them).

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
            "%s: flags.migStrategy: unknown MIG strategy %r; use one of %s"
            % (source, mig_strategy, ", ".join(DEVICE_PLUGIN_MIG_STRATEGIES))
        )

    sharing = config.get("sharing")
    sharing = {} if sharing is None else sharing
    if not isinstance(sharing, dict):
        raise GpuShareError("%s: sharing must be a mapping" % source)
    # replicas.go:190-202: a present timeSlicing (even {} or null) needs resources; mps: null means no MPS.
    configured = [
        method
        for method in SHARING_METHODS
        if SHARING_KEYS[method] in sharing
        and (method == METHOD_TIME_SLICING or sharing[SHARING_KEYS[method]] is not None)
    ]
    if len(configured) > 1:
        # The plugin would silently use MPS and ignore timeSlicing (sharing.go:36-53).
        raise GpuShareError(
            "%s: sharing sets both timeSlicing and mps; the device plugin would silently use MPS only: keep one"
            % source
        )
    warnings = []
    for method in configured:
        warnings += _validate_method(
            sharing[SHARING_KEYS[method]], method, mig_strategy, "%s: sharing.%s" % (source, SHARING_KEYS[method])
        )
    return warnings


def _validate_method(method_config, method, mig_strategy, where):
    if not isinstance(method_config, dict):
        raise GpuShareError(
            "%s: no resources specified; give resources, e.g. [{name: nvidia.com/gpu, replicas: 4}]" % where
        )
    for flag in ("renameByDefault", "failRequestsGreaterThanOne"):
        if method_config.get(flag) is not None and not isinstance(method_config[flag], bool):
            raise GpuShareError("%s.%s must be true or false, got %r" % (where, flag, method_config[flag]))
    if method == METHOD_MPS and mig_strategy == MIG_STRATEGY_MIXED:
        raise GpuShareError(
            "%s: MPS is not supported with the mixed MIG strategy (the device plugin refuses "
            "--mig-strategy=mixed with MPS); change the MIG strategy to single or none, or use time-slicing" % where
        )

    resources = method_config.get("resources")
    if not isinstance(resources, list) or not resources:
        raise GpuShareError(
            "%s.resources: no resources specified; list at least one, e.g. {name: nvidia.com/gpu, replicas: 4}" % where
        )
    seen = set()
    warnings = []
    for index, resource in enumerate(resources):
        item = "%s.resources[%d]" % (where, index)
        if not isinstance(resource, dict):
            raise GpuShareError("%s must be a mapping with name and replicas" % item)
        name = check_resource_name(resource.get("name"), item + ".name")
        warning = _check_resource_name(name, method, mig_strategy, item)
        if warning:
            warnings.append(warning)
        if name in seen:
            raise GpuShareError("%s: resource %s is listed twice; list each resource once" % (item, name))
        seen.add(name)
        if "replicas" not in resource or resource["replicas"] is None:
            raise GpuShareError("%s: no replicas specified for %s; give an integer >= %d" % (item, name, MIN_REPLICAS))
        replicas = resource.get("replicas")
        if not _is_int(replicas) or replicas < MIN_REPLICAS:
            raise GpuShareError(
                "%s: replicas of %s must be an integer >= %d, got %r; to stop sharing, remove the sharing config "
                "instead" % (item, name, MIN_REPLICAS, replicas)
            )
        if method == METHOD_MPS and replicas > MPS_MAX_CLIENTS:
            raise GpuShareError(
                "%s: replicas of %s is %d, but the MPS control daemon accepts at most %d clients per GPU (%d below "
                "compute capability 7.5); lower replicas"
                % (item, name, replicas, MPS_MAX_CLIENTS, MPS_MAX_CLIENTS_BEFORE_VOLTA_MPS)
            )
        if "devices" in resource:
            check_devices_field(resource["devices"], item + ".devices")
        if resource.get("rename") is not None:
            check_resource_name(resource["rename"], item + ".rename")
    return warnings


def _check_resource_name(name, method, mig_strategy, item):
    """A warning when the (well-formed) name can never match a device, None when it may."""
    if name == RESOURCE_GPU:
        return None
    if method == METHOD_MPS:
        raise GpuShareError(
            "%s: MPS can share only %s (full GPUs; MPS is not supported on MIG devices), got %s"
            % (item, RESOURCE_GPU, name)
        )
    profile = mig_profile_of_resource(name)
    if profile is None:
        return (
            "%s: resource %s matches no device (time-slicing shares %s or the mixed-strategy %s<profile> resources, "
            "e.g. %s); the device plugin ignores it"
            % (item, name, RESOURCE_GPU, MIG_RESOURCE_PREFIX, mig_resource_name("1g.10gb"))
        )
    if mig_strategy in (MIG_STRATEGY_NONE, MIG_STRATEGY_SINGLE):
        return (
            "%s: %s exists only with the mixed MIG strategy (with %s, MIG devices are %s); the device plugin ignores it"
            % (item, name, mig_strategy, RESOURCE_GPU)
        )
    return None


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


# The config's top-level fields (api/config/v1/config.go:34-40).
CONFIG_FIELDS = ("version", "flags", "resources", "sharing", "imex")


def not_a_config(text, where):
    """Why ``text`` (a ConfigMap key's value, named ``where``) is not a device-plugin config, None when it is one.

    A config is a mapping of the plugin's own fields, read as the plugin reads it and valid by
    validate_sharing_config. The plugin ignores fields it does not know, so it would read an application's settings
    as an empty config: a field outside CONFIG_FIELDS says the text is something else. An empty document is a
    config (the plugin reads it as every default, config.go:113-137)."""
    try:
        config = load_yaml_document(text, where)
        problem = document_shape_problem(config, CONFIG_FIELDS, where, "a device-plugin config")
        if problem or config is None:
            return problem
        validate_sharing_config(config, where)
    except GpuShareError as exc:
        return exc.msg
    return None


def mps_client_limits(memory_mib, replicas):
    """The limits NVIDIA's MPS control daemon gives each of ``replicas`` clients sharing one GPU of
    ``memory_mib`` (None when unknown)."""
    return dict(
        active_thread_percentage=100 // replicas,
        pinned_device_memory_limit_mib=memory_mib // replicas if memory_mib else None,
    )
