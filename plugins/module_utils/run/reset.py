# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_reset: back to unshared, or back to exactly what was there before."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_node_expectations
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    DEFAULT_DEVICE_PLUGIN_CONFIG_MAP,
    DEVICE_PLUGIN_DAEMONSET,
    device_plugin_config_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import ALL_DISABLED
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import node_summary
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigRequest
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.reset import mig_enabled_nodes, plan_reset
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore import plan_restore
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import RESTORE_ANNOTATION
from ansible_collections.gpushare.k8s.plugins.module_utils.run.drain import refuse_while_gpu_pods_run
from ansible_collections.gpushare.k8s.plugins.module_utils.run.mig_rollout import apply_mig_change, wait_for_mig_configs
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import restart_daemon_set, write_plan


def run_reset(module):
    params = module.params
    kube = module.kube
    platform = find_operator(kube, params["cluster_policy"], params["namespace"])
    if params["restore"]:
        return run_restore(module, kube, platform)

    config_map_name = device_plugin_config_of(platform.policy)[0] or DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    node_names = resolve_node_names(kube, params["nodes"])
    nodes, nodes_version = kube.list_nodes()
    config_map = kube.get_config_map(namespace=platform.namespace, name=config_map_name)
    plan = plan_reset(
        platform.namespace,
        config_map_name,
        platform.policy,
        config_map,
        nodes,
        node_names=node_names,
        config_key=params["config_key"],
        remove_profiles=params["remove_profiles"],
        restart=params["restart_device_plugin"],
    )
    targets = sorted(plan.expectations)
    mig_nodes = mig_enabled_nodes(nodes, targets) if params["mig"] else []
    refuse_while_gpu_pods_run(kube.list_pods(), targets, params["drain"], params["force"])

    node_by_name = dict((node["metadata"]["name"], node) for node in nodes)
    result = dict(
        changed=plan.changed or bool(mig_nodes),
        cluster_policy=platform.policy_name,
        namespace=platform.namespace,
        config_map=config_map_name,
        restarted=plan.restart,
        mig_disabled=mig_nodes,
        diff=dict(before=plan.before, after=plan.after),
        nodes=dict((name, dict(before=node_summary(node_by_name[name]))) for name in targets),
    )
    if module.check_mode:
        return result
    if mig_nodes:
        apply_mig_change(
            module,
            kube,
            platform,
            MigRequest(mig_nodes, config=ALL_DISABLED),
            params["drain"],
            params["force"],
            params["wait"],
            params["wait_timeout"],
        )
    write_plan(kube, platform, plan)
    if params["wait"] and plan.expectations:
        final = wait_for_node_expectations(
            kube,
            plan,
            params["wait_timeout"],
            "%d node(s) to be unshared" % len(plan.expectations),
            listed=(nodes, nodes_version),
        )
        for name, node in final.items():
            result["nodes"][name]["after"] = node_summary(node)
    return result


def run_restore(module, kube, platform):
    """Put back what the collection's restore records hold, for the policy, its ConfigMaps and nodes."""
    params = module.params
    nodes, nodes_version = kube.list_nodes()
    config_maps = [
        config_map
        for config_map in kube.list_config_maps(namespace=platform.namespace)
        if RESTORE_ANNOTATION in ((config_map["metadata"].get("annotations") or {}))
    ]
    plan = plan_restore(platform.policy, config_maps, nodes)
    refuse_while_gpu_pods_run(kube.list_pods(), plan.mig_changes, params["drain"], params["force"])
    result = dict(
        changed=plan.changed,
        cluster_policy=platform.policy_name,
        namespace=platform.namespace,
        restored=dict(
            cluster_policy=bool(plan.policy_patch),
            config_maps=sorted(plan.config_map_patches) + sorted(plan.config_maps_to_delete),
            nodes=sorted(plan.node_patches),
        ),
        diff=dict(before=plan.before, after=plan.after),
    )
    if module.check_mode or not plan.changed:
        return result
    # The policy first, so that it stops naming a ConfigMap before that ConfigMap is deleted.
    if plan.policy_patch:
        kube.patch_cluster_policy(name=platform.policy_name, patch=plan.policy_patch)
    for name in sorted(plan.node_patches):
        kube.patch_node(name=name, patch=plan.node_patches[name])
    for name in sorted(plan.config_map_patches):
        kube.patch_config_map(namespace=platform.namespace, name=name, patch=plan.config_map_patches[name])
    for name in plan.config_maps_to_delete:
        kube.delete_config_map(namespace=platform.namespace, name=name)
    restart_daemon_set(kube, platform.namespace, DEVICE_PLUGIN_DAEMONSET)
    if params["wait"]:
        if plan.mig_changes:
            wait_for_mig_configs(kube, plan.mig_changes, params["wait_timeout"])
        wait_for_node_expectations(
            kube,
            plan,
            params["wait_timeout"],
            "%d node(s) to show their restored device-plugin profile" % len(plan.expectations),
            listed=(nodes, nodes_version),
        )
    return result
