# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_timeslicing and gpu_mps: read, plan, write in a safe order, restart, wait."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import (
    daemon_set_rollout_problem,
    wait_for_daemon_sets,
    wait_for_node_expectations,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    DEFAULT_DEVICE_PLUGIN_CONFIG_MAP,
    MPS_CONTROL_DAEMONSET,
    device_plugin_config_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    METHOD_MPS,
    METHOD_TIME_SLICING,
    build_sharing_config,
    mps_client_limits,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import SharingRequest, plan_profile
from ansible_collections.gpushare.k8s.plugins.module_utils.run.drain import GpuPodGuard
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import new_result, record_after
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import write_plan


def run_timeslicing(module):
    """gpu_timeslicing."""
    return run_sharing_profile(module, METHOD_TIME_SLICING, "time-slicing", resources=module.params["resources"])


def run_mps(module):
    """gpu_mps."""
    return run_sharing_profile(module, METHOD_MPS, "mps")


def run_sharing_profile(module, method, default_key, resources=None):
    """Make profile ``config_key`` of ``method`` ('time-slicing' or 'mps') present or absent."""
    params = module.params
    kube = module.kube
    operator = find_operator(kube, params["cluster_policy"], params["namespace"])
    policy_config_map = device_plugin_config_of(operator.policy)[0]
    config_map_name = params["config_map"] or policy_config_map or DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    key = params["config_key"] or default_key
    node_names = resolve_node_names(kube, params["nodes"])

    config = None
    if params["state"] == "present":
        if node_names is None and not params["make_default"]:
            raise GpuShareError(
                "Say which nodes get the profile: nodes.names, nodes.selector, or make_default=true for every GPU node."
            )
        config = build_sharing_config(
            method,
            params["replicas"],
            resources=resources,
            rename_by_default=params["rename_by_default"],
            fail_requests_greater_than_one=params["fail_requests_greater_than_one"],
        )

    nodes, nodes_version = kube.list_nodes()
    config_map = kube.get_config_map(namespace=operator.namespace, name=config_map_name)
    request = SharingRequest(
        params["state"],
        key,
        config_map_name,
        config=config,
        node_names=node_names,
        make_default=params["make_default"],
        restart=params["restart_device_plugin"],
    )
    plan = plan_profile(request, operator.namespace, operator.policy, config_map, nodes)
    for warning in plan.warnings:
        module.ansible.warn(warning)
    fleet = Fleet(nodes)
    guard = GpuPodGuard(
        kube, fleet, plan.changing_nodes(fleet), params["drain"], params["force"], change="profile change"
    )
    result = new_result(
        operator,
        plan,
        fleet,
        plan.expectations,
        config_map=config_map_name,
        config_key=key,
        config=config,
        restarted=plan.restart,
        **guard.fields(),
    )
    if module.check_mode:
        return result

    def change():
        write_plan(kube, operator, plan)
        if not (params["wait"] and plan.expectations):
            return {}
        return wait_for_node_expectations(
            kube,
            plan,
            params["wait_timeout"],
            "profile %r (%s) on %d node(s)" % (key, method, len(plan.expectations)),
            listed=(nodes, nodes_version),
        )

    final = guard.run(module, change, params["wait_timeout"], "the profile change", params["wait"])
    result.update(guard.fields())
    if not final:
        return result
    record_after(result, final)
    if method == METHOD_MPS and config is not None:
        # mps.capable=true on the nodes is what schedules the control daemon; wait for it too.
        wait_for_daemon_sets(
            kube,
            operator.namespace,
            {MPS_CONTROL_DAEMONSET: daemon_set_rollout_problem},
            params["wait_timeout"],
            "the MPS control daemon to run on the MPS nodes",
        )
        for name, node in final.items():
            result["nodes"][name]["mps_limits"] = mps_client_limits(
                NodeGpuState.from_node(node).memory_mib, params["replicas"]
            )
    return result
