# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_mig_config (and gpu_reset's return to all-disabled): read, plan, make sure
no GPU pod is in the way (or drain), write in a safe order, wait for mig-manager, report per node.

mig-manager never evicts workloads: a GPU pod still running makes its change fail ("In use by another
client", gpu-operator #1845). So the change is refused while such pods run, unless ``drain`` (cordon,
evict through the Eviction API so PodDisruptionBudgets are respected, wait until they are gone,
change, uncordon after success) or, for gpu_reset only, ``force``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpushare.k8s.plugins.module_utils.device_plugin_sharing import NODES_SPEC, resolve_node_names, write_plan_objects
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.inventory import describe_pods_by_node, gpu_pods_on, pod_names
from ansible_collections.gpushare.k8s.plugins.module_utils.mig_planning import (
    CUSTOM_MIG_CONFIG_MAP,
    MIG_STRATEGIES,
    MigExpectation,
    MigRequest,
    advertised_mig_devices,
    mig_manager_config_map,
    mig_strategy_of,
    plan_mig,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.module import OPERATOR_ARG_SPEC, wait_arg_spec
from ansible_collections.gpushare.k8s.plugins.module_utils.node_state import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.platform import detect_platform
from ansible_collections.gpushare.k8s.plugins.module_utils.wait import Failed, wait_for_nodes, wait_for_pods_gone

MIG_CONFIG_FAILED = "MigConfigFailed"
# mig-manager may record its Event just after setting the state label.
EVENT_GRACE_SECONDS = 5
EVENT_POLL_SECONDS = 0.5
# Kubernetes serves policy/v1 Evictions from 1.22 on; older servers (1.20, 1.21) only policy/v1beta1.
EVICTION_API_VERSIONS = ("policy/v1", "policy/v1beta1")
NOT_SERVED = (400, 404, 415)
TOO_MANY_REQUESTS = 429
NOT_FOUND = 404

MIG_ARG_SPEC = dict(
    strategy=dict(type="str", choices=list(MIG_STRATEGIES)),
    config=dict(type="str"),
    layout=dict(type="list", elements="dict"),
    config_name=dict(type="str"),
    config_map=dict(type="str", default=CUSTOM_MIG_CONFIG_MAP),
    nodes=dict(NODES_SPEC, required=True),
    drain=dict(type="bool", default=False),
    **dict(OPERATOR_ARG_SPEC, **wait_arg_spec(600))
)
MIG_MODULE_KWARGS = dict(
    mutually_exclusive=[("config", "layout")],
    required_one_of=[("config", "layout")],
    required_together=[("layout", "config_name")],
)


def mig_summary(node):
    """What a node shows about MIG: its config and state, and the MIG devices and GPU resources it advertises."""
    state = NodeGpuState.from_node(node)
    return dict(
        mig_config=state.mig_config,
        mig_config_state=state.mig_config_state,
        mig_strategy=state.mig_strategy,
        product=state.product,
        mig_devices=advertised_mig_devices(state),
        allocatable=state.allocatable,
        unschedulable=state.unschedulable,
    )


def failure_reason(kube, node_name, config_name):
    """The message of the node's latest MigConfigFailed Event about ``config_name``, which is where the
    cluster says why. The Event may be recorded a moment after the state label: looked for a few seconds."""
    deadline = time.monotonic() + EVENT_GRACE_SECONDS
    while True:
        events = [event for event in kube.list_events(kind="Node", name=node_name) if event.get("reason") == MIG_CONFIG_FAILED]
        about = [event for event in events if config_name in (event.get("message") or "")]
        if about or time.monotonic() >= deadline:
            break
        time.sleep(EVENT_POLL_SECONDS)
    if not (about or events):
        return "mig-manager set nvidia.com/mig.config.state=failed (no %s event: see the nvidia-mig-manager pod's log)" % MIG_CONFIG_FAILED
    latest = max(about or events, key=lambda event: event.get("lastTimestamp") or event.get("eventTime") or event["metadata"].get("creationTimestamp") or "")
    return latest.get("message") or latest.get("reason")


def wait_for_mig_configs(kube, configs, timeout, strategy=None, devices=None):
    """Wait until every node of ``configs`` (node name -> mig.config value) shows that config applied.

    ``devices`` (node name -> profile -> count) adds the MIG devices each node must advertise. A node
    mig-manager failed is reported at once with the reason from its MigConfigFailed Event; a node
    still pending (operands paused) at the timeout is reported with the gpu-operator #2833 hint.
    """
    expectations = dict((name, MigExpectation(config, (devices or {}).get(name), strategy)) for name, config in configs.items() if config)

    def checker(expectation):
        def check(node):
            if expectation.failed(node):
                return Failed(failure_reason(kube, node["metadata"]["name"], expectation.config_name))
            return expectation.problem(node)
        return check

    what = "MIG config %s on %d node(s)" % (", ".join(sorted(set(e.config_name for e in expectations.values()))), len(expectations))
    return wait_for_nodes(kube, dict((name, checker(expectation)) for name, expectation in expectations.items()), timeout, what)


def evict(kube, namespace, name):
    """Evict one pod through the Eviction API (policy/v1, else the policy/v1beta1 older servers serve)."""
    for version in EVICTION_API_VERSIONS:
        try:
            kube.evict_pod(namespace=namespace, name=name, policy_api_version=version)
            return
        except GpuShareError as exc:
            if exc.status == TOO_MANY_REQUESTS:
                raise GpuShareError("Pod %s/%s cannot be evicted: a PodDisruptionBudget allows no disruption now (%s). Scale its workload up, "
                                    "relax the budget or stop the pod yourself, then run again." % (namespace, name, exc.msg),
                                    status=exc.status, reason=exc.reason)
            if exc.status not in NOT_SERVED:
                raise
            if exc.status == NOT_FOUND and version == EVICTION_API_VERSIONS[-1]:
                return  # the pod is already gone


def _set_unschedulable(kube, names, unschedulable):
    for name in names:
        kube.patch_node(name=name, patch={"spec": {"unschedulable": True if unschedulable else None}})


def drain_nodes(kube, names, timeout):
    """Cordon the schedulable nodes of ``names``, evict their GPU pods, wait until they are gone.

    Returns (cordoned node names, evicted pods by node). On failure the nodes cordoned here are
    uncordoned again (nothing else was changed yet) and the error says which pods were evicted.
    """
    nodes = dict((node["metadata"]["name"], node) for node in kube.list_nodes()[0] if node["metadata"]["name"] in names)
    cordoned = sorted(name for name in names if not (nodes[name].get("spec") or {}).get("unschedulable"))
    _set_unschedulable(kube, cordoned, True)
    evicted = {}
    try:
        # Listed after cordoning, so no GPU pod scheduled in between is missed.
        for name, pods in sorted(gpu_pods_on(kube.list_pods(), names).items()):
            for pod in pods:
                evict(kube, pod["namespace"], pod["name"])
                evicted.setdefault(name, []).append(pod)
        for name, pods in sorted(evicted.items()):
            wait_for_pods_gone(kube, name, pod_names(pods), timeout,
                               "the evicted GPU pods of node %s to be gone" % name)
    except GpuShareError as exc:
        _set_unschedulable(kube, cordoned, False)
        done = " Already evicted: %s." % describe_pods_by_node(evicted) if evicted else ""
        raise GpuShareError("Draining for the MIG change failed, nothing was changed and node(s) %s are schedulable again: %s%s"
                            % (", ".join(sorted(names)), exc.msg, done), status=exc.status, reason=exc.reason)
    return cordoned, evicted


def change_mig_config(module, kube, platform, node_names, config_name, drain=False, force=False, wait=True, timeout=600):
    """Put a shipped MIG config (gpu_reset: ``all-disabled``) on ``node_names`` with gpu_mig_config's
    validation, GPU-pod safety and drain rules; ``force`` goes ahead under running GPU pods (mig-manager
    then fails the change on those nodes, which is reported). Returns the result dict (see run_mig_change)."""
    return run_mig_change(module, kube, platform, MigRequest(node_names, config=config_name), drain, force, wait, timeout)


def run_mig_config(module):
    """gpu_mig_config."""
    params = module.params
    kube = module.kube
    platform = detect_platform(kube, params["cluster_policy"], params["namespace"])
    request = MigRequest(resolve_node_names(kube, params["nodes"]) or [], config=params["config"], layout=params["layout"],
                         config_name=params["config_name"], config_map=params["config_map"], strategy=params["strategy"])
    return run_mig_change(module, kube, platform, request, params["drain"], False, params["wait"], params["wait_timeout"])


def run_mig_change(module, kube, platform, request, drain, force, wait, timeout):
    """Validate, check GPU pods, (drain,) write, wait; returns the module result."""
    nodes = kube.list_nodes()[0]
    active_name = mig_manager_config_map(platform.policy)
    active = kube.get_config_map(namespace=platform.namespace, name=active_name)
    target = None
    if request.layout is not None:
        target = active if request.config_map == active_name else kube.get_config_map(namespace=platform.namespace, name=request.config_map)
    plan = plan_mig(request, platform.policy, active, target, nodes, platform.namespace)
    for warning in plan.warnings:
        module.ansible.warn(warning)

    changing = sorted(plan.node_patches)
    blocking = gpu_pods_on(kube.list_pods(), changing) if changing else {}
    if blocking and not (drain or force):
        raise GpuShareError("GPU pods run on node(s) to reconfigure, and mig-manager would fail the change under them (gpu-operator #1845): %s. "
                            "Stop them, or set drain=true to cordon the nodes, evict them and uncordon after the change." % describe_pods_by_node(blocking))

    node_by_name = dict((node["metadata"]["name"], node) for node in nodes)
    strategy = request.strategy or mig_strategy_of(platform.policy)
    result = dict(
        changed=plan.changed,
        cluster_policy=platform.policy_name,
        namespace=platform.namespace,
        config=request.target_config,
        config_map=plan.config_map,
        strategy=strategy,
        skipped_nodes=plan.skipped,
        evicted=dict((name, pod_names(node_pods)) for name, node_pods in blocking.items()) if drain else {},
        diff=dict(before=plan.before, after=plan.after),
        nodes=dict((name, dict(before=mig_summary(node_by_name[name]))) for name in plan.expectations),
    )
    if module.check_mode:
        return result

    cordoned = []
    if drain and changing:
        cordoned, evicted = drain_nodes(kube, changing, timeout)
        result["evicted"] = dict((name, pod_names(node_pods)) for name, node_pods in evicted.items())
        result["cordoned"] = cordoned
    write_plan_objects(kube, platform, plan)
    if not wait:
        if cordoned:
            module.ansible.warn("Node(s) %s stay cordoned: without wait the module cannot tell when the MIG change is done; "
                                "uncordon them (kubectl uncordon) once nvidia.com/mig.config.state=success." % ", ".join(cordoned))
        return result
    devices = dict((name, expectation.devices) for name, expectation in plan.expectations.items())
    configs = dict((name, expectation.config_name) for name, expectation in plan.expectations.items())
    try:
        final = wait_for_mig_configs(kube, configs, timeout, strategy, devices)
    except GpuShareError as exc:
        unfinished = set((exc.details or {}).get("failed") or {}) | set((exc.details or {}).get("unmet") or {})
        _set_unschedulable(kube, [name for name in cordoned if name not in unfinished], False)
        kept = sorted(name for name in cordoned if name in unfinished)
        note = (" Node(s) %s stay cordoned (spec.unschedulable=true) because their MIG change did not complete; uncordon them "
                "(kubectl uncordon) once it did." % ", ".join(kept)) if kept else ""
        raise GpuShareError(exc.msg + note, status=exc.status, reason=exc.reason, details=exc.details)
    _set_unschedulable(kube, cordoned, False)
    for name, node in final.items():
        after = mig_summary(node)
        after["unschedulable"] = after["unschedulable"] and name not in cordoned  # uncordoned just now
        result["nodes"][name]["after"] = after
    return result
