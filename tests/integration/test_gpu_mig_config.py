"""gpu_mig_config against the local cluster: shipped and custom layouts, every refusal (with zero
writes, from the audit log), GPU pods blocking the change or drained, failures and stuck changes
reported per node, and MIG devices shared by time-slicing."""

import json

import pytest
import yaml
from integration_helpers import ADMIN_USER, WRITE_VERBS, allocatable, describe, labels
from workloads import gpu_pod, guarded_gpu_pod, pod_exists

from testbed.simulator.names import MIG_MODE_NEEDS_REBOOT_ANNOTATION

pytestmark = pytest.mark.profiles("openshift")

A100 = ["gpu-a100-0", "gpu-a100-1"]
H100 = ["gpu-h100-0", "gpu-h100-1"]
HALF_AND_WHOLE = [
    {"devices": [0], "mig-enabled": True, "mig-devices": {"3g.20gb": 2}},
    {"devices": [1], "mig-enabled": False},
]


def mig(run_module, nodes, check=False, diff=False, **args):
    return run_module("gpu_mig_config", dict(args, nodes={"names": nodes}), check=check, diff=diff)


def admin_writes(audit):
    """The writes the modules made (as gpushare-admin) in the audit window."""
    return [
        describe(event)
        for event in audit.requests
        if event["verb"] in WRITE_VERBS and event["user"]["username"] == ADMIN_USER
    ]


def restore_record(obj):
    return json.loads(obj["metadata"]["annotations"]["gpushare.k8s/restore"])


# --- shipped configurations, both strategies, both GPU models -------------------------------


