# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_info and gpu_preflight on nodes where HAMi's device plugin registered (nvidia/hami.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from k8s_objects import cluster_policy, t4_node

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.hami import registered_devices
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import build_inventory
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf

# hami.io/node-nvidia-register as HAMi v2.9.0's device plugin writes it for one T4 split 10 ways.
T4_SPLIT_10 = [
    {"id": "GPU-0", "count": 10, "devmem": 15360, "devcore": 100, "type": "NVIDIA-Tesla T4", "mode": "hami-core"}
]


def hami_node(name, advertised="10", devices=T4_SPLIT_10, **labels):
    node = t4_node(name, annotations={"hami.io/node-nvidia-register": json.dumps(devices)})
    node["metadata"]["labels"].update(labels)
    node["status"]["capacity"]["nvidia.com/gpu"] = node["status"]["allocatable"]["nvidia.com/gpu"] = advertised
    return node


def plugin_pod(node_name, phase="Running"):
    """A pod of HAMi's device plugin DaemonSet (charts/hami) on ``node_name``."""
    return {
        "metadata": {
            "name": "hami-device-plugin-x",
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/component": "hami-device-plugin"},
        },
        "spec": {"nodeName": node_name},
        "status": {"phase": phase},
    }


def policy(device_plugin_enabled):
    body = cluster_policy()
    body["spec"]["devicePlugin"]["enabled"] = device_plugin_enabled
    return body


def node_findings(node, device_plugin_enabled, hami_pods=None):
    name = node["metadata"]["name"]
    hami_pods = [plugin_pod(name)] if hami_pods is None else hami_pods
    return build_inventory(policy(device_plugin_enabled), None, [node], [], hami_pods)["nodes"][name]["findings"]


def test_a_hami_node_advertises_its_split_count_not_count_x_replicas():
    inventory = build_inventory(policy(False), None, [hami_node("t4-0")], [], [plugin_pod("t4-0")])
    assert inventory["nodes"]["t4-0"]["findings"] == []
    assert inventory["nodes"]["t4-0"]["hami_devices"] == T4_SPLIT_10
    [finding] = node_findings(hami_node("t4-0", advertised="1"), False)
    assert finding.startswith("capacity nvidia.com/gpu is 1, expected 1 GPU(s) x HAMi's deviceSplitCount = 10")


def test_nvidia_s_device_plugin_beside_hami_s_is_an_error_with_its_fix():
    [finding] = node_findings(hami_node("t4-0"), True)
    assert "advertised by two device plugins" in finding
    # Switched off on that node by the operator's deploy label: one plugin only.
    assert node_findings(hami_node("t4-0", **{"nvidia.com/gpu.deploy.device-plugin": "false"}), True) == []
    [found] = pf.check_sharing(policy(True), None, [hami_node("t4-0")], [plugin_pod("t4-0")])
    assert (found["severity"], found["fixed_by"]) == ("error", "the gpushare.k8s.hami role")
    assert pf.check_sharing(policy(False), None, [hami_node("t4-0")], [plugin_pod("t4-0")]) == []


def test_what_is_not_hami_s_register_is_no_hami_node():
    assert registered_devices({}) is None
    assert registered_devices({"hami.io/node-nvidia-register": "GPU-0,10,15360,100,NVIDIA-Tesla T4"}) is None
    assert registered_devices({"hami.io/node-nvidia-register": json.dumps(T4_SPLIT_10)}) == T4_SPLIT_10
    plain = t4_node("t4-1")
    assert (
        build_inventory(policy(True), None, [plain], [], [plugin_pod("t4-1")])["nodes"]["t4-1"]["hami_devices"] is None
    )


def test_the_annotation_hami_leaves_behind_counts_only_where_its_device_plugin_runs():
    """HAMi never removes hami.io/node-nvidia-register: after an uninstall NVIDIA's plugin is back alone."""
    back_to_nvidia = hami_node("t4-0", advertised="1")
    for hami_pods in ([], [plugin_pod("t4-0", phase="Pending")], [plugin_pod("t4-9")]):
        assert node_findings(back_to_nvidia, True, hami_pods) == []
    assert build_inventory(policy(True), None, [back_to_nvidia], [], [])["nodes"]["t4-0"]["hami_devices"] is None


def test_the_hami_fix_leaves_the_other_sharing_fixes_as_they_were():
    """The table of fixes is matched on wording in order; the first entry also serves the no-ConfigMap case."""
    [found] = pf.check_sharing(policy(True), None, [t4_node("t4-0", config="no-such-profile")])
    assert "gpu_reset" in found["fixed_by"] and "hami" not in found["fixed_by"]
