# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/platforms: the platform told from the nodes, MachineSets and policy; durations; a MachineSet's nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import cluster_policy, machine, machineset, t4_node, t4_pool
from preflight_objects import with_labels

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import machineset_node_names
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


@pytest.mark.parametrize(
    "text, seconds",
    [("15m", 900), ("10m0s", 600), ("1h", 3600), ("600s", 600), ("1h30m", 5400), ("soon", None), ("10", None)],
)
def test_parse_duration(text, seconds):
    assert pf.parse_duration(text) == seconds


def test_platforms_are_told_apart():
    assert pf.detect_platform([t4_node("a")], [machineset()]) == pf.OPENSHIFT
    assert pf.detect_platform([t4_node("a")], [], cluster_policy(name="gpu-cluster-policy")) == pf.OPENSHIFT
    assert pf.detect_platform([with_labels(t4_node("a"), {"k8s.scaleway.com/pool-name": "gpu"})], []) == pf.SCALEWAY
    assert (
        pf.detect_platform([with_labels(t4_node("a"), {"topology.kubernetes.io/zone": "HCM03-1A"})], [])
        == "VNG Cloud VKS"
    )
    assert pf.detect_platform([t4_node("a")], []) is None


def test_machineset_nodes_come_from_machines_node_refs():
    machines, _nodes = t4_pool("gpu-t4-0", "gpu-t4-1")
    other, _ = t4_pool("ip-10-0-9-9.ec2.internal", machineset_name="gpu-a100")
    deleting = machine("gpu-t4-m7", "gpu-t4", "gpu-t4-7")
    deleting["metadata"]["deletionTimestamp"] = "2026-11-25T10:00:00Z"
    provisioning = machine("gpu-t4-m8", "gpu-t4")
    assert machineset_node_names(machines + other + [deleting, provisioning]) == {
        ("openshift-machine-api", "gpu-t4"): ["gpu-t4-0", "gpu-t4-1"],
        ("openshift-machine-api", "gpu-a100"): ["ip-10-0-9-9.ec2.internal"],
    }
