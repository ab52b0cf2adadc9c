# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_reset: back to unshared, or back to exactly what was there before."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.device_plugin_sharing import (
    apply_plan,
    node_summary,
    resolve_node_names,
    restart_daemonset,
    wait_for_plan,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.inventory import describe_pods_by_node, gpu_pods_on
from ansible_collections.gpushare.k8s.plugins.module_utils.node_state import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.planning import plan_reset, plan_restore
from ansible_collections.gpushare.k8s.plugins.module_utils.platform import (
    DEFAULT_DEVICE_PLUGIN_CONFIG_MAP,
    DEVICE_PLUGIN_DAEMONSET,
    detect_platform,
    device_plugin_config_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.restore_record import RESTORE_ANNOTATION

ALL_DISABLED = "all-disabled"


def check_gpu_pods(pods, node_names, drain, force):
    """Refuse while GPU pods run on the nodes, unless the user chose to drain or to force."""
    running = gpu_pods_on(pods, node_names)
    if running and not (drain or force):
        raise GpuShareError("GPU pods are running on the nodes to reset (%s). Stop them, or set drain=true to evict them "
                            "(cordon, evict, uncordon after), or force=true to reset under them." % describe_pods_by_node(running))
    return running


def mig_enabled_nodes(nodes, node_names):
    """Nodes whose MIG configuration is anything but all-disabled."""
    names = set(node_names)
    return sorted(
        node["metadata"]["name"] for node in nodes
        if node["metadata"]["name"] in names and NodeGpuState.from_node(node).mig_config not in (None, ALL_DISABLED)
    )


def run_reset(module):
    params = module.params
    kube = module.kube
    platform = detect_platform(kube, params["cluster_policy"], params["namespace"])
    if params["restore"]:
        return run_restore(module, kube, platform)

    config_map_name = device_plugin_config_of(platform.policy)[0] or DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    node_names = resolve_node_names(kube, params["nodes"])
    nodes, nodes_version = kube.list_nodes()
    config_map = kube.get_config_map(namespace=platform.namespace, name=config_map_name)
    plan = plan_reset(platform.namespace, config_map_name, platform.policy, config_map, nodes, node_names=node_names,
                      config_key=params["config_key"], remove_profiles=params["remove_profiles"], restart=params["restart_device_plugin"])
    targets = sorted(plan.expectations)
    mig_nodes = mig_enabled_nodes(nodes, targets) if params["mig"] else []
    check_gpu_pods(kube.list_pods(), targets, params["drain"], params["force"])

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
        from ansible_collections.gpushare.k8s.plugins.module_utils.mig_config import change_mig_config

        change_mig_config(module, kube, platform, mig_nodes, ALL_DISABLED, drain=params["drain"], force=params["force"],
                          wait=params["wait"], timeout=params["wait_timeout"])
    apply_plan(kube, platform, plan)
    if params["wait"] and plan.expectations:
        final = wait_for_plan(kube, plan, params["wait_timeout"], "%d node(s) to be unshared" % len(plan.expectations),
                              listed=(nodes, nodes_version))
        for name, node in final.items():
            result["nodes"][name]["after"] = node_summary(node)
    return result


def run_restore(module, kube, platform):
    """Put back what the collection's restore records hold, for the policy, its ConfigMaps and nodes."""
    params = module.params
    nodes, nodes_version = kube.list_nodes()
    config_maps = [config_map for config_map in kube.list_config_maps(namespace=platform.namespace)
                   if RESTORE_ANNOTATION in ((config_map["metadata"].get("annotations") or {}))]
    plan = plan_restore(platform.policy, config_maps, nodes)
    check_gpu_pods(kube.list_pods(), plan.mig_changes, params["drain"], params["force"])
    result = dict(
        changed=plan.changed,
        cluster_policy=platform.policy_name,
        namespace=platform.namespace,
        restored=dict(cluster_policy=bool(plan.policy_patch), config_maps=sorted(plan.config_map_patches) + sorted(plan.config_maps_to_delete),
                      nodes=sorted(plan.node_patches)),
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
    restart_daemonset(kube, platform.namespace, DEVICE_PLUGIN_DAEMONSET)
    if params["wait"]:
        if plan.mig_changes:
            from ansible_collections.gpushare.k8s.plugins.module_utils.mig_config import wait_for_mig_configs

            wait_for_mig_configs(kube, plan.mig_changes, params["wait_timeout"])
        wait_for_plan(kube, plan, params["wait_timeout"], "%d node(s) to show their restored device-plugin profile" % len(plan.expectations),
                      listed=(nodes, nodes_version))
    return result
