# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/common: findings by severity (in the order ``preflight`` returns them), ``summarize`` and
``should_fail``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import NAMESPACE, cluster_policy, t4_node
from preflight_objects import daemonset, healthy_operator, tainted

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_findings_are_ordered_by_severity_and_fail_on():
    nodes = [tainted(t4_node("t4-0"), {"key": "x", "effect": "NoSchedule"}), t4_node("t4-1", config="nope")]
    nodes[1]["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"] = "false"
    daemonsets, nfd, pods = healthy_operator(nodes)
    findings = pf.preflight(cluster_policy(), NAMESPACE, None, nodes, pods, daemonsets, [nfd, daemonset("other")])
    severities = [f["severity"] for f in findings]
    assert severities == sorted(severities, key=pf.SEVERITIES.index) and "warning" in severities
    assert pf.summarize(findings)["error"] == severities.count("error")
    assert pf.should_fail(findings, "error") and pf.should_fail(findings, "warning")
    assert not pf.should_fail(findings, "never")
    warnings_only = [f for f in findings if f["severity"] != "error"]
    assert not pf.should_fail(warnings_only, "error") and pf.should_fail(warnings_only, "warning")
    assert pf.preflight(cluster_policy(), NAMESPACE, None, nodes, pods, daemonsets, [nfd], checks=["quota"]) == []
