# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/taints: GPU-node taints the operands' tolerations (and NFD's worker's) do not tolerate."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from k8s_objects import GPU_TAINT, GPU_TOLERATION, NAMESPACE, a100_node, cluster_policy, cpu_node, node, t4_node
from preflight_objects import NFD_PCI, daemonset, helm_nfd, tainted

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_an_unset_or_empty_toleration_list_means_only_the_built_in_gpu_toleration():
    nodes = [tainted(t4_node("t4-0"), dict(GPU_TAINT))]
    for tolerations in (None, []):
        assert pf.check_taints(cluster_policy(tolerations=tolerations), nodes, []) == []
    custom = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    [found] = pf.check_taints(cluster_policy(tolerations=None), [tainted(t4_node("t4-0"), dict(GPU_TAINT), custom)], [])
    assert found["severity"] == "error" and found["object"] == "ClusterPolicy/cluster-policy"
    assert "dedicated=ml:NoSchedule" in found["message"] and "t4-0" in found["message"]
    wanted = [GPU_TOLERATION, {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    assert json.dumps(wanted, sort_keys=True) in found["fix"]


def test_a_list_without_the_gpu_toleration_replaces_it_and_loses_gpu_tainted_nodes():
    policy = cluster_policy(tolerations=[{"key": "dedicated", "operator": "Exists"}])
    nodes = [tainted(t4_node("t4-0"), dict(GPU_TAINT)), tainted(a100_node("a100-0"), dict(GPU_TAINT))]
    [found] = pf.check_taints(policy, nodes, [])
    assert "nvidia.com/gpu=present:NoSchedule" in found["message"] and "t4-0, a100-0" in found["message"]
    # With no GPU-tainted node yet: a warning that one would lose its operands.
    [warning] = pf.check_taints(policy, [t4_node("t4-0")], [])
    assert warning["severity"] == "warning" and "replaces the built-in one" in warning["message"]


def test_prefer_no_schedule_taints_and_cpu_nodes_are_ignored():
    soft = {"key": "spot", "effect": "PreferNoSchedule"}
    hard = {"key": "dedicated", "effect": "NoSchedule"}
    assert (
        pf.check_taints(cluster_policy(), [tainted(t4_node("t4-0"), soft), tainted(cpu_node("cpu-0"), hard)], []) == []
    )


def test_a_node_only_nfd_labelled_is_a_gpu_node():
    bare = tainted(node("new-gpu", NFD_PCI), {"key": "dedicated", "effect": "NoExecute"})
    [found] = pf.check_taints(cluster_policy(), [bare], [])
    assert "new-gpu" in found["message"] and '"operator": "Exists"' in found["fix"]


def test_nfd_workers_fix_names_the_helm_value_or_openshifts_nfd_operator():
    taint = {"key": "dedicated", "effect": "NoExecute"}
    nodes = [tainted(t4_node("t4-0"), dict(GPU_TAINT), taint)]
    policy = cluster_policy(tolerations=[GPU_TOLERATION, {"key": "dedicated", "operator": "Exists"}])
    [helm] = pf.check_taints(policy, nodes, [helm_nfd([GPU_TOLERATION])])
    assert helm["object"] == "DaemonSet/%s/gpu-operator-node-feature-discovery-worker" % NAMESPACE
    assert "node-feature-discovery.worker.tolerations of release gpu-operator" in helm["fixed_by"]
    openshift = daemonset("nfd-worker", "openshift-nfd", tolerations=[{"operator": "Exists", "effect": "NoSchedule"}])
    [nfd] = pf.check_taints(policy, nodes, [openshift])
    assert "NodeFeatureDiscovery" in nfd["fixed_by"]
    # NoSchedule taints are tolerated by OpenShift's worker.
    soft = [tainted(t4_node("t4-0"), dict(GPU_TAINT), {"key": "dedicated", "effect": "NoSchedule"})]
    assert pf.check_taints(policy, soft, [openshift]) == []