def test_single_strategy_on_a100_and_h100(kube, run_module, audit_writes):
    with audit_writes() as audit:
        preview = mig(run_module, A100, check=True, diff=True, strategy="single", config="all-1g.5gb")
    assert preview["changed"] and admin_writes(audit) == []
    assert preview["diff"]["after"]["nodes"]["gpu-a100-0"] == {"nvidia.com/mig.config": "all-1g.5gb"}

    result = mig(run_module, A100, strategy="single", config="all-1g.5gb")
    assert result["changed"], result["msg"] if result.get("failed") else result
    for name in A100:
        assert result["nodes"][name]["after"]["mig_devices"] == {"1g.5gb": 14}
        node_labels = labels(kube.node(name))
        assert node_labels["nvidia.com/gpu.product"] == "NVIDIA-A100-PCIE-40GB-MIG-1g.5gb"
        assert allocatable(kube.node(name)) == 14
        assert restore_record(kube.node(name)) == {"labels": {"nvidia.com/mig.config": "all-disabled"}}

    result = mig(run_module, H100, strategy="single", config="all-3g.40gb")
    assert not result.get("failed"), result.get("msg")
    for name in H100:
        assert result["nodes"][name]["after"]["mig_devices"] == {"3g.40gb": 16}
        assert labels(kube.node(name))["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"

    with audit_writes() as audit:
        again = mig(run_module, A100, strategy="single", config="all-1g.5gb")
    assert not again["changed"] and admin_writes(audit) == []
    assert again["nodes"]["gpu-a100-0"]["after"]["mig_devices"] == {"1g.5gb": 14}


def test_mixed_strategy_balanced_on_a100_and_h100(kube, run_module):
    result = mig(run_module, ["gpu-a100-0", "gpu-h100-0"], diff=True, strategy="mixed", config="all-balanced")
    assert not result.get("failed"), result.get("msg")
    assert result["diff"]["before"]["cluster_policy"]["mig.strategy"] == "single"
    assert result["diff"]["after"]["cluster_policy"]["mig.strategy"] == "mixed"
    assert result["nodes"]["gpu-a100-0"]["after"]["mig_devices"] == {"1g.5gb": 4, "2g.10gb": 2, "3g.20gb": 2}
    assert result["nodes"]["gpu-h100-0"]["after"]["mig_devices"] == {"1g.10gb": 16, "2g.20gb": 8, "3g.40gb": 8}
    a100 = kube.node("gpu-a100-0")
    assert allocatable(a100, "nvidia.com/mig-3g.20gb") == 2 and allocatable(a100) == 0
    policy = kube.policy()
    assert policy["spec"]["mig"]["strategy"] == "mixed"
    assert restore_record(policy) == {"spec": {"mig.strategy": "single"}}
    assert not mig(run_module, ["gpu-a100-0", "gpu-h100-0"], strategy="mixed", config="all-balanced")["changed"]


def test_custom_layout(kube, run_module, audit_writes):
    result = mig(
        run_module, ["gpu-a100-0"], diff=True, strategy="mixed", layout=HALF_AND_WHOLE, config_name="half-and-whole"
    )
    assert not result.get("failed"), result.get("msg")
    assert result["config_map"] == "custom-mig-parted-config"
    assert result["diff"]["after"]["config_map"] == {"half-and-whole": HALF_AND_WHOLE}
    assert result["nodes"]["gpu-a100-0"]["after"]["mig_devices"] == {"3g.20gb": 2}
    node = kube.node("gpu-a100-0")
    assert allocatable(node, "nvidia.com/mig-3g.20gb") == 2 and allocatable(node) == 1
    config_map = kube.config_map("custom-mig-parted-config")
    configs = yaml.safe_load(config_map["data"]["config.yaml"])["mig-configs"]
    assert configs["half-and-whole"] == HALF_AND_WHOLE
    assert {"all-disabled", "all-balanced", "all-1g.5gb"} <= set(configs)  # copied from the shipped ConfigMap
    assert restore_record(config_map) == {"created": True}
    assert kube.policy()["spec"]["migManager"]["config"] == {
        "name": "custom-mig-parted-config",
        "default": "all-disabled",
    }

    with audit_writes() as audit:
        again = mig(run_module, ["gpu-a100-0"], strategy="mixed", layout=HALF_AND_WHOLE, config_name="half-and-whole")
    assert not again["changed"] and admin_writes(audit) == []

    # shipped names keep working through the custom ConfigMap
    result = mig(run_module, ["gpu-a100-1"], strategy="mixed", config="all-balanced")
    assert not result.get("failed"), result.get("msg")
    assert result["nodes"]["gpu-a100-1"]["after"]["mig_devices"] == {"1g.5gb": 4, "2g.10gb": 2, "3g.20gb": 2}


# --- refusals: nothing written --------------------------------------------------------------

# Refusals of bad input (foreign profiles, too many instances, GPUs without MIG, typos...) are in the bad-input
# matrix, tests/integration/test_bad_input.py.


def test_pending_node_refused(kube, run_module, audit_writes):
    kube.label_node("gpu-a100-0", {"nvidia.com/mig.config.state": "pending"})
    with audit_writes() as audit:
        result = mig(run_module, ["gpu-a100-0"], strategy="mixed", config="all-balanced")
    assert result["failed"] and "still pending" in result["msg"], result["msg"]
    assert admin_writes(audit) == []


def test_changing_a_layout_in_use_refused(kube, run_module, audit_writes):
    assert not mig(run_module, ["gpu-a100-0"], strategy="mixed", layout=HALF_AND_WHOLE, config_name="mine").get(
        "failed"
    )
    other = [{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.40gb": 1}}]
    with audit_writes() as audit:
        result = mig(run_module, ["gpu-a100-1"], strategy="mixed", layout=other, config_name="mine")
    assert result["failed"] and "891" in result["msg"] and "gpu-a100-0" in result["msg"]
    assert admin_writes(audit) == []


# --- GPU pods -----------------------------------------------------------------------------------


def test_running_gpu_pod_blocks_the_change(kube, api_client, namespace, run_module, audit_writes):
    gpu_pod(api_client, "gpu-a100-0", namespace)
    with audit_writes() as audit:
        result = mig(run_module, A100, strategy="mixed", config="all-1g.5gb")
    assert result["failed"] and namespace + "/trainer" in result["msg"] and "drain=true" in result["msg"], result["msg"]
    assert admin_writes(audit) == []


def test_drain_evicts_the_pod_then_uncordons(kube, api_client, namespace, run_module):
    gpu_pod(api_client, "gpu-a100-0", namespace)
    preview = mig(run_module, ["gpu-a100-0"], check=True, strategy="mixed", config="all-1g.5gb", drain=True)
    assert preview["evicted"] == {"gpu-a100-0": [namespace + "/trainer"]} and pod_exists(
        api_client, namespace, "trainer"
    )

    result = mig(run_module, ["gpu-a100-0"], strategy="mixed", config="all-1g.5gb", drain=True)
    assert not result.get("failed"), result.get("msg")
    assert result["evicted"] == {"gpu-a100-0": [namespace + "/trainer"]} and result["cordoned"] == ["gpu-a100-0"]
    assert not pod_exists(api_client, namespace, "trainer")
    node = kube.node("gpu-a100-0")
    assert not node["spec"].get("unschedulable")
    assert allocatable(node, "nvidia.com/mig-1g.5gb") == 14


def test_drain_stopped_by_a_disruption_budget(kube, api_client, namespace, run_module):
    guarded_gpu_pod(api_client, "gpu-a100-0", namespace)
    result = mig(run_module, ["gpu-a100-0"], strategy="mixed", config="all-1g.5gb", drain=True)
    assert result["failed"] and "PodDisruptionBudget" in result["msg"] and "schedulable again" in result["msg"], result[
        "msg"
    ]
    node = kube.node("gpu-a100-0")
    assert not node["spec"].get("unschedulable")
    assert labels(node)["nvidia.com/mig.config"] == "all-disabled"
    assert pod_exists(api_client, namespace, "trainer")


# --- failures reported per node ---------------------------------------------------------------


def test_simulated_failure_reported_per_node(kube, run_module):
    kube.annotate_node("gpu-a100-0", {"sim.gpushare.k8s/mig-fail": "nvidia-smi: insufficient resources"})
    result = mig(run_module, A100, strategy="mixed", config="all-1g.5gb", wait_timeout=120)
    assert result["failed"], result
    assert (
        "gpu-a100-0: Failed to apply MIG configuration 'all-1g.5gb': nvidia-smi: insufficient resources"
        in result["msg"]
    )
    assert "gpu-a100-1" not in result["msg"]
    assert result["details"]["failed"].keys() == {"gpu-a100-0"}
    assert "Timed out" not in result["msg"]  # reported at once, not at the timeout
    assert labels(kube.node("gpu-a100-1"))["nvidia.com/mig.config.state"] == "success"


def test_with_reboot_the_module_waits_through_the_nodes_reboot_and_reports_it(kube, run_module):
    """A node that changes MIG mode only across a reboot: without WITH_REBOOT the change fails there; with it,
    mig-manager reboots the node (state rebooting, NotReady, a new boot ID) and the module waits it out."""
    kube.annotate_node("gpu-a100-0", {MIG_MODE_NEEDS_REBOOT_ANNOTATION: "true"})
    refused = mig(run_module, A100, strategy="mixed", config="all-1g.5gb", wait_timeout=120)
    assert refused["failed"] and refused["details"]["failed"].keys() == {"gpu-a100-0"}, refused
    assert "MIG mode change did not take effect" in refused["msg"] and "WITH_REBOOT" in refused["msg"]
    # mig-manager does not retry an unchanged label: another config first (the node never left MIG mode off).
    assert not mig(run_module, A100, config="all-disabled").get("failed")
    boot_id = kube.node("gpu-a100-0")["status"]["nodeInfo"]["bootID"]

    kube.patch_policy({"migManager": {"env": [{"name": "WITH_REBOOT", "value": "true"}]}})
    on = mig(run_module, A100, strategy="mixed", config="all-1g.5gb", wait_timeout=120)
    assert on["changed"] and not on.get("failed"), on.get("msg")
    assert any("WITH_REBOOT=true" in warning and "gpu-a100-0, gpu-a100-1" in warning for warning in on["warnings"])
    assert (on["nodes"]["gpu-a100-0"]["rebooted"], on["nodes"]["gpu-a100-1"]["rebooted"]) == (True, False)
    assert on["nodes"]["gpu-a100-0"]["after"]["mig_devices"] == {"1g.5gb": 14}
    node = kube.node("gpu-a100-0")
    assert node["status"]["nodeInfo"]["bootID"] != boot_id
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    rebooted = kube.core.list_namespaced_event(
        "default", field_selector="involvedObject.kind=Node,involvedObject.name=gpu-a100-0,reason=Rebooted"
    ).items
    assert len(rebooted) == 1 and node["status"]["nodeInfo"]["bootID"] in rebooted[0].message

    # Out of MIG mode is a mode change too: another reboot, and the node comes back with its GPUs whole.
    off = mig(run_module, ["gpu-a100-0"], config="all-disabled", wait_timeout=120)
    assert not off.get("failed") and off["nodes"]["gpu-a100-0"]["rebooted"], off.get("msg")
    assert off["nodes"]["gpu-a100-0"]["after"]["allocatable"] == {"nvidia.com/gpu": 2}


def test_stuck_pending_reported_at_timeout(kube, run_module):
    kube.annotate_node("gpu-h100-0", {"sim.gpushare.k8s/mig-stuck": "true"})
    result = mig(run_module, ["gpu-h100-0"], strategy="mixed", config="all-balanced", wait_timeout=5)
    assert result["failed"] and "Timed out after 5s" in result["msg"], result["msg"]
    assert (
        "nvidia.com/mig.config.state=pending" in result["msg"]
        and "paused-for-mig-change" in result["msg"]
        and "2833" in result["msg"]
    )


def test_drained_node_stays_cordoned_when_the_change_fails(kube, run_module):
    kube.annotate_node("gpu-a100-0", {"sim.gpushare.k8s/mig-fail": "boom"})
    result = mig(run_module, ["gpu-a100-0"], strategy="mixed", config="all-1g.5gb", drain=True)
    assert result["failed"] and "boom" in result["msg"] and "stay cordoned" in result["msg"], result["msg"]
    assert kube.node("gpu-a100-0")["spec"]["unschedulable"] is True


# --- with time-slicing ----------------------------------------------------------------------------


def test_mixed_mig_devices_time_sliced_by_two(kube, run_module):
    assert not mig(run_module, ["gpu-a100-0"], strategy="mixed", config="all-1g.5gb").get("failed")
    result = run_module(
        "gpu_timeslicing",
        {
            "config_key": "mig-1g5-x2",
            "replicas": 2,
            "resources": ["nvidia.com/mig-1g.5gb"],
            "nodes": {"names": ["gpu-a100-0"]},
        },
    )
    assert not result.get("failed"), result.get("msg")
    node = kube.node("gpu-a100-0")
    assert allocatable(node, "nvidia.com/mig-1g.5gb") == 28
    assert labels(node)["nvidia.com/mig-1g.5gb.replicas"] == "2"


def test_media_extension_profile_advertised_and_time_sliced(kube, run_module):
    """1g.10gb+me (NVML: max 1 per H100 80GB HBM3) through the shipped all-1g.10gb.me, mixed strategy:
    advertised as nvidia.com/mig-1g.10gb.me, then time-sliced by two."""
    result = mig(run_module, ["gpu-h100-0"], strategy="mixed", config="all-1g.10gb.me")
    assert not result.get("failed"), result.get("msg")
    count = int(labels(kube.node("gpu-h100-0"))["nvidia.com/gpu.count"])
    assert result["nodes"]["gpu-h100-0"]["after"]["mig_devices"] == {"1g.10gb+me": count}
    node = kube.node("gpu-h100-0")
    assert allocatable(node, "nvidia.com/mig-1g.10gb.me") == count
    assert labels(node)["nvidia.com/mig-1g.10gb.me.count"] == str(count)

    info = run_module("gpu_info", {})
    assert info["nodes"]["gpu-h100-0"]["mig_resources"] == {"1g.10gb+me": count}

    result = run_module(
        "gpu_timeslicing",
        {
            "config_key": "mig-1g10me-x2",
            "replicas": 2,
            "resources": ["nvidia.com/mig-1g.10gb.me"],
            "nodes": {"names": ["gpu-h100-0"]},
        },
    )
    assert not result.get("failed"), result.get("msg")
    node = kube.node("gpu-h100-0")
    assert allocatable(node, "nvidia.com/mig-1g.10gb.me") == 2 * count
    assert labels(node)["nvidia.com/mig-1g.10gb.me.replicas"] == "2"


# --- platforms without MIG ------------------------------------------------------------------------


@pytest.mark.profiles("vks")
def test_vks_refuses_mig_by_name(kube, run_module, audit_writes):
    with audit_writes() as audit:
        result = mig(run_module, ["vks-gpu-a10-0"], strategy="mixed", config="all-balanced")
    assert result["failed"] and "VNG Cloud VKS does not offer MIG" in result["msg"], result["msg"]
    assert admin_writes(audit) == []
    # all-disabled is a no-op there: nothing has MIG to disable
    with audit_writes() as audit:
        result = mig(run_module, ["vks-gpu-a10-0", "vks-gpu-t4-0"], config="all-disabled")
    assert (
        not result.get("failed")
        and not result["changed"]
        and result["skipped_nodes"] == ["vks-gpu-a10-0", "vks-gpu-t4-0"]
    )
    assert admin_writes(audit) == []
