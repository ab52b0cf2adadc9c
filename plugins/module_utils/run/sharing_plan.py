# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_sharing_plan: one LIST of nodes (a second of every node under the single MIG strategy or with
capacity, when a node_selector narrows the first: that strategy and the autoscaler's limits are the whole cluster's),
one of pods, the ClusterPolicy and the MIG ConfigMap mig-manager reads, with capacity one LIST of each of OpenShift's
MachineSets, Machines, ClusterAutoscalers and MachineAutoscalers, then plan/sharing_planner's answer. Read-only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    mig_manager_config_map,
    mig_strategy_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import MIG_STRATEGY_SINGLE
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import workload_pods_selector
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import mig_configs_of
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import platform_without_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.answer import sharing_plan_answer
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.growth import CapacitySources
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.settings import plan_settings
from ansible_collections.gpushare.k8s.plugins.module_utils.run.machine_api import read_openshift_autoscaling
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import list_selected_nodes


def run_gpu_sharing_plan(module):
    """gpu_sharing_plan: read, plan, answer; never writes."""
    kube = module.kube
    params = module.params
    settings = plan_settings(params)
    operator = find_operator(kube, params["cluster_policy"], params["namespace"])
    configs = mig_configs_of(
        kube.get_config_map(namespace=operator.namespace, name=mig_manager_config_map(operator.policy))
    )
    nodes = list_selected_nodes(kube, params["node_selector"], "node_selector")
    states = [state for state in map(NodeGpuState.from_node, nodes) if state.is_gpu_node and state.count]
    pods = kube.list_pods(field_selector=workload_pods_selector(operator.namespace))
    strategy = mig_strategy_of(operator.policy)
    every_node = nodes
    if (strategy == MIG_STRATEGY_SINGLE or settings.capacity) and params["node_selector"]:
        # The strategy and the autoscaler's limits are the whole cluster's: nodes outside the selection count too.
        every_node = kube.list_nodes().items
    everywhere = [state for state in map(NodeGpuState.from_node, every_node) if state.is_gpu_node]
    settings = settings._replace(
        now=int(time.time()),
        mig_allowed=platform_without_mig(nodes) is None,
        mig_strategy=strategy,
        single_mig_nodes=tuple(sorted(state.name for state in everywhere if state.mig_enabled)),
    )
    sources = None
    if settings.capacity:
        openshift = read_openshift_autoscaling(kube)
        sources = CapacitySources(nodes=every_node, node_pools=settings.node_pools, **openshift)
    answer = sharing_plan_answer(states, pods, configs, settings, sources)
    answer.update(changed=False, namespace=operator.namespace)
    return answer
