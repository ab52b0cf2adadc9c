# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_autoscaling: read the nodes and OpenShift's MachineSets and autoscalers, plan, write
through the one writer."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    AutoscalingRequest,
    plan_node_autoscaling_labels,
    plan_openshift_autoscaling,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    CLUSTER_AUTOSCALER,
    MACHINE,
    MACHINE_AUTOSCALER,
    MACHINESET,
    OPENSHIFT,
    detect_platform,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import report_and_write
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned


def _in_namespace(objects, namespace):
    return [obj for obj in objects if obj["metadata"].get("namespace") == namespace]


def run_gpu_autoscaling(module):
    kube = module.kube
    params = module.params
    request = AutoscalingRequest(params)
    machine_api_namespace = params["machine_api_namespace"]

    def read_and_plan():
        nodes = kube.list_nodes().items
        machinesets = _in_namespace(kube.list_custom_objects(*MACHINESET), machine_api_namespace)
        platform = detect_platform(nodes, machinesets)
        if platform == OPENSHIFT:
            if params["nodes"]:
                raise GpuShareError(
                    "nodes is for platforms without MachineSets; on OpenShift choose the GPU pools with machinesets."
                )
            if params["autoscaler_gpu_label"]:
                raise GpuShareError(
                    "autoscaler_gpu_label is for platforms without MachineSets; OpenShift's autoscaler reads the "
                    "MachineSets' cluster-api/accelerator label."
                )
            plan = plan_openshift_autoscaling(
                request,
                machinesets,
                kube.list_custom_objects(*CLUSTER_AUTOSCALER),
                _in_namespace(kube.list_custom_objects(*MACHINE_AUTOSCALER), machine_api_namespace),
                _in_namespace(kube.list_custom_objects(*MACHINE), machine_api_namespace),
                nodes,
            )
            return Planned(None, plan, platform)
        if params["machinesets"]:
            raise GpuShareError(
                "machinesets were given but the cluster has no MachineSets in %s (platform: %s); choose nodes instead."
                % (machine_api_namespace, platform or "not recognised")
            )
        nodes_named = resolve_node_names(kube, params["nodes"])
        return Planned(None, plan_node_autoscaling_labels(request, platform, Fleet(nodes), nodes_named), platform)

    planned = read_and_plan()
    # The ClusterAutoscaler's limits and the recorded MachineSets and nodes are written on the version read: read and
    # plan again when the machine controller or another writer changed them in between.
    return report_and_write(module, planned, read_and_plan, platform=planned.platform, autoscaling=planned.plan.after)
