# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/operands: the operands each GPU node needs, their pods, NFD's worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import NAMESPACE, a100_node, cluster_policy, cpu_node, t4_node
from preflight_objects import OPERAND_NAMES, VALIDATOR, ds_pod, healthy_operator

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_a_healthy_operator_has_no_findings():
    nodes = [t4_node("t4-0"), a100_node("a100-0"), cpu_node("cpu-0")]
    daemonsets, nfd, pods = healthy_operator(nodes[:2])
    assert pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [nfd], nodes, pods) == []


def test_missing_unready_switched_off_and_absent_operands():
    nodes = [t4_node("t4-0"), a100_node("a100-0")]
    nodes[0]["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"] = "false"
    daemonsets, nfd, pods = healthy_operator(nodes, [n for n in OPERAND_NAMES if n != VALIDATOR])
    pods = [p for p in pods if p["metadata"]["name"] != "nvidia-mig-manager-a100-0"]
    pods = [p for p in pods if p["metadata"]["name"] != "gpu-feature-discovery-t4-0"]
    pods.append(ds_pod(daemonsets[0], "t4-0", deleting=True))  # terminating: not there
    for p in pods:
        if p["metadata"]["name"] == "nvidia-device-plugin-daemonset-a100-0":
            p["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    findings = pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [nfd], nodes, pods)
    by = dict(((f["object"], f["message"].split(" ")[1]), f) for f in findings)
    assert by[("Node/t4-0", "DCGM")]["severity"] == "warning"
    assert "nvidia.com/gpu.deploy.dcgm-exporter=true" in by[("Node/t4-0", "DCGM")]["fix"]
    assert "no pod on GPU node(s) a100-0" in by[("DaemonSet/%s/nvidia-mig-manager" % NAMESPACE, "MIG")]["message"]
    assert "no pod on GPU node(s) t4-0" in by[("DaemonSet/%s/gpu-feature-discovery" % NAMESPACE, "GPU")]["message"]
    unready = by[("DaemonSet/%s/nvidia-device-plugin-daemonset" % NAMESPACE, "device")]
    assert "not ready on GPU node(s) a100-0" in unready["message"]
    absent = by[("DaemonSet/%s/%s" % (NAMESPACE, VALIDATOR), "operator")]
    assert "does not exist" in absent["message"] and "t4-0, a100-0" in absent["message"]
    assert len(findings) == 5


def test_operands_the_policy_disables_are_not_required_and_mps_only_where_mps_is_on():
    nodes = [t4_node("t4-0")]
    policy = cluster_policy()
    policy["spec"]["dcgmExporter"]["enabled"] = False
    daemonsets, nfd, pods = healthy_operator(nodes)
    pods = [p for p in pods if "dcgm" not in p["metadata"]["name"]]
    assert pf.check_operator(policy, NAMESPACE, daemonsets, [nfd], nodes, pods) == []
    nodes[0]["metadata"]["labels"]["nvidia.com/mps.capable"] = "true"
    [mps] = pf.check_operator(policy, NAMESPACE, daemonsets, [nfd], nodes, pods)
    assert "MPS control daemon has no pod on GPU node(s) t4-0" in mps["message"]


def test_paused_operands_are_information_while_a_mig_change_is_pending_and_left_to_sharing_otherwise():
    nodes = [a100_node("a100-0")]
    labels = nodes[0]["metadata"]["labels"]
    labels["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-mig-change"
    daemonsets, nfd, pods = healthy_operator(nodes)
    pods = [p for p in pods if "device-plugin-daemonset" not in p["metadata"]["name"]]
    assert pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [nfd], nodes, pods) == []
    [left] = [f for f in pf.check_sharing(cluster_policy(), None, nodes) if "left behind" in f["message"]]
    assert left["fix"] == "kubectl label node a100-0 nvidia.com/gpu.deploy.device-plugin=true --overwrite"
    labels.update({"nvidia.com/mig.config.state": "pending", "nvidia.com/mig.config": "all-1g.5gb"})
    [info] = pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [nfd], nodes, pods)
    assert info["severity"] == "info" and "all-1g.5gb" in info["message"]


def test_no_nfd_worker_is_a_warning():
    nodes = [t4_node("t4-0")]
    daemonsets, _nfd, pods = healthy_operator(nodes)
    [found] = pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [], nodes, pods)
    assert found["severity"] == "warning" and found["object"] == "Node Feature Discovery"
