# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_preflight: one LIST of each kind it checks, then plan/preflight.py's findings, and the GPU
nodes as gpu_info describes them, from the same reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import device_plugin_config_of
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import workload_pods
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import build_inventory
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import detect_platform
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.checks import (
    ERROR,
    finding,
    preflight,
    should_fail,
    summarize,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.machine_api import read_openshift_autoscaling
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import list_selected_nodes


def run_gpu_preflight(module):
    """gpu_preflight: read-only; fails only as ``fail_on`` asks."""
    kube = module.kube
    params = module.params
    checks = params["checks"]
    policy, namespace, findings = _read_operator(kube, params)
    config_map, daemonsets = _read_operands(kube, policy, namespace)
    nodes = list_selected_nodes(kube, params["node_selector"], "node_selector")
    pods = kube.list_pods()
    openshift = read_openshift_autoscaling(kube) if "autoscaling" in checks else {}
    findings += preflight(
        policy,
        namespace,
        config_map,
        nodes,
        pods,
        daemonsets=daemonsets,
        all_daemonsets=kube.list_all_daemon_sets() if set(checks) & {"taints", "operator"} else [],
        quotas=kube.list_resource_quotas() if "quota" in checks else [],
        checks=checks,
        autoscaler_gpu_label=params["autoscaler_gpu_label"],
        **openshift,
    )
    result = dict(
        changed=False,
        platform=detect_platform(nodes, openshift.get("machinesets") or [], policy),
        cluster_policy=policy["metadata"]["name"] if policy else None,
        namespace=namespace,
        findings=findings,
        summary=summarize(findings),
        # gpu_info's nodes: the sharing role shows them before and after a change without a read of its own. Every
        # pod was listed, HAMi's device plugin's too, wherever it runs.
        nodes=build_inventory(policy, config_map, nodes, workload_pods(pods, namespace), pods)["nodes"],
    )
    if should_fail(findings, params["fail_on"]):
        result.update(
            failed=True,
            msg="gpu_preflight found %s: %s"
            % (
                ", ".join("%d %s(s)" % (n, severity) for severity, n in result["summary"].items() if n),
                "; ".join("%s: %s" % (f["object"], f["message"]) for f in findings if f["severity"] != "info"),
            ),
        )
    return result


def _read_operator(kube, params):
    """(policy, namespace, findings): the operator as found; when it is not, a finding saying why, and the only
    ClusterPolicy there is (its namespace unknown)."""
    policies = kube.list_cluster_policies()
    try:
        operator = find_operator(kube, params["cluster_policy"], params["namespace"], policies=policies)
        return operator.policy, operator.namespace, []
    except GpuShareError as exc:
        missing = finding(
            ERROR,
            "operator",
            "GPU Operator",
            exc.msg,
            "install the NVIDIA GPU Operator, or name its ClusterPolicy and namespace",
            "the cluster_policy and namespace options",
        )
        return (policies[0] if policies and len(policies) == 1 else None), None, [missing]


def _read_operands(kube, policy, namespace):
    """(the device plugin's ConfigMap or None, the operator namespace's DaemonSets) once the operator is found."""
    config_map, daemonsets = None, []
    if policy is not None and namespace is not None:
        config_map_name = device_plugin_config_of(policy)[0]
        if config_map_name:
            config_map = kube.get_config_map(namespace=namespace, name=config_map_name)
        daemonsets = kube.list_daemon_sets(namespace=namespace).items
    return config_map, daemonsets
