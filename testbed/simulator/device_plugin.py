"""NVIDIA's k8s-device-plugin on one node: its config file, read and checked the way the plugin does it,
and the ``nvidia.com/*`` resources it advertises.

Reference ``nvidia-gpu-sharing.md`` sections 1-2 and ``device-plugin-rules.md``. A config is one YAML
document under a ConfigMap key; parsing gives a ``Sharing`` (or None for an unshared config) or an
``InvalidConfig`` saying why the plugin refuses it. The plugin reads its config when it (re)starts:
when its DaemonSet's pod template changes, or the node's ``nvidia.com/device-plugin.config`` label does.
"""

import logging

import yaml

from testbed.simulator import gpu_operator, nvml
from testbed.simulator.kube import get_or_none
from testbed.simulator.names import (
    CONFIG_DEFAULT_ENV,
    CONFIG_NAME_ENV,
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_RESOURCE,
    INVALID_DEVICE_PLUGIN_CONFIG,
    MIG_STRATEGY_ENV,
    NVIDIA,
    SHARED_SUFFIX,
)

log = logging.getLogger(__name__)

DEVICE_PLUGIN = "nvidia-device-plugin"
TIME_SLICING = "time-slicing"
MPS = "mps"
MIG_STRATEGIES = ("none", "single", "mixed")


# the config file ---------------------------------------------------------------------------------


class InvalidConfig(Exception):
    """The plugin refuses this config; the message is what it would log."""


class Sharing(object):
    """A valid sharing section: ``replicas`` maps each resource name to its replicas per device."""

    def __init__(self, strategy, replicas, rename_by_default, fail_requests_greater_than_one):
        self.strategy = strategy
        self.replicas = replicas
        self.rename_by_default = rename_by_default
        self.fail_requests_greater_than_one = fail_requests_greater_than_one

    def to_dict(self):
        return {
            "strategy": self.strategy,
            "replicas": dict(self.replicas),
            "renameByDefault": self.rename_by_default,
            "failRequestsGreaterThanOne": self.fail_requests_greater_than_one,
        }

    @classmethod
    def from_dict(cls, data):
        if not data:
            return None
        return cls(data["strategy"], data["replicas"], data["renameByDefault"], data["failRequestsGreaterThanOne"])


def parse_config(text, mig_strategy):
    """Parse one config document: a ``Sharing``, or None when it shares nothing.

    ``mig_strategy`` is the operator's (``MIG_STRATEGY`` of the plugin's pod): like a set
    command-line flag, it overrides ``flags.migStrategy`` of the file.
    """
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise InvalidConfig("unable to parse config file: %s" % exc)
    if not isinstance(config, dict):
        raise InvalidConfig("unable to parse config file: not a mapping")
    version = config.get("version") or "v1"
    if version != "v1":
        raise InvalidConfig("unknown version: %s" % version)
    file_mig_strategy = (config.get("flags") or {}).get("migStrategy")
    if file_mig_strategy is not None and file_mig_strategy not in MIG_STRATEGIES:
        raise InvalidConfig("invalid --mig-strategy option: %s" % file_mig_strategy)
    effective_mig_strategy = mig_strategy or file_mig_strategy or "none"
    return _parse_sharing(config.get("sharing") or {}, effective_mig_strategy)


