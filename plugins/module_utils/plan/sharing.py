# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a device-plugin sharing profile (time-slicing or MPS): pure functions from (cluster objects,
request) to the writes to make, the restart decision, what each node must show afterwards, and the diff.

No Kubernetes I/O here: ``run/sharing.py`` reads the objects, calls ``plan_profile`` and applies the plan,
so everything that decides *what* to change is unit-tested without a cluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    POLICY_DEVICE_PLUGIN_FIELD,
    device_plugin_config_of,
    mig_strategy_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    METHOD_MPS,
    MIG_STRATEGY_MIXED,
    RESOURCE_GPU,
    SHARED_RESOURCE_SUFFIX,
    SHARING_KEYS,
    device_list_bytes,
    mig_profile_of_resource,
    mig_resource_name,
    most_replicas_advertised,
    mps_max_clients,
    not_a_config,
    parse_sharing_config,
    sharing_method_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import SHARED_PRODUCT_SUFFIX
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_REPLICAS,
    LABEL_SHARING_STRATEGY,
    SHARING_NONE,
    NodeGpuState,
    mig_label,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.config_map_owner import refuse_foreign_config_map
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import (
    Fleet,
    ObjectWrites,
    device_plugin_config_patch,
    recorded,
)


class SharingRequest(object):
    """One device-plugin profile as the user wants it.

    ``config`` is the built device-plugin config for ``present`` (None for ``absent``);
    ``node_names`` are the nodes to label (None: no node is labelled, e.g. ``make_default`` only);
    ``restart`` is True/False to force, None for "when needed".
    """

    def __init__(self, state, key, config_map, config=None, node_names=None, make_default=False, restart=None):
        self.state = state
        self.key = key
        self.config_map = config_map
        self.config = config
        self.node_names = node_names
        self.make_default = make_default
        self.restart = restart


class NodeExpectation(object):
    """What a node's labels and allocatable must show once a config is applied (None: unshared)."""

    def __init__(self, config=None, ignored=()):
        self.method = sharing_method_of(config) if config else None
        method_config = (config or {}).get("sharing", {}).get(SHARING_KEYS.get(self.method, ""), {})
        self.rename_by_default = bool(method_config.get("renameByDefault"))
        # Resources that match no device on the node (warned about) are not waited for.
        self.replicas = dict(
            (entry["name"], entry["replicas"])
            for entry in method_config.get("resources", [])
            if entry["name"] not in ignored
        )

    def describe(self):
        if not self.method:
            return "unshared"
        return "%s %s" % (self.method, ", ".join("%s x%s" % item for item in sorted(self.replicas.items())))

    def problem(self, node):
        """None when ``node`` (dict) shows this expectation, else what differs."""
        state = NodeGpuState.from_node(node)
        problems = []
        if not self.method:
            _expect(problems, LABEL_REPLICAS, state.replicas, 1)
            _expect(problems, LABEL_SHARING_STRATEGY, state.sharing_strategy, SHARING_NONE)
            if state.product and state.product.endswith(SHARED_PRODUCT_SUFFIX):
                problems.append("product %s still ends in %s" % (state.product, SHARED_PRODUCT_SUFFIX))
            if not state.mig_enabled:
                _expect(problems, "allocatable " + RESOURCE_GPU, state.allocatable.get(RESOURCE_GPU, 0), state.count)
            if state.mig_strategy == MIG_STRATEGY_MIXED:  # time-sliced MIG resources must be back to one replica each
                for profile, instances in sorted(state.mig_resources.items()):
                    _expect(
                        problems,
                        mig_label(profile, "replicas"),
                        state.labels.get(mig_label(profile, "replicas"), "1"),
                        "1",
                    )
                    resource = mig_resource_name(profile)
                    _expect(problems, "allocatable " + resource, state.allocatable.get(resource, 0), instances)
            return "; ".join(problems) or None
        for resource, replicas in sorted(self.replicas.items()):
            if resource == RESOURCE_GPU:
                self._gpu_problems(state, replicas, problems)
            else:
                self._mig_problems(state, resource, replicas, problems)
        if self.method == METHOD_MPS and not state.mps_capable:
            problems.append("nvidia.com/mps.capable is not true")
        return "; ".join(problems) or None

    def _gpu_problems(self, state, replicas, problems):
        _expect(problems, LABEL_REPLICAS, state.replicas, replicas)
        _expect(problems, LABEL_SHARING_STRATEGY, state.sharing_strategy, self.method)
        if self.rename_by_default:
            shared = RESOURCE_GPU + SHARED_RESOURCE_SUFFIX
            _expect(problems, "allocatable " + shared, state.allocatable.get(shared, 0), state.count * replicas)
        else:
            if not (state.product or "").endswith(SHARED_PRODUCT_SUFFIX):
                problems.append("product %s lacks %s" % (state.product, SHARED_PRODUCT_SUFFIX))
            _expect(
                problems, "allocatable " + RESOURCE_GPU, state.allocatable.get(RESOURCE_GPU, 0), state.count * replicas
            )

    def _mig_problems(self, state, resource, replicas, problems):
        profile = mig_profile_of_resource(resource)
        labels = state.labels
        _expect(
            problems, mig_label(profile, "replicas"), labels.get(mig_label(profile, "replicas"), "1"), str(replicas)
        )
        instances = state.mig_resources.get(profile, 0)
        advertised = resource + SHARED_RESOURCE_SUFFIX if self.rename_by_default else resource
        _expect(problems, "allocatable " + advertised, state.allocatable.get(advertised, 0), instances * replicas)


