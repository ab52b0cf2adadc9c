# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_mig_config (and gpu_reset's return to all-disabled): read, plan, make sure
no GPU pod is in the way (or drain), write in a safe order, wait for mig-manager, report per node.

mig-manager never evicts workloads: a GPU pod still running makes its change fail ("In use by another
client", gpu-operator #1845). So the change is refused while such pods run, unless ``drain`` (cordon,
evict through the Eviction API so PodDisruptionBudgets are respected, wait until they are gone,
change, uncordon after success) or, for gpu_reset only, ``force``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import Failed, wait_for_nodes
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    mig_manager_config_map,
    mig_strategy_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import (
    describe_pods_by_node,
    gpu_pods_on,
    pod_names,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import mig_summary
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigExpectation, plan_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.run.drain import drain_nodes, set_unschedulable
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import write_plan_objects

MIG_CONFIG_FAILED = "MigConfigFailed"

# mig-manager may record its Event just after setting the state label.
EVENT_GRACE_SECONDS = 5
EVENT_POLL_SECONDS = 0.5


def failure_reason(kube, node_name, config_name):
    """The message of the node's latest MigConfigFailed Event about ``config_name``, which is where the
    cluster says why. The Event may be recorded a moment after the state label: looked for a few seconds."""
    deadline = time.monotonic() + EVENT_GRACE_SECONDS
    while True:
        events = [
            event for event in kube.list_events(kind="Node", name=node_name) if event.get("reason") == MIG_CONFIG_FAILED
        ]
        about = [event for event in events if config_name in (event.get("message") or "")]
        if about or time.monotonic() >= deadline:
            break
        time.sleep(EVENT_POLL_SECONDS)
    if not (about or events):
        return (
            "mig-manager set nvidia.com/mig.config.state=failed (no %s event: see the nvidia-mig-manager pod's log)"
            % MIG_CONFIG_FAILED
        )
    latest = max(
        about or events,
        key=lambda event: event.get("lastTimestamp")
        or event.get("eventTime")
        or event["metadata"].get("creationTimestamp")
        or "",
    )
    return latest.get("message") or latest.get("reason")


def wait_for_mig_configs(kube, configs, timeout, strategy=None, devices=None):
    """Wait until every node of ``configs`` (node name -> mig.config value) shows that config applied.

    ``devices`` (node name -> profile -> count) adds the MIG devices each node must advertise. A node
    mig-manager failed is reported at once with the reason from its MigConfigFailed Event; a node
    still pending (operands paused) at the timeout is reported with the gpu-operator #2833 hint.
    """
    expectations = dict(
        (name, MigExpectation(config, (devices or {}).get(name), strategy))
        for name, config in configs.items()
        if config
    )

    def checker(expectation):
        def check(node):
            if expectation.failed(node):
                return Failed(failure_reason(kube, node["metadata"]["name"], expectation.config_name))
            return expectation.problem(node)

        return check

    what = "MIG config %s on %d node(s)" % (
        ", ".join(sorted(set(e.config_name for e in expectations.values()))),
        len(expectations),
    )
    return wait_for_nodes(
        kube, dict((name, checker(expectation)) for name, expectation in expectations.items()), timeout, what
    )


def apply_mig_change(module, kube, platform, request, drain, force, wait, timeout):
    """Validate, check GPU pods, (drain,) write, wait; returns the module result."""
    nodes = kube.list_nodes()[0]
    active_name = mig_manager_config_map(platform.policy)
    active = kube.get_config_map(namespace=platform.namespace, name=active_name)
    target = None
    if request.layout is not None:
        target = (
            active
            if request.config_map == active_name
            else kube.get_config_map(namespace=platform.namespace, name=request.config_map)
        )
    plan = plan_mig(request, platform.policy, active, target, nodes, platform.namespace)
    for warning in plan.warnings:
        module.ansible.warn(warning)

    changing = sorted(plan.node_patches)
    blocking = gpu_pods_on(kube.list_pods(), changing) if changing else {}
    if blocking and not (drain or force):
        raise GpuShareError(
            "GPU pods run on node(s) to reconfigure, and mig-manager would fail the change under them (gpu-operator #1845): %s. "
            "Stop them, or set drain=true to cordon the nodes, evict them and uncordon after the change."
            % describe_pods_by_node(blocking)
        )

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
            module.ansible.warn(
                "Node(s) %s stay cordoned: without wait the module cannot tell when the MIG change is done; "
                "uncordon them (kubectl uncordon) once nvidia.com/mig.config.state=success." % ", ".join(cordoned)
            )
        return result
    devices = dict((name, expectation.devices) for name, expectation in plan.expectations.items())
    configs = dict((name, expectation.config_name) for name, expectation in plan.expectations.items())
    try:
        final = wait_for_mig_configs(kube, configs, timeout, strategy, devices)
    except GpuShareError as exc:
        unfinished = set((exc.details or {}).get("failed") or {}) | set((exc.details or {}).get("unmet") or {})
        set_unschedulable(kube, [name for name in cordoned if name not in unfinished], False)
        kept = sorted(name for name in cordoned if name in unfinished)
        note = (
            (
                " Node(s) %s stay cordoned (spec.unschedulable=true) because their MIG change did not complete; uncordon them "
                "(kubectl uncordon) once it did." % ", ".join(kept)
            )
            if kept
            else ""
        )
        raise GpuShareError(exc.msg + note, status=exc.status, reason=exc.reason, details=exc.details)
    set_unschedulable(kube, cordoned, False)
    for name, node in final.items():
        after = mig_summary(node)
        after["unschedulable"] = after["unschedulable"] and name not in cordoned  # uncordoned just now
        result["nodes"][name]["after"] = after
    return result
