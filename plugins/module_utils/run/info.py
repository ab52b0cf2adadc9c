# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_info: one LIST of policies, nodes and workload pods, and the planner's inventory of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import device_plugin_config_of
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import workload_pods_selector
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import build_inventory
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import list_selected_nodes


def run_gpu_info(module):
    """gpu_info: read-only."""
    kube = module.kube
    params = module.params
    policy = namespace = config_map = None
    findings = []
    policies = kube.list_cluster_policies()
    if policies or params["cluster_policy"]:
        try:
            operator = find_operator(kube, params["cluster_policy"], params["namespace"], policies=policies)
            policy, namespace = operator.policy, operator.namespace
        except GpuShareError as exc:
            if params["cluster_policy"] or params["namespace"]:
                raise  # the user named where the operator is, and it is not there: reporting on would mislead
            findings.append(dict(object="GPU Operator", message=exc.msg))
    if policy:
        config_map_name = device_plugin_config_of(policy)[0]
        if config_map_name:
            config_map = kube.get_config_map(namespace=namespace, name=config_map_name)
    nodes = list_selected_nodes(kube, params["node_selector"], "node_selector")
    pods = kube.list_pods(field_selector=workload_pods_selector(namespace))
    inventory = build_inventory(policy, config_map, nodes, pods)
    inventory["findings"] = findings + inventory["findings"]
    inventory.update(changed=False, namespace=namespace)
    return inventory