def _expect(problems, what, actual, wanted):
    if actual != wanted:
        problems.append("%s=%s (want %s)" % (what, actual, wanted))


DEVICE_PLUGIN_CONFIGS = "device-plugin configs"


class SharingPlan(ObjectWrites):
    """The writes for one device-plugin profile (or a reset), plus what each node must show (``NodeExpectation``)."""

    def __init__(self, namespace, config_map):
        super(SharingPlan, self).__init__(config_map)
        self.namespace = namespace


def existing_profile(config_map, key, where):
    """The text of profile ``key`` and its parsed config (None when absent or unparsable)."""
    text = ((config_map or {}).get("data") or {}).get(key)
    if text is None:
        return None, None
    try:
        return text, parse_sharing_config(text, source=where)
    except GpuShareError:
        # No profile; before a write, refuse_foreign_config_map lets such a key through only when the collection
        # added it, so it is the collection's to repair.
        return text, None


def validate_targets(request, states, policy_strategy=None):
    """Refuse targets that cannot take this profile, all problems at once, before any write.

    Returns (warnings, {node: resources that match no device there}): a resource name the device
    plugin accepts but that matches no device on a node is silently ignored by NVIDIA; here it is a
    warning, and the wait does not expect it.
    """
    errors = []
    warnings = []
    ignored = {}
    method = sharing_method_of(request.config)
    resources = request.config["sharing"][SHARING_KEYS[method]]["resources"]
    for state in states:
        if not state.is_gpu_node:
            errors.append("node %s has no NVIDIA GPU (no nvidia.com/gpu.present label or GPU capacity)" % state.name)
            continue
        strategy = state.mig_strategy or policy_strategy
        if method == METHOD_MPS:
            refusal = _mps_refusal(state, strategy)
            if refusal:
                errors.append(refusal)
                continue
            errors += _mps_client_errors(state, resources)
        resource_errors, unmatched = _resource_errors(state, strategy, resources)
        errors += resource_errors
        if unmatched:
            ignored[state.name] = set(unmatched)
            advertised = ", ".join(mig_resource_name(p) for p in sorted(state.mig_resources)) or "none"
            warnings.append(
                "node %s: %s match(es) no device there (MIG resources it advertises: %s; nvidia.com/mig-<profile> "
                "exist only with the mixed strategy); the device plugin ignores them silently"
                % (state.name, ", ".join(unmatched), advertised)
            )
    if errors:
        raise GpuShareError("Cannot apply %s profile %r: %s." % (method, request.key, "; ".join(errors)))
    return warnings, ignored


def _mps_refusal(state, strategy):
    """Why a GPU node cannot run MPS at all (MIG enabled on it, or the mixed strategy), or None."""
    if state.mig_enabled:
        return (
            "node %s has MIG enabled (%s): MPS is not supported on MIG devices; disable MIG first (gpu_reset "
            "or gpu_mig_config config=all-disabled)" % (state.name, state.product)
        )
    if strategy == MIG_STRATEGY_MIXED:
        return (
            "node %s: the MIG strategy is mixed, and the device plugin refuses MPS with --mig-strategy=mixed "
            "even on GPUs without MIG; change the strategy (it is cluster-wide): gpu_mig_config "
            "strategy=single (or none in the ClusterPolicy's spec.mig.strategy)" % state.name
        )
    return None


def _mps_client_errors(state, resources):
    """Each resource whose replicas exceed the MPS control daemon's client limit on this node's GPUs."""
    limit = mps_max_clients(state.compute_capability)
    return [
        "node %s: replicas %d is above the MPS control daemon's limit of %d clients per GPU (compute "
        "capability %s); lower replicas to %d or less"
        % (
            state.name,
            entry["replicas"],
            limit,
            "%d.%d" % state.compute_capability if state.compute_capability else "unknown",
            limit,
        )
        for entry in resources
        if entry["replicas"] > limit
    ]


