# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_reset: back to unshared (device-plugin profiles and MIG), or back to exactly what
was there before the collection changed anything (``restore``).

Everything is read and planned, the MIG part included, before check mode returns, so check mode refuses
what the real run refuses. GPU-pod safety covers every node whose GPUs change, whatever the change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_node_expectations
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    DEFAULT_DEVICE_PLUGIN_CONFIG_MAP,
    device_plugin_config_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import ALL_DISABLED
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigRequest, plan_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.reset import mig_enabled_nodes, plan_reset
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore import plan_restore
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import read_record
from ansible_collections.gpushare.k8s.plugins.module_utils.run.drain import GpuPodGuard
from ansible_collections.gpushare.k8s.plugins.module_utils.run.mig_rollout import (
    read_mig_config_maps,
    wait_for_mig_configs,
    wait_for_mig_plan,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import new_result, record_after
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned, plan_access, write_replanning


def run_gpu_reset(module):
    """gpu_reset."""
    params = module.params
    kube = module.kube
    operator = find_operator(kube, params["cluster_policy"], params["namespace"])
    if params["restore"]:
        return _restore(module, kube, operator)

    node_names = resolve_node_names(kube, params["nodes"])

    def read_and_plan(operator=None):
        operator = operator or find_operator(kube, params["cluster_policy"], params["namespace"])
        return _read_and_plan_reset(kube, params, operator, node_names)

    planned = read_and_plan(operator)
    plan = planned.plan
    nodes = planned.listed.items
    fleet = Fleet(nodes)
    mig_nodes = mig_enabled_nodes(nodes, sorted(plan.expectations)) if params["mig"] else []
    mig_planned = (
        _read_and_plan_mig(kube, operator, MigRequest(mig_nodes, config=ALL_DISABLED), nodes) if mig_nodes else None
    )

    changing = sorted(set(plan.changing_nodes(fleet)) | set(mig_planned.plan.node_patches if mig_planned else ()))
    guard = GpuPodGuard(kube, fleet, changing, params["drain"], params["force"], change="reset")
    result = new_result(
        operator,
        plan,
        fleet,
        set(plan.expectations) | set(mig_nodes),
        config_map=plan.config_map,
        restarted=plan.restart,
        mig_disabled=mig_nodes,
        **guard.fields(),
    )
    if mig_planned:
        _add_mig_part(module, result, mig_planned.plan)
    if module.check_mode:
        return result

    def change():
        final = _write_mig_part(kube, params, mig_planned, mig_nodes) if mig_planned else {}
        written = write_replanning(kube, planned, read_and_plan)
        if params["wait"] and written.expectations:
            # After a MIG change the planning LIST is stale: a fresh one, so the result shows both parts.
            final.update(_wait_unshared(kube, params, written, None if mig_planned else written.planned.listed))
        return final

    accesses = plan_access(kube, operator, plan) + (
        plan_access(kube, operator, mig_planned.plan) if mig_planned else []
    )
    final = guard.run(module, change, params["wait_timeout"], "the reset", params["wait"], accesses)
    result.update(guard.fields())
    record_after(result, fleet, final)
    return result


def _wait_unshared(kube, params, written, listed):
    """Wait for the nodes of the device-plugin part, as ``written``, to show they are unshared."""
    return wait_for_node_expectations(
        kube,
        written.expectations,
        params["wait_timeout"],
        "%d node(s) to be unshared" % len(written.expectations),
        listed=listed,
    )


def _read_and_plan_reset(kube, params, operator, node_names):
    """The nodes and the device plugin's ConfigMap read, and the reset of its profiles and labels planned."""
    config_map_name = device_plugin_config_of(operator.policy)[0] or DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    listed = kube.list_nodes()
    plan = plan_reset(
        operator.namespace,
        config_map_name,
        operator.policy,
        kube.get_config_map(namespace=operator.namespace, name=config_map_name),
        listed.items,
        node_names=node_names,
        config_key=params["config_key"],
        remove_profiles=params["remove_profiles"],
        restart=params["restart_device_plugin"],
    )
    return Planned(operator, plan, listed=listed)


def _read_and_plan_mig(kube, operator, request, nodes):
    """The MIG part of a reset: ``request`` (all-disabled) planned against ``nodes`` and the mig-parted ConfigMaps."""
    config_maps = read_mig_config_maps(kube, operator, request)
    return Planned(
        operator, plan_mig(request, operator.policy, config_maps.active, config_maps.target, nodes, operator.namespace)
    )


def _add_mig_part(module, result, mig_plan):
    """The MIG part's change, diff and warnings in the reset's result."""
    result["changed"] = result["changed"] or mig_plan.changed
    result["diff"]["before"]["mig"] = mig_plan.before
    result["diff"]["after"]["mig"] = mig_plan.after
    for warning in mig_plan.warnings:
        module.ansible.warn(warning)


def _write_mig_part(kube, params, mig_planned, mig_nodes):
    """Write the MIG part of a reset (re-planned on a conflict) and, when asked, wait for mig-manager; returns the
    final nodes waited for."""

    def read_and_plan_mig():
        # The nodes the first plan checked keep that check: a re-plan finds this task's own labels there.
        current = find_operator(kube, params["cluster_policy"], params["namespace"])
        request = MigRequest(mig_nodes, config=ALL_DISABLED, checked_nodes=mig_planned.plan.layouts)
        return _read_and_plan_mig(kube, current, request, kube.list_nodes().items)

    written = write_replanning(kube, mig_planned, read_and_plan_mig)
    return wait_for_mig_plan(kube, written, params["wait_timeout"]) if params["wait"] else {}


def _restore(module, kube, operator):
    """Put back what the collection's restore records hold, for the policy, its ConfigMaps and nodes."""
    params = module.params

    def read_and_plan(operator=None):
        operator = operator or find_operator(kube, params["cluster_policy"], params["namespace"])
        listed = kube.list_nodes()
        plan = plan_restore(
            operator.policy,
            kube.list_config_maps(namespace=operator.namespace),
            listed.items,
            [daemon_set for daemon_set in kube.list_all_daemon_sets() if read_record(daemon_set)],
        )
        return Planned(operator, plan, listed=listed)

    planned = read_and_plan(operator)
    plan = planned.plan
    fleet = Fleet(planned.listed.items)
    changing = sorted(set(plan.changing_nodes(fleet)) | set(plan.mig_changes))
    guard = GpuPodGuard(kube, fleet, changing, params["drain"], params["force"], change="restore")
    result = _restore_result(operator, plan, guard)
    if not plan.changed:
        # Every record is removed by the restore that applies it, so nothing planned means nothing recorded. Not a
        # failure: a second restore finds nothing, and must stay an idempotent ok.
        module.ansible.warn(
            "Nothing to restore: no node, ConfigMap or ClusterPolicy carries a gpushare.k8s/restore record (this "
            "collection changed nothing here yet, or it was restored already)."
        )
    if module.check_mode or not plan.changed:
        return result

    def change():
        mig_changes = dict(plan.mig_changes)
        written = write_replanning(kube, planned, read_and_plan)
        mig_changes.update(written.plan.mig_changes)
        if params["wait"]:
            if mig_changes:
                wait_for_mig_configs(kube, mig_changes, params["wait_timeout"])
            wait_for_node_expectations(
                kube,
                written.expectations,
                params["wait_timeout"],
                "%d node(s) to show their restored device-plugin profile" % len(written.expectations),
                listed=written.planned.listed,
            )

    guard.run(module, change, params["wait_timeout"], "the restore", params["wait"], plan_access(kube, operator, plan))
    result.update(guard.fields())
    return result


def _restore_result(operator, plan, guard):
    """What a restore returns before it writes: what it restores, the diff, the drain."""
    return dict(
        changed=plan.changed,
        cluster_policy=operator.policy_name,
        namespace=operator.namespace,
        restored=dict(
            cluster_policy=bool(plan.policy_patch),
            config_maps=sorted(set(plan.config_map_patches) | set(plan.config_map_deletes)),
            nodes=sorted(plan.node_patches),
            daemon_sets=sorted("%s/%s" % key for key in plan.daemon_set_patches),
        ),
        diff=dict(before=plan.before, after=plan.after),
        **guard.fields(),
    )
