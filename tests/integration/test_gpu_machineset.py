"""gpu_machineset on the OpenShift testbed (issue 40, point 3): the configuration is written before the MachineSet's
template names it, new Machines join as nodes already in the planned sharing, the replicas a MachineAutoscaler owns
are never written, the ClusterAutoscaler's GPU limit is kept, and a scale-in removes only nodes without GPU pods.

The seeded T4 MachineSet has two machines (gpu-t4-0 and gpu-t4-1, one T4 each), its MachineAutoscaler (1 to 4) and
the ClusterAutoscaler's tesla-t4 limit of 4 GPUs, counted as the autoscaler counts them (a T4 time-sliced 2 ways
counts 2)."""

import pytest
from integration_helpers import MACHINE_AUTOSCALERS, MACHINESETS
from workloads import gpu_pod

from testbed import seed

pytestmark = pytest.mark.profiles("openshift")

NAMESPACE = seed.MACHINE_API_NAMESPACE
T4 = seed.OPENSHIFT_T4_MACHINESET
TS2 = {"mode": "time-slicing", "config_key": "t4-ts-2", "replicas": 2}
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"


def template_labels(kube, name):
    machineset = kube.custom_object(MACHINESETS, name, NAMESPACE)
    return machineset["spec"]["template"]["spec"]["metadata"]["labels"], machineset


def test_the_replicas_a_machineautoscaler_owns_are_refused_and_the_template_alone_is_set(
    run_module, kube, audit_writes
):
    with audit_writes() as audit:
        refused = run_module("gpu_machineset", {"name": T4, "replicas": 3, "sharing": TS2})
    assert refused.get("failed") and audit.writes == []
    assert "MachineAutoscaler %s/%s targets it, minReplicas 1, maxReplicas 4" % (NAMESPACE, T4) in refused["msg"]

    result = run_module("gpu_machineset", {"name": T4, "sharing": TS2})
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] and result["replicas"] == {"before": 2, "after": 2}
    labels, machineset = template_labels(kube, T4)
    assert labels[DEVICE_PLUGIN_LABEL] == "t4-ts-2" and machineset["spec"]["replicas"] == 2
    # The profile is in the device plugin's ConfigMap, and no existing node was relabelled.
    assert "t4-ts-2" in kube.config_map(kube.policy()["spec"]["devicePlugin"]["config"]["name"])["data"]
    assert all(DEVICE_PLUGIN_LABEL not in kube.node(name)["metadata"]["labels"] for name in ("gpu-t4-0", "gpu-t4-1"))
    assert not run_module("gpu_machineset", {"name": T4, "sharing": TS2})["changed"]


def test_a_new_t4_joins_time_sliced_and_a_scale_in_removes_only_a_node_without_gpu_pods(
    run_module, kube, api_client, namespace, audit_writes
):
    kube.delete_custom(MACHINE_AUTOSCALERS, T4, NAMESPACE)
    args = {"name": T4, "replicas": 3, "sharing": TS2}
    with audit_writes() as audit:
        checked = run_module("gpu_machineset", args, check=True, diff=True)
    assert checked["changed"] and audit.writes == []
    assert checked["diff"]["before"]["machineset"] == {"replicas": 2, "labels": {}}
    assert checked["diff"]["after"]["machineset"]["labels"] == {DEVICE_PLUGIN_LABEL: "t4-ts-2"}

    result = run_module("gpu_machineset", args)
    assert not result.get("failed"), result.get("msg")
    [new] = result["new_nodes"]
    node = kube.node(new)
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert node["metadata"]["labels"][DEVICE_PLUGIN_LABEL] == "t4-ts-2"
    assert not run_module("gpu_machineset", args)["changed"]
    annotations = kube.custom_object(MACHINESETS, T4, NAMESPACE)["metadata"]["annotations"]
    assert annotations["gpushare.k8s/added-nodes"] == "1" and '"nodes": 1' in annotations["gpushare.k8s/scale-ups"]

    # A fourth T4 time-sliced 2 ways would count 2 more GPUs against the ClusterAutoscaler's tesla-t4 limit of 4.
    with audit_writes() as audit:
        over = run_module("gpu_machineset", dict(args, replicas=4))
    assert over.get("failed") and audit.writes == []
    assert "exceed the ClusterAutoscaler's gpus[tesla-t4] (at most 0 more fit" in over["msg"]

    # GPU pods on the two seeded T4s: the scale-in takes the new node, the only one without GPU pods.
    for number, name in enumerate(("gpu-t4-0", "gpu-t4-1")):
        gpu_pod(api_client, name, namespace, name="trainer-%d" % number)
    result = run_module("gpu_machineset", {"name": T4, "replicas": 2})
    assert not result.get("failed"), result.get("msg")
    assert list(result["removed_machines"].values()) == [new]
    assert new not in [node.metadata.name for node in kube.core.list_node().items]
    assert kube.custom_object(MACHINESETS, T4, NAMESPACE)["metadata"]["annotations"]["gpushare.k8s/added-nodes"] == "0"
    with audit_writes() as audit:
        busy = run_module("gpu_machineset", {"name": T4, "replicas": 1})
    assert busy.get("failed") and audit.writes == []
    assert "only 0 of its nodes run no GPU pod" in busy["msg"] and "%s/trainer-0" % namespace in busy["msg"]


def test_new_h100_machines_boot_into_the_mig_layout_checked_as_mig_parted_would(run_module, kube, audit_writes):
    name = "gpushare-ocp-gpu-h100-us-east-1a"
    kube.add_gpu_machineset(name, "nvidia-h100", 8, instance_type="PowerEdge-XE9680", autoscaler=False)
    kube.machineset_gpu_node(name, NAMESPACE)
    too_many = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 8}}]
    sharing = {"mode": "mig", "config_name": "h100-7x1g", "layout": too_many}
    with audit_writes() as audit:
        refused = run_module("gpu_machineset", {"name": name, "replicas": 2, "sharing": sharing})
    assert refused.get("failed") and audit.writes == []
    assert "1g.10gb" in refused["msg"]

    sharing["layout"] = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    result = run_module("gpu_machineset", {"name": name, "replicas": 2, "sharing": sharing})
    assert not result.get("failed"), result.get("msg")
    [new] = result["new_nodes"]
    node = kube.node(new)
    assert node["metadata"]["labels"]["nvidia.com/mig.config"] == "h100-7x1g"
    assert node["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] == "56"
    assert not run_module("gpu_machineset", {"name": name, "replicas": 2, "sharing": sharing})["changed"]