def _resource_errors(state, strategy, resources):
    """(errors, resources that match no device) of the profile's resources on one GPU node: nvidia.com/gpu on MIG
    GPUs, a device list above the kubelet's limit; a MIG resource the node does not advertise is unmatched."""
    errors, unmatched = [], []
    for entry in resources:
        resource = entry["name"]
        if resource == RESOURCE_GPU:
            if state.mig_enabled:
                errors.append(
                    "node %s has its GPUs in MIG mode (%s): nvidia.com/gpu counts MIG devices there; share the "
                    "nvidia.com/mig-<profile> resources instead or disable MIG" % (state.name, state.product)
                )
                continue
            devices = state.count
        else:
            profile = mig_profile_of_resource(resource)
            if strategy != MIG_STRATEGY_MIXED or not profile or not state.mig_resources.get(profile):
                unmatched.append(resource)
                continue
            devices = state.mig_resources[profile]
        most = most_replicas_advertised(max(devices, 1))
        if entry["replicas"] > most:
            errors.append(
                "node %s: %d x %d replicas of %s is a device list of about %.1f MiB, above the kubelet's 4 MiB "
                "limit for a device plugin's list (kubernetes/kubernetes#109304): the node would advertise no %s "
                "at all; lower replicas to %d or less"
                % (
                    state.name,
                    devices,
                    entry["replicas"],
                    resource,
                    device_list_bytes(devices * entry["replicas"]) / 1048576.0,
                    resource,
                    most,
                )
            )
    return errors, unmatched


def _resolves_to(state, key, default):
    """Whether a node's device plugin uses profile ``key`` (its label, else the policy default)."""
    return state.device_plugin_config == key or (
        state.device_plugin_config is None and state.is_gpu_node and default == key
    )


def plan_profile(request, platform_namespace, policy, config_map, nodes):
    """Plan ``request`` against the current ClusterPolicy, ConfigMap (or None) and node dicts."""
    fleet = Fleet(nodes)
    fleet.require(request.node_names)
    plan = SharingPlan(platform_namespace, request.config_map)
    where = "ConfigMap %s/%s key %s" % (platform_namespace, request.config_map, request.key)
    existing_text, existing_config = existing_profile(config_map, request.key, where)
    policy_name, policy_default = device_plugin_config_of(policy)

    if request.state == "present":
        refuse_foreign_config_map(config_map, not_a_config, DEVICE_PLUGIN_CONFIGS)
        _plan_present(plan, request, fleet, policy, config_map, existing_text, existing_config, where)
    else:
        _plan_absent(plan, request, fleet, policy, config_map, existing_text)

    plan.before["cluster_policy"] = {POLICY_DEVICE_PLUGIN_FIELD: {"name": policy_name, "default": policy_default}}
    return plan


def _plan_present(plan, request, fleet, policy, config_map, existing_text, existing_config, where):
    """Write profile ``key``: its content, the policy's pointer and default, the given nodes' labels; and what every
    node the profile reaches must show afterwards."""
    states = fleet.states
    existing_method = sharing_method_of(existing_config) if existing_config else None
    if existing_method and existing_method != sharing_method_of(request.config):
        raise GpuShareError(
            "%s already holds a %s profile; choose another config_key, or remove it first with state=absent."
            % (where, existing_method)
        )
    policy_default = device_plugin_config_of(policy)[1]
    content_changed = existing_config != request.config
    targets = _profile_targets(request, states, policy_default, content_changed)
    target_warnings, ignored = validate_targets(request, [states[name] for name in targets], mig_strategy_of(policy))
    plan.warnings.extend(target_warnings)

    text = dump_config(request.config)
    if config_map is None:
        plan.config_map_create = {request.key: text}
    elif content_changed:
        plan.config_map_patch = recorded(
            config_map, {"data": {request.key: text}}, "data", {request.key: existing_text}
        )
    plan.before["config_map"] = {request.key: existing_text}
    plan.after["config_map"] = {request.key: text}
    _plan_policy_pointer(plan, request, policy)
    label_nodes(plan, fleet, request.node_names or [], request.key)
    _plan_restart(plan, request, fleet, targets, policy_default, content_changed, ignored)