def _parse_sharing(section, mig_strategy):
    time_slicing, mps = section.get("timeSlicing"), section.get("mps")
    if time_slicing and mps:
        # The real plugin silently lets MPS win; the reference tells us to refuse the pair, and the
        # simulator models that refusal as an invalid config so a user sees it.
        raise InvalidConfig("both timeSlicing and mps are set: only one sharing method may be used")
    if not (time_slicing or mps):
        return None
    strategy = MPS if mps else TIME_SLICING
    body = mps or time_slicing
    replicas = _parse_resources(body.get("resources"))
    if strategy == MPS:
        if mig_strategy == "mixed":
            raise InvalidConfig("using MPS with the mixed MIG strategy is not supported")
        mig_resources = sorted(name for name in replicas if name != GPU_RESOURCE)
        if mig_resources:
            raise InvalidConfig(
                "MPS sharing is only supported for %s, not %s" % (GPU_RESOURCE, ", ".join(mig_resources))
            )
    fail_above_one = body.get("failRequestsGreaterThanOne")
    if fail_above_one is None:
        # Time-slicing defaults to false; MPS forces it true unless it is set.
        fail_above_one = strategy == MPS
    return Sharing(strategy, replicas, bool(body.get("renameByDefault")), bool(fail_above_one))


def _parse_resources(resources):
    if not resources:
        raise InvalidConfig("no resources specified")
    replicas = {}
    for resource in resources:
        name = (resource or {}).get("name")
        if not name:
            raise InvalidConfig("resource name is required")
        if not name.startswith(NVIDIA):
            name = NVIDIA + name
        count = resource.get("replicas")
        if not isinstance(count, int) or isinstance(count, bool) or count < 2:
            raise InvalidConfig("number of replicas must be >= 2 for %s, got %r" % (name, count))
        for ignored in ("rename", "devices"):
            if ignored in resource:
                log.info("ignoring per-resource %r of %s: only renameByDefault renames", ignored, name)
        replicas[name] = count
    return replicas


# starting on a node ------------------------------------------------------------------------------------


def run(cluster, kube, change, daemonset, restarted):
    """(Re)start the plugin on a ``NodeChange`` when it would restart; the config it then runs is in
    ``change.applied`` (``configLabel``, ``daemonSet``, ``migStrategy``, ``sharing``)."""
    applied = change.applied
    config_label = change.labels.get(DEVICE_PLUGIN_CONFIG_LABEL)
    revision = gpu_operator.daemonset_revision(daemonset)
    waiting_for = applied.get("waitingForConfigMap")
    if waiting_for and cluster.configmap(waiting_for) is not None:
        restarted = True  # the hung plugin's ConfigMap volume finally mounts
    if restarted or config_label != applied.get("configLabel") or revision != applied.get("daemonSet"):
        env = gpu_operator.plugin_env(daemonset)
        applied.update(
            configLabel=config_label, daemonSet=revision, migStrategy=env[MIG_STRATEGY_ENV], waitingForConfigMap=None
        )
        _load_config(cluster, kube, change, env, config_label)


def _load_config(cluster, kube, change, env, config_label):
    """Read the plugin's config as it starts; on any problem the node keeps what it had."""
    configmap_name = env[CONFIG_NAME_ENV]
    if not configmap_name:
        change.applied["sharing"] = None  # no config: the plugin's defaults, nothing shared
        return
    namespace = cluster.operator_namespace()
    # Read live, not from the cache: the watch may not have delivered an edit made just before the restart.
    configmap = get_or_none(kube.core.read_namespaced_config_map, configmap_name, namespace)
    if configmap is None:
        change.applied["waitingForConfigMap"] = configmap_name
        change.event(
            INVALID_DEVICE_PLUGIN_CONFIG,
            "ConfigMap %s/%s not found: the device plugin waits for it" % (namespace, configmap_name),
            DEVICE_PLUGIN,
        )
        return
    key = config_label or env[CONFIG_DEFAULT_ENV]
    data = configmap.get("data") or {}
    if not key:
        change.applied["sharing"] = None
        return
    if key not in data:
        change.event(
            INVALID_DEVICE_PLUGIN_CONFIG,
            "config '%s' not found in ConfigMap %s: skipped" % (key, configmap_name),
            DEVICE_PLUGIN,
        )
        return
    try:
        sharing = parse_config(data[key], env[MIG_STRATEGY_ENV])
        if sharing and sharing.strategy == MPS and any(gpu is not None for gpu in change.applied["migLayout"]):
            raise InvalidConfig("MPS sharing is not supported on MIG devices")
    except InvalidConfig as exc:
        change.event(
            INVALID_DEVICE_PLUGIN_CONFIG,
            "invalid config '%s' in ConfigMap %s: %s" % (key, configmap_name, exc),
            DEVICE_PLUGIN,
        )
        return
    change.applied["sharing"] = sharing.to_dict() if sharing else None


