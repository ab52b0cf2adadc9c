# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a MIG change: pure functions from (cluster objects, request) to the writes to make,
what each node must show afterwards, and the diff.

No Kubernetes I/O here: ``mig_config`` reads the objects, calls ``plan_mig``, checks the GPU pods,
applies the plan and waits, so every decision about *what* to change is unit-tested without a cluster.
Reference file, section 4: mig-manager follows the node label ``nvidia.com/mig.config``, reads the
ConfigMap the ClusterPolicy names in ``spec.migManager.config.name`` (key ``config.yaml``), and does
not reload a config edited under an unchanged name (gpu-operator #891)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    CUSTOM_MIG_CONFIG_MAP,
    POLICY_MIG_MANAGER_FIELD,
    POLICY_MIG_STRATEGIES,
    POLICY_STRATEGY_FIELD,
    mig_manager_config_map,
    mig_manager_config_of,
    mig_manager_reboots,
    mig_strategy_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_STRATEGY_MIXED,
    MIG_STRATEGY_SINGLE,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import (
    ALL_DISABLED,
    MIG_PARTED_KEY,
    build_mig_parted_config,
    is_shipped_config_name,
    mig_configs_of,
    mig_devices_of,
    normalize_layout,
    not_a_config_file,
    resolve_shipped_config,
    shipped_config_hint,
    validate_mig_layout,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    BUSY_MIG_STATES,
    LABEL_MIG_CONFIG,
    LABEL_MIG_CONFIG_STATE,
    MIG_STATE_FAILED,
    MIG_STATE_PENDING,
    MIG_STATE_REBOOTING,
    MIG_STATE_SUCCESS,
    PAUSED_FOR_MIG_CHANGE,
    NodeGpuState,
    advertised_mig_devices,
    deploy_label,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_mig_layout import (
    layout_per_gpu,
    physical_gpu_count,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.config_map_owner import refuse_foreign_config_map
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import (
    Fleet,
    ObjectWrites,
    on_version_read,
    recorded,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import platform_without_mig

MIG_PARTED_CONFIG_FILES = "mig-parted config files"

STUCK_HINT = (
    "mig-manager may be stuck with the operands paused (gpu-operator #2833): check the nvidia-mig-manager pod's log "
    "and that no "
    "GPU pod runs on the node; once the cause is gone, set nvidia.com/mig.config again and remove leftover "
    "nvidia.com/gpu.deploy.*=paused-for-mig-change labels (set them back to true)"
)


def single_strategy_problem(layout, gpu_count):
    """Why GPU Feature Discovery's single strategy could not describe this layout (it would advertise
    ``<model>-MIG-INVALID`` and zero GPUs), or None. Single needs every GPU MIG-disabled, or every GPU
    split into instances of one and the same profile."""
    per_gpu = [gpu for _index, gpu in sorted(layout_per_gpu(layout, gpu_count).items())]
    if all(gpu is None for gpu in per_gpu):
        return None
    profiles = set(profile for gpu in per_gpu if gpu for profile, _count in gpu)
    if any(gpu is None for gpu in per_gpu) or any(len(gpu) != 1 for gpu in per_gpu) or len(profiles) != 1:
        return (
            "the mig strategy single needs every GPU split into instances of one same profile (this layout gives %s); "
            "use strategy mixed" % ", ".join("GPU %d: %s" % (i, _describe_gpu(gpu)) for i, gpu in enumerate(per_gpu))
        )
    return None


def _describe_gpu(gpu):
    if gpu is None:
        return "MIG off"
    return " + ".join("%dx%s" % (n, p) for p, n in gpu) or "MIG on, no instances"


class MigRequest(object):
    """One MIG change as the user wants it.

    Either ``config`` (a shipped name) or ``layout`` (a custom mig-parted layout) with ``config_name``,
    written into ConfigMap ``config_map``; ``strategy`` None keeps the policy's.

    ``for_new_nodes``: the layout is for nodes that join later, whose MachineSet's template labels name it
    (gpu_machineset): no node is labelled, and the caller validates the layout on their GPU model.

    ``checked_nodes``: the nodes whose MIG state this task's first plan already found free of an earlier change
    (pending or failed). When a conflict (409) makes the task read and plan again, such a node showing the target
    config as pending or failed shows this task's own label, written before the conflict: mig-manager acting on it,
    or failing it, which the wait reports for that node. Refusing it as an earlier change would make the task
    refuse its own change.
    """

    def __init__(
        self,
        node_names,
        config=None,
        layout=None,
        config_name=None,
        config_map=CUSTOM_MIG_CONFIG_MAP,
        strategy=None,
        checked_nodes=(),
        for_new_nodes=False,
    ):
        self.node_names = node_names
        self.for_new_nodes = for_new_nodes
        self.config = config
        self.layout = layout
        self.config_name = config_name
        self.config_map = config_map
        self.strategy = strategy
        self.checked_nodes = frozenset(checked_nodes)

    @property
    def target_config(self):
        return self.config if self.layout is None else self.config_name


class MigExpectation(object):
    """What a node shows once mig-manager applied ``config_name`` and GFD re-labelled it.

    ``devices`` (profile -> MIG devices the node advertises) and ``strategy`` are checked when given.
    """

    def __init__(self, config_name, devices=None, strategy=None):
        self.config_name = config_name
        self.devices = devices
        self.strategy = strategy

    def failed(self, node):
        """True when mig-manager reported this change failed (terminal: waiting cannot help)."""
        state = NodeGpuState.from_node(node)
        return state.mig_config == self.config_name and state.mig_config_state == MIG_STATE_FAILED

    def problem(self, node):
        """None when ``node`` (dict) shows the applied config, else what differs."""
        state = NodeGpuState.from_node(node)
        if state.mig_config != self.config_name:
            return "%s=%s (want %s)" % (LABEL_MIG_CONFIG, state.mig_config, self.config_name)
        if state.mig_config_state != MIG_STATE_SUCCESS:
            problem = "%s=%s" % (
                LABEL_MIG_CONFIG_STATE,
                state.mig_config_state or "unset (mig-manager has not started the change)",
            )
            if state.paused_components:
                problem += ", operands paused (%s=%s)" % (
                    ", ".join(deploy_label(c) for c in state.paused_components),
                    PAUSED_FOR_MIG_CHANGE,
                )
            if state.mig_config_state == MIG_STATE_REBOOTING:
                problem += "; " + _reboot_progress(node)
            elif state.mig_config_state == MIG_STATE_PENDING or state.paused_components:
                problem += "; " + STUCK_HINT
            return problem
        if self.strategy and state.mig_strategy != self.strategy:
            return "nvidia.com/mig.strategy=%s (want %s)" % (state.mig_strategy, self.strategy)
        advertised = advertised_mig_devices(state)
        if self.devices is not None and advertised != self.devices:
            return "advertises MIG devices %s (want %s)" % (
                _describe_devices(advertised),
                _describe_devices(self.devices),
            )
        return None


def _reboot_progress(node):
    """Where a node mig-manager is rebooting stands: down (its Ready condition), or back and resuming."""
    ready = next(
        (c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
        {},
    )
    if ready.get("status") == "True":
        return (
            "mig-manager rebooted the node to change the GPUs' MIG mode (WITH_REBOOT=true); it is Ready again and "
            "mig-manager resumes the change"
        )
    return (
        "mig-manager is rebooting the node to change the GPUs' MIG mode (WITH_REBOOT=true) and it is not back yet "
        "(Ready=%s%s); a reboot can take minutes: allow for it in wait_timeout"
        % (ready.get("status") or "unknown", ": %s" % ready["message"] if ready.get("message") else "")
    )


def _describe_devices(devices):
    return ", ".join("%s x%d" % item for item in sorted(devices.items())) or "none"


class MigPlan(ObjectWrites):
    """The writes for one MIG change, plus what each node must show (``MigExpectation``).

    ``node_patches`` are the nodes mig-manager reconfigures: their GPUs must be idle.
    """

    def __init__(self, config_map, strategy):
        super(MigPlan, self).__init__(config_map)
        self.strategy = strategy  # the MIG strategy in effect once applied
        self.layouts = {}  # node name -> the layout it gets
        self.skipped = []  # nodes without MIG left alone by all-disabled


def validate_request(request):
    """Refuse option combinations that cannot be planned (before reading anything from the cluster)."""
    if (request.config is None) == (request.layout is None):
        raise GpuShareError(
            "Give either config (a shipped MIG config name) or layout (a custom layout with config_name)."
        )
    if request.strategy is not None and request.strategy not in POLICY_MIG_STRATEGIES:
        raise GpuShareError("strategy must be one of %s, got %r" % (", ".join(POLICY_MIG_STRATEGIES), request.strategy))
    if request.config is not None and not is_shipped_config_name(request.config):
        raise GpuShareError(
            "config %r is not one of the MIG configs NVIDIA ships%s (all-disabled, all-enabled, all-balanced, "
            "all-<profile> with + written '.', e.g. all-1g.10gb.me); give a custom layout with layout and config_name "
            "instead" % (request.config, shipped_config_hint(request.config))
        )
    if request.layout is not None:
        if not request.config_name:
            raise GpuShareError(
                "A custom layout needs config_name: the name it gets in the mig-parted ConfigMap and the nodes' %s "
                "label." % LABEL_MIG_CONFIG
            )
        if is_shipped_config_name(request.config_name):
            raise GpuShareError(
                "config_name %r is a shipped MIG config name: a custom layout under it would change what it means on "
                "every "
                "GPU model; choose another name" % request.config_name
            )
    if not request.node_names and not request.for_new_nodes:
        raise GpuShareError("Say which nodes to reconfigure: nodes.names or nodes.selector.")


def _node_layout(request, state, gpu_count, configs, warnings):
    """Validate the request on one node; returns the layout it gets there (raises GpuShareError naming the node).

    A shipped name is checked with the content mig-manager will read (the active ConfigMap's, else
    NVIDIA's shipped one), its device filters applied to the node's GPU."""
    context = dict(device_id=state.pci_device_id, warnings=warnings, product=state.product, memory_mib=state.memory_mib)
    if request.layout is None:
        current = configs.get(request.config)
        return resolve_shipped_config(
            request.config,
            state.gpu_model,
            gpu_count,
            state.name,
            layout=current if isinstance(current, list) else None,
            **context,
        )
    return validate_mig_layout(request.layout, state.gpu_model, gpu_count, state.name, **context)


def _validate_node(request, state, configs, strategy, warnings):
    """The node's layout and count, or raise GpuShareError with everything wrong about this node."""
    if not state.is_gpu_node:
        raise GpuShareError("node %s has no NVIDIA GPU" % state.name)
    # On a re-plan after a conflict, the target config pending or failed on a node the first plan checked is this
    # task's own label, written before the conflict (MigRequest.checked_nodes): the wait reports its outcome.
    # So is a change to the very config asked for that is still under way (an earlier run that stopped waiting, the
    # sharing role's next round): nothing to write, and its wait is what the caller wants. A failed one is refused.
    own_change = state.mig_config == request.target_config and (
        state.name in request.checked_nodes or state.mig_config_state in BUSY_MIG_STATES
    )
    if state.mig_config_state == MIG_STATE_REBOOTING and not own_change:
        raise GpuShareError(
            "node %s: mig-manager is rebooting it for its previous MIG change to %s (WITH_REBOOT=true); wait for the "
            "node to come back and the change to finish" % (state.name, state.mig_config)
        )
    if state.mig_config_state in BUSY_MIG_STATES and not own_change:
        raise GpuShareError(
            "node %s: its previous MIG change to %s is still %s; wait for it to finish (or see why it does not: %s)"
            % (state.name, state.mig_config, state.mig_config_state, STUCK_HINT)
        )
    if state.mig_config == request.target_config and state.mig_config_state == MIG_STATE_FAILED and not own_change:
        raise GpuShareError(
            "node %s: its MIG change to %s failed, and mig-manager does not retry an unchanged label; remove the "
            "cause (GPU "
            "pods, see the node's MigConfigFailed events), then apply another config first (e.g. all-disabled)"
            % (state.name, state.mig_config)
        )
    gpu_count = physical_gpu_count(state, configs)
    if gpu_count is None:
        raise GpuShareError(
            "node %s: cannot tell its number of physical GPUs (%s=%s with strategy single names %d MIG devices of a "
            "layout "
            "that is not uniform); switch it to all-disabled first"
            % (state.name, LABEL_MIG_CONFIG, state.mig_config, state.count)
        )
    layout = _node_layout(request, state, gpu_count, configs, warnings)
    if strategy == MIG_STRATEGY_SINGLE:
        problem = single_strategy_problem(layout, gpu_count)
        if problem:
            raise GpuShareError("node %s: %s" % (state.name, problem))
    return layout, gpu_count


def plan_mig(request, policy, active_config_map, target_config_map, nodes, platform_namespace):
    """Plan ``request`` against the ClusterPolicy, the mig-parted ConfigMap mig-manager reads now
    (``active_config_map``, None when missing), the ConfigMap a custom layout goes into
    (``target_config_map``, None when missing; ignored for shipped configs) and every node dict.

    Raises GpuShareError listing every node that cannot take the change, before anything is written.
    """
    validate_request(request)
    warnings = []
    if request.layout is not None:
        # Canonical profile keys before anything else: they are what gets written (with a warning).
        request.layout = normalize_layout(request.layout, "layout", warnings)
        # The operator's own default-mig-parted-config is refused here too: the ClusterPolicy is its controller.
        refuse_foreign_config_map(target_config_map, not_a_config_file, MIG_PARTED_CONFIG_FILES)
    _refuse_platform_without_mig(request, nodes)
    fleet = Fleet(nodes)
    fleet.require(request.node_names)
    states = fleet.states

    current_strategy = mig_strategy_of(policy)
    strategy = request.strategy or current_strategy
    active_name = mig_manager_config_map(policy)
    active_configs = mig_configs_of(active_config_map)
    plan = MigPlan(request.config_map if request.layout is not None else active_name, strategy)

    errors = []
    counts = _plan_layouts(plan, request, states, active_configs, strategy, warnings, errors)
    if request.layout is None and plan.layouts:
        errors += _active_config_problems(request, active_config_map, active_configs, active_name, platform_namespace)
    policy_patch = {}
    records = {}
    if request.layout is not None:
        _plan_config_map(
            plan, request, policy, active_config_map, target_config_map, states, errors, policy_patch, records
        )
    for warning in warnings:
        if warning not in plan.warnings:
            plan.warnings.append(warning)
    if strategy == MIG_STRATEGY_MIXED and current_strategy != MIG_STRATEGY_MIXED:
        errors += _mixed_strategy_problems(states)
    if errors:
        raise GpuShareError("Cannot apply MIG config %s: %s." % (request.target_config, "; ".join(errors)))

    if strategy != current_strategy:
        _plan_strategy(plan, policy, strategy, states, policy_patch, records)
    if mig_manager_reboots(policy):
        _warn_reboots(plan, states)
    if policy_patch:
        plan.policy_patch = recorded(policy, policy_patch, "spec", records)
    _record_policy(plan, request, policy, current_strategy, strategy)
    _plan_nodes(plan, request.target_config, fleet, counts, strategy)
    return plan


def _refuse_platform_without_mig(request, nodes):
    """A platform that offers no MIG takes nothing but all-disabled."""
    platform = platform_without_mig(nodes)
    if platform and request.target_config != ALL_DISABLED:
        raise GpuShareError(
            "%s does not offer MIG (its GPUs are used whole, time-sliced or with MPS): use gpu_timeslicing or gpu_mps."
            % platform
        )


def _plan_layouts(plan, request, states, active_configs, strategy, warnings, errors):
    """Each target node's layout into ``plan.layouts`` (all-disabled skips a GPU node without MIG), each node's
    problems into ``errors``; returns the physical GPU count by node."""
    counts = {}
    for name in request.node_names:
        state = states[name]
        if request.config == ALL_DISABLED and state.is_gpu_node and not state.mig_capable and not state.mig_enabled:
            plan.skipped.append(name)
            continue
        try:
            plan.layouts[name], counts[name] = _validate_node(request, state, active_configs, strategy, warnings)
        except GpuShareError as exc:
            errors.append(exc.msg)
    return counts


def _active_config_problems(request, active_config_map, active_configs, active_name, platform_namespace):
    """Why mig-manager could not find the shipped config asked for in the ConfigMap it reads (empty when it can)."""
    if active_config_map is None:
        return [
            "the ClusterPolicy names MIG ConfigMap %s/%s in spec.migManager.config.name, which does not exist"
            % (platform_namespace, active_name)
        ]
    if request.config not in active_configs:
        return [
            "MIG ConfigMap %s/%s (spec.migManager.config.name) has no config %s, so mig-manager would fail; add "
            "it there or give "
            "the layout with layout and config_name" % (platform_namespace, active_name, request.config)
        ]
    return []


def _mixed_strategy_problems(states):
    """Switching to the mixed strategy: the strategy is cluster-wide and the device plugin rejects MPS with
    migStrategy mixed, so every node using MPS is a problem."""
    mps_nodes = sorted(name for name, state in states.items() if state.sharing_strategy == "mps")
    if mps_nodes:
        return [
            "the mixed strategy applies to every node and MPS cannot run with it, but node(s) %s use MPS: "
            "remove MPS first (gpu_mps state=absent, or gpu_reset)" % ", ".join(mps_nodes)
        ]
    return []


def _plan_strategy(plan, policy, strategy, states, policy_patch, records):
    """The policy's new MIG strategy, its restore record, and a warning naming the other MIG nodes it reaches."""
    policy_patch.setdefault("spec", {})["mig"] = {"strategy": strategy}
    records[POLICY_STRATEGY_FIELD] = ((policy.get("spec") or {}).get("mig") or {}).get("strategy")
    others = sorted(name for name, state in states.items() if state.mig_enabled and name not in plan.layouts)
    if others:
        plan.warnings.append(
            "The MIG strategy is cluster-wide: changing it to %s re-advertises the MIG devices of node(s) %s too."
            % (strategy, ", ".join(others))
        )


def _warn_reboots(plan, states):
    """With WITH_REBOOT=true, warn of the nodes whose MIG mode changes: mig-manager may reboot them."""
    switching = sorted(
        name
        for name, layout in plan.layouts.items()
        if states[name].mig_enabled != any(entry.get("mig-enabled") for entry in layout)
    )
    if switching:
        plan.warnings.append(
            "mig-manager runs with WITH_REBOOT=true, and node(s) %s change MIG mode: a node that cannot reset its "
            "GPUs in place is rebooted (NotReady meanwhile, its pods restarted), which wait_timeout must allow for."
            % ", ".join(switching)
        )


def _record_policy(plan, request, policy, current_strategy, strategy):
    """The policy's MIG strategy and mig-manager config before and after, for the diff."""
    plan.before["cluster_policy"] = {
        POLICY_STRATEGY_FIELD: current_strategy,
        POLICY_MIG_MANAGER_FIELD: mig_manager_config_of(policy),
    }
    after_mig_manager = mig_manager_config_of(policy)
    if request.layout is not None:
        after_mig_manager["name"] = request.config_map
    plan.after["cluster_policy"] = {POLICY_STRATEGY_FIELD: strategy, POLICY_MIG_MANAGER_FIELD: after_mig_manager}


def _plan_config_map(
    plan, request, policy, active_config_map, target_config_map, states, errors, policy_patch, records
):
    """Merge the custom layout into its ConfigMap and point the policy at that ConfigMap."""
    existing_text = ((target_config_map or {}).get("data") or {}).get(MIG_PARTED_KEY)
    # A new ConfigMap starts from the one mig-manager reads now, so the shipped names keep working.
    base_text = existing_text
    if not (existing_text and existing_text.strip()) and request.config_map != mig_manager_config_map(policy):
        base_text = ((active_config_map or {}).get("data") or {}).get(MIG_PARTED_KEY)
    existing_layout = mig_configs_of(target_config_map).get(request.config_name)
    if existing_layout is not None and existing_layout != request.layout:
        users = sorted(name for name, state in states.items() if state.mig_config == request.config_name)
        if users:
            errors.append(
                "config %s already exists in ConfigMap %s with another layout and node(s) %s use it; mig-manager "
                "does not reload a "
                "config edited under the same name (gpu-operator #891): give the new layout a new config_name"
                % (request.config_name, request.config_map, ", ".join(users))
            )
            return
    try:
        text, changed = build_mig_parted_config(base_text, request.config_name, request.layout)
    except GpuShareError as exc:
        errors.append("ConfigMap %s: %s" % (request.config_map, exc.msg))
        return
    if target_config_map is None:
        plan.config_map_create = {MIG_PARTED_KEY: text}
    elif changed or existing_text != text:
        # config.yaml is rewritten whole from the text read: always conditional on that read, or a concurrent run's
        # layout written in between would be lost.
        plan.config_map_patch = on_version_read(
            target_config_map,
            recorded(target_config_map, {"data": {MIG_PARTED_KEY: text}}, "data", {MIG_PARTED_KEY: existing_text}),
        )
    plan.before["config_map"] = {request.config_name: existing_layout}
    plan.after["config_map"] = {request.config_name: request.layout}
    if mig_manager_config_map(policy) != request.config_map:
        policy_patch.setdefault("spec", {})["migManager"] = {"config": {"name": request.config_map}}
        records[POLICY_MIG_MANAGER_FIELD] = ((policy.get("spec") or {}).get("migManager") or {}).get("config")


def _plan_nodes(plan, config_name, fleet, counts, strategy):
    """Label the nodes whose config changes, and say what every target must show afterwards."""
    plan.before["nodes"] = {}
    plan.after["nodes"] = {}
    for name in sorted(plan.layouts):
        # The state label is cleared with the change so that the old change's success (or failure) is
        # never mistaken for this one's; mig-manager sets it again as it starts.
        plan.relabel(fleet, name, LABEL_MIG_CONFIG, config_name, also={LABEL_MIG_CONFIG_STATE: None})
        plan.expectations[name] = MigExpectation(
            config_name, expected_devices(plan.layouts[name], counts[name]), strategy
        )


def expected_devices(layout, gpu_count):
    """profile -> MIG devices a node advertises with this layout; None when nothing is comparable
    (MIG on without instances, as all-enabled leaves it)."""
    devices = mig_devices_of(layout, gpu_count)
    if not devices and any(entry.get("mig-enabled") for entry in layout):
        return None
    return devices