def _profile_targets(request, states, policy_default, content_changed):
    """The nodes the profile reaches: those named, every unlabelled GPU node when it becomes the default, and every
    GPU node already on the key when its content changes (named in this run or not)."""
    targets = list(request.node_names or [])
    if request.make_default:
        targets += [
            name
            for name, state in sorted(states.items())
            if state.is_gpu_node and state.device_plugin_config is None and name not in targets
        ]
    if content_changed:
        targets += [
            name
            for name, state in sorted(states.items())
            if name not in targets and state.is_gpu_node and _resolves_to(state, request.key, policy_default)
        ]
    return targets


def _plan_policy_pointer(plan, request, policy):
    """Point the policy's device plugin at the profile's ConfigMap (and at the key as default when asked), warning
    when it pointed at another ConfigMap."""
    policy_name, policy_default = device_plugin_config_of(policy)
    new_default = request.key if request.make_default else policy_default
    if (policy_name, policy_default) != (request.config_map, new_default):
        if policy_name and policy_name != request.config_map:
            plan.warnings.append(
                "ClusterPolicy %s pointed at ConfigMap %s; it now points at %s, so profiles kept only in %s no "
                "longer apply." % (policy["metadata"]["name"], policy_name, request.config_map, policy_name)
            )
        plan.policy_patch = device_plugin_config_patch(policy, request.config_map, new_default)
    plan.after["cluster_policy"] = {POLICY_DEVICE_PLUGIN_FIELD: {"name": request.config_map, "default": new_default}}


def _plan_restart(plan, request, fleet, targets, policy_default, content_changed, ignored):
    """Whether the device plugin restarts, and what each target must show (a target left stale without a restart
    is not waited for).

    The plugin re-reads its config only when the node label changes or its pods restart: nodes
    already on this key never see new content without a restart, nor content staged earlier
    with restart_device_plugin=false (their labels show the old profile)."""
    expectation = NodeExpectation(request.config)
    stale = [
        name
        for name in targets
        if _resolves_to(fleet.states[name], request.key, policy_default)
        and (content_changed or expectation.problem(fleet.nodes[name]))
    ]
    plan.restart = bool(stale) if request.restart is None else request.restart
    if stale and not plan.restart:
        plan.warnings.append(
            "restart_device_plugin=false: node(s) %s keep the configuration the device plugin read before, "
            "until it restarts (run again without restart_device_plugin=false)" % ", ".join(stale)
        )
        targets = [name for name in targets if name not in stale]
    plan.expectations = dict(
        (name, NodeExpectation(request.config, ignored[name]) if name in ignored else expectation) for name in targets
    )


def label_nodes(plan, fleet, names, key):
    """Point ``names`` at profile ``key`` (None removes the label), recording the previous value."""
    plan.before.setdefault("nodes", {})
    plan.after.setdefault("nodes", {})
    for name in names:
        plan.relabel(fleet, name, LABEL_DEVICE_PLUGIN_CONFIG, key)


def _plan_absent(plan, request, fleet, policy, config_map, existing_text):
    """Remove profile ``key``: from the given nodes only, or everywhere (key, label, default)."""
    states = fleet.states
    policy_name, policy_default = device_plugin_config_of(policy)
    remove_everywhere = request.node_names is None
    if remove_everywhere:
        names = [name for name, state in sorted(states.items()) if state.device_plugin_config == request.key]
    else:
        names = [name for name in request.node_names if states[name].device_plugin_config == request.key]
    label_nodes(plan, fleet, names, None)

    new_default = policy_default
    if remove_everywhere:
        if existing_text is not None:
            refuse_foreign_config_map(config_map, not_a_config, DEVICE_PLUGIN_CONFIGS)
            plan.config_map_patch = recorded(
                config_map, {"data": {request.key: None}}, "data", {request.key: existing_text}
            )
        plan.before["config_map"] = {request.key: existing_text}
        plan.after["config_map"] = {request.key: None}
        if policy_default == request.key:
            new_default = None
            plan.policy_patch = device_plugin_config_patch(policy, policy_name, None)
        names += [
            name
            for name, state in sorted(states.items())
            if name not in names and _resolves_to(state, request.key, policy_default)
        ]
    plan.after["cluster_policy"] = {POLICY_DEVICE_PLUGIN_FIELD: {"name": policy_name, "default": new_default}}

    # Unlabelled nodes fall back to the policy default, which may itself be a sharing profile.
    fallback = None
    if new_default:  # the key itself when removed from some nodes only: they fall back to it
        fallback = existing_profile(config_map, new_default, "default profile %s" % new_default)[1]
    expectation = NodeExpectation(fallback)
    plan.expectations = dict((name, expectation) for name in names)
    plan.restart = bool(request.restart)