# what it advertises --------------------------------------------------------------------------------------


class Advertised(object):
    """One resource the plugin advertises; GPU Feature Discovery describes it with labels named after it.

    ``count_label`` is what the ``.count`` label shows: the devices, except for full GPUs under the
    mixed strategy, where GFD still counts the physical GPUs while the resource drops to the non-MIG ones.
    """

    def __init__(self, resource, devices, product, memory_mib, slices=None, count_label=None):
        self.resource = resource
        self.devices = devices
        self.count_label = devices if count_label is None else count_label
        self.product = product
        self.memory_mib = memory_mib
        self.slices = slices


def mig_resource(profile):
    """The mixed-strategy resource of a MIG profile: ``+`` is written ``.`` (``nvidia.com/mig-1g.10gb.me``)."""
    return "nvidia.com/mig-" + profile.replace("+", ".")


def advertised_resources(hardware, layout, mig_strategy):
    """What the plugin advertises for the node's GPUs, their MIG ``layout`` and the MIG strategy."""
    product, count, memory = hardware["product"], hardware["count"], hardware["memory_mib"]
    mig_gpus = [gpu for gpu in layout if gpu is not None]
    if not mig_gpus or mig_strategy == "none":
        return [Advertised(GPU_RESOURCE, count, product, memory)]
    gpu = nvml.gpu_of(hardware)
    if mig_strategy == "single":
        profiles = {profile for mig_gpu in mig_gpus for profile, instances in mig_gpu.items() if instances}
        uniform = len(mig_gpus) == count and len(profiles) == 1 and all(len(mig_gpu) == 1 for mig_gpu in mig_gpus)
        if not uniform:
            return [Advertised(GPU_RESOURCE, 0, product + "-MIG-INVALID", 0)]
        profile = profiles.pop()
        facts = gpu.mig_profiles[profile]
        instances = sum(mig_gpu[profile] for mig_gpu in mig_gpus)
        return [Advertised(GPU_RESOURCE, instances, "%s-MIG-%s" % (product, profile), facts.memory_mib, facts.slices)]
    # mixed: full GPUs stay nvidia.com/gpu (0 when all are MIG-enabled), MIG devices get their own resources.
    totals = {}
    for mig_gpu in mig_gpus:
        for profile, instances in mig_gpu.items():
            totals[profile] = totals.get(profile, 0) + instances
    advertised = [Advertised(GPU_RESOURCE, count - len(mig_gpus), product, memory, count_label=count)]
    for profile in sorted(totals):
        facts = gpu.mig_profiles[profile]
        advertised.append(
            Advertised(
                mig_resource(profile),
                totals[profile],
                "%s-MIG-%s" % (product, profile),
                facts.memory_mib,
                facts.slices,
            )
        )
    return advertised


def resources(advertised, sharing):
    """``(capacity, allocatable)`` of the ``nvidia.com/*`` resources, with the sharing config applied."""
    capacity, allocatable = {}, {}
    for item in advertised:
        replicas = replicas_of(item, sharing)
        if replicas > 1 and sharing.rename_by_default:
            capacity[item.resource] = str(item.devices)
            allocatable[item.resource] = "0"
            capacity[item.resource + SHARED_SUFFIX] = allocatable[item.resource + SHARED_SUFFIX] = str(
                item.devices * replicas
            )
        else:
            capacity[item.resource] = allocatable[item.resource] = str(item.devices * replicas)
    return capacity, allocatable


def replicas_of(advertised, sharing):
    return sharing.replicas.get(advertised.resource, 1) if sharing else 1
