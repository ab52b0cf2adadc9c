# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/sharing: the sharing findings (the inventory's, each with its fix) and the policy's ConfigMap."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import a100_node, cluster_policy, config_map, cpu_node, t4_node, t4_time_sliced

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_sharing_findings_reuse_the_inventory_with_a_fix_each():
    policy = cluster_policy(config_name="time-slicing-config")
    cm = config_map(
        {
            "ts-4": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            "    - name: nvidia.com/gpu\n      replicas: 4\n"
        }
    )
    wrong_key = t4_node("t4-0", config="ts-8")
    stale = t4_time_sliced("t4-1", 4, config="ts-4")
    stale["status"]["capacity"]["nvidia.com/gpu"] = "1"
    failed = a100_node("a100-0")
    failed["metadata"]["labels"]["nvidia.com/mig.config.state"] = "failed"
    pending = a100_node("a100-1")
    pending["metadata"]["labels"]["nvidia.com/mig.config.state"] = "pending"
    findings = pf.check_sharing(policy, cm, [wrong_key, stale, failed, pending, cpu_node("cpu-0")])
    by = dict((f["object"], f) for f in findings)
    assert "set nvidia.com/device-plugin.config on t4-0" in by["Node/t4-0"]["fix"]
    assert "restart_device_plugin: true" in by["Node/t4-1"]["fixed_by"]
    assert by["Node/a100-0"]["severity"] == "error" and "gpu_mig_config" in by["Node/a100-0"]["fixed_by"]
    assert by["Node/a100-1"]["severity"] == "warning" and "drain: true" in by["Node/a100-1"]["fixed_by"]
    assert len(findings) == 4


def test_a_policy_naming_a_missing_config_map_and_labels_with_no_config_map():
    policy = cluster_policy(config_name="gone")
    findings = pf.check_sharing(policy, None, [t4_node("t4-0", config="ts-4")])
    assert [f["object"] for f in findings] == ["ClusterPolicy/cluster-policy", "Node/t4-0"]
    assert "gone" in findings[0]["message"] and "ignores the label" in findings[1]["message"]
