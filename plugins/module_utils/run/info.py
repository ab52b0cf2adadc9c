# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_info: one LIST of policies, nodes and workload pods, and the planner's inventory of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import device_plugin_config_of
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import workload_pods_selector
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.hami import (
    DEVICE_PLUGIN_POD_SELECTOR,
    registered_devices,
)
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
    hami_pods = pods
    if any(registered_devices((node.get("metadata") or {}).get("annotations")) is not None for node in nodes):
        # Where HAMi ever registered, its device plugin may run in the operator's namespace (kube-system on
        # Kapsule), which the list above leaves out: its pods, by their label.
        hami_pods = kube.list_pods(label_selector=DEVICE_PLUGIN_POD_SELECTOR)
    inventory = build_inventory(policy, config_map, nodes, pods, hami_pods)
    inventory["findings"] = findings + inventory["findings"]
    inventory.update(changed=False, namespace=namespace)
    return inventory
