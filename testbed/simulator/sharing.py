"""The device plugin's configuration file, read and checked the way k8s-device-plugin does it.

Reference file, section 1. A config is one YAML document under a ConfigMap key; the result is a
``Sharing`` (or None for an unshared config) or an ``InvalidConfig`` saying why the plugin refuses it.
"""

import logging

import yaml

from testbed.simulator.names import GPU_RESOURCE, NVIDIA

log = logging.getLogger(__name__)

TIME_SLICING = "time-slicing"
MPS = "mps"
MIG_STRATEGIES = ("none", "single", "mixed")


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
    """Parse one config document. Returns ``(sharing or None, config_mig_strategy or None)``.

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
            raise InvalidConfig("MPS sharing is only supported for %s, not %s" % (GPU_RESOURCE, ", ".join(mig_resources)))
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
