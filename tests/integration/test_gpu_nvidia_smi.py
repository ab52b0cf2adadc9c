"""gpu_nvidia_smi against the local cluster (issue 10): pods/exec through the real API server to the simulated
kubelets, whose nvidia-smi prints each node's simulated GPUs and the MIG layout mig-manager applied
(testbed/simulator/kubelet_exec.py, nvidia_smi.py). Every GPU node is read in its driver pod, or in its toolkit
pod where the driver is preinstalled; a node without either is named with the DaemonSets looked for; a kubelet
the API server cannot reach is said to be so; check mode reads the same and writes nothing."""

import json
import socket

import pytest
from integration_helpers import MERGE_PATCH, ONE_PROFILE, wait_for_object
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from testbed.simulator import nvml
from testbed.simulator.kube import discard

MODULE = "gpu_nvidia_smi"
DRIVER_DAEMONSET = "nvidia-driver-daemonset"
TOOLKIT_DAEMONSET = "nvidia-container-toolkit-daemonset"
KUBELET_HINT = (
    "The kubelet on that node did not answer (the API server could not connect to it: check the node's address "
    "and kubelet port, status.daemonEndpoints.kubeletEndpoint, 10250 by default, from the control plane)."
)


def owner(pod):
    return [item["name"] for item in pod["metadata"].get("ownerReferences") or []]


def running_pod(api_client, namespace, node, daemonset):
    """The pod of ``daemonset`` on ``node`` once it is Running (the DaemonSet controller and the simulated
    kubelet may still be at it right after the reset)."""

    def wanted(pod):
        return (
            daemonset in owner(pod)
            and not pod["metadata"].get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase") == "Running"
        )

    return wait_for_object(
        client.CoreV1Api(api_client).list_namespaced_pod,
        wanted,
        "a Running %s pod on %s" % (daemonset, node),
        namespace,
        field_selector="spec.nodeName=" + node,
    )


def wait_until_no_driver_pod(api_client, namespace, node, timeout=60):
    """Watch until the driver pod on ``node`` is being deleted or gone (the DaemonSet controller's doing)."""
    core = client.CoreV1Api(api_client)
    listed = json.loads(
        core.list_namespaced_pod(namespace, field_selector="spec.nodeName=" + node, _preload_content=False).data
    )
    if not any(
        DRIVER_DAEMONSET in owner(pod) and not pod["metadata"].get("deletionTimestamp") for pod in listed["items"]
    ):
        return
    response = core.list_namespaced_pod(
        namespace,
        field_selector="spec.nodeName=" + node,
        watch=True,
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=timeout,
        _preload_content=False,
    )
    try:
        for line in iter_resp_lines(response):
            event = json.loads(line) if line else None
            if event and DRIVER_DAEMONSET in owner(event["object"]):
                if event["type"] == "DELETED" or event["object"]["metadata"].get("deletionTimestamp"):
                    return
    finally:
        response.release_conn()
    raise AssertionError("the driver pod on %s was not deleted within %ss" % (node, timeout))


def hardware(kube, node):
    return json.loads(kube.node(node)["metadata"]["annotations"]["sim.gpushare.k8s/hardware"])


def without_run_details(result):
    # Leave out the harness's own run details (_stdout, _seconds, _peak_rss_mib).
    return dict((key, value) for key, value in result.items() if not key.startswith("_"))


def test_every_gpu_node_is_read_in_its_driver_pod_and_check_mode_writes_nothing(
    run_module, kube, profile, api_client, audit_writes
):
    namespace = profile.operator_namespace
    driver_pods = dict(
        (node, running_pod(api_client, namespace, node, DRIVER_DAEMONSET)["metadata"]["name"])
        for node in kube.gpu_nodes()
    )
    result = run_module(MODULE, {})
    assert not result["failed"], result.get("msg")
    assert result["namespace"] == namespace and result["changed"] is False
    assert sorted(result["nodes"]) == sorted(driver_pods)
    uuids = []
    for node, pod in driver_pods.items():
        report = result["nodes"][node]
        assert (report["pod"], report["container"], report["error"]) == (
            "%s/%s" % (namespace, pod),
            DRIVER_DAEMONSET,
            None,
        )
        truth = hardware(kube, node)
        assert [(gpu["index"], gpu["name"], gpu["mig_devices"]) for gpu in report["gpus"]] == [
            (index, nvml.gpu(truth["product"]).nvml_name, []) for index in range(truth["count"])
        ], node
        assert report["gpu_instances"] == []  # MIG is off everywhere on the seeded fleet
        uuids += [gpu["uuid"] for gpu in report["gpus"]]
    assert len(set(uuids)) == len(uuids)

    with audit_writes() as audit:
        checked = run_module(MODULE, {}, check=True)
    assert without_run_details(checked) == without_run_details(result)
    assert audit.writes == []
    # Check mode ran both commands too, in each driver pod.
    execs = [event for event in audit.requests if (event.get("objectRef") or {}).get("subresource") == "exec"]
    assert sorted(event["objectRef"]["name"] for event in execs) == sorted(list(driver_pods.values()) * 2)


@pytest.mark.profiles("openshift")
def test_mig_devices_and_gpu_instances_after_mig_changes(run_module):
    changed = run_module(
        "gpu_mig_config", {"nodes": {"names": ["gpu-h100-0"]}, "strategy": "mixed", "config": "all-balanced"}
    )
    assert not changed.get("failed"), changed.get("msg")
    half_and_whole = [
        {"devices": [0], "mig-enabled": True, "mig-devices": {"3g.20gb": 2}},
        {"devices": [1], "mig-enabled": False},
    ]
    changed = run_module(
        "gpu_mig_config",
        {"nodes": {"names": ["gpu-a100-0"]}, "strategy": "mixed", "layout": half_and_whole, "config_name": "half"},
    )
    assert not changed.get("failed"), changed.get("msg")

    result = run_module(MODULE, {"nodes": {"names": ["gpu-h100-0", "gpu-a100-0", "gpu-h100-1"]}})
    assert not result["failed"], result.get("msg")
    h100 = result["nodes"]["gpu-h100-0"]
    assert len(h100["gpus"]) == 8
    for gpu in h100["gpus"]:
        # Devices by GPU-instance id: the 3g's half, the 2g's quarter, then the eighths of the two 1g.
        assert [(device["index"], device["profile"]) for device in gpu["mig_devices"]] == [
            (0, "3g.40gb"),
            (1, "2g.20gb"),
            (2, "1g.10gb"),
            (3, "1g.10gb"),
        ]
        assert gpu["mig_devices"][0]["uuid"].startswith("MIG-")
    # What mig-parted's all-balanced makes of an H100 80GB HBM3, as a real one lists it (NVIDIA/DCGM#138).
    assert [instance for instance in h100["gpu_instances"] if instance["gpu"] == 0] == [
        dict(gpu=0, profile="1g.10gb", profile_id=19, instance_id=9, placement=dict(start=2, size=1)),
        dict(gpu=0, profile="1g.10gb", profile_id=19, instance_id=10, placement=dict(start=3, size=1)),
        dict(gpu=0, profile="2g.20gb", profile_id=14, instance_id=3, placement=dict(start=0, size=2)),
        dict(gpu=0, profile="3g.40gb", profile_id=9, instance_id=2, placement=dict(start=4, size=4)),
    ]
    assert sorted(set(instance["gpu"] for instance in h100["gpu_instances"])) == list(range(8))
    assert len(h100["gpu_instances"]) == 32

    a100 = result["nodes"]["gpu-a100-0"]
    assert [[device["profile"] for device in gpu["mig_devices"]] for gpu in a100["gpus"]] == [
        ["3g.20gb", "3g.20gb"],
        [],
    ]
    assert a100["gpu_instances"] == [
        dict(gpu=0, profile="3g.20gb", profile_id=9, instance_id=1, placement=dict(start=0, size=4)),
        dict(gpu=0, profile="3g.20gb", profile_id=9, instance_id=2, placement=dict(start=4, size=4)),
    ]
    assert result["nodes"]["gpu-h100-1"]["gpu_instances"] == []  # not changed


def test_a_preinstalled_driver_is_read_in_the_toolkit_pod(run_module, kube, profile, api_client):
    node = kube.gpu_nodes()[0]
    namespace = profile.operator_namespace
    # What a node with the driver on the host has: the operator does not deploy its driver there.
    kube.label_node(node, {"nvidia.com/gpu.deploy.driver": "false"})
    wait_until_no_driver_pod(api_client, namespace, node)
    toolkit = running_pod(api_client, namespace, node, TOOLKIT_DAEMONSET)["metadata"]["name"]
    report = run_module(MODULE, {"nodes": {"names": [node]}})["nodes"][node]
    assert (report["pod"], report["container"], report["error"]) == (
        "%s/%s" % (namespace, toolkit),
        TOOLKIT_DAEMONSET,
        None,
    )
    assert len(report["gpus"]) == hardware(kube, node)["count"]


def closed_port():
    """A loopback port nothing listens on (just released by the kernel)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@ONE_PROFILE
def test_a_kubelet_the_api_server_cannot_reach_is_said_so_once(run_module, kube, profile, api_client):
    nodes = kube.gpu_nodes()[:2]
    port = closed_port()
    for node in nodes:
        # As a kubelet that went down, or listens where the node's status does not say.
        discard(
            client.CoreV1Api(api_client).patch_node_status,
            node,
            {"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}},
            _content_type=MERGE_PATCH,
        )
    result = run_module(MODULE, {"nodes": {"names": nodes}})
    assert result["failed"]
    for node in nodes:
        report = result["nodes"][node]
        pod = running_pod(api_client, profile.operator_namespace, node, DRIVER_DAEMONSET)["metadata"]["name"]
        assert report["error"].startswith(
            "pods/exec to %s/%s (container %s) on node %s failed: error dialing backend: dial tcp 127.0.0.1:%d: "
            "connect: connection refused" % (profile.operator_namespace, pod, DRIVER_DAEMONSET, node, port)
        ), report["error"]
        assert report["error"].endswith(KUBELET_HINT)
        assert (report["gpus"], report["gpu_instances"]) == (None, None)
    assert result["msg"].startswith("gpu_nvidia_smi could not read 2 of 2 node(s): %s: pods/exec to " % nodes[0])
    assert result["msg"].count(KUBELET_HINT) == 1


def test_a_node_without_driver_or_toolkit_pod_is_named_and_fail_on_error_false_reports_it(run_module, kube, profile):
    worker = kube.cpu_nodes()[0]
    result = run_module(MODULE, {"nodes": {"names": [worker]}, "fail_on_error": False})
    assert not result["failed"], result.get("msg")
    assert result["nodes"][worker] == {
        "pod": None,
        "container": None,
        "gpus": None,
        "gpu_instances": None,
        "error": "No pod of the DaemonSet nvidia-driver-daemonset* (the operator's driver) or "
        "nvidia-container-toolkit-daemonset (preinstalled drivers) runs on node %s in namespace %s: check that "
        "the GPU Operator deploys its operands there (the node's nvidia.com/gpu.deploy.driver and "
        "nvidia.com/gpu.deploy.container-toolkit labels, taints and tolerations)."
        % (worker, profile.operator_namespace),
    }


@ONE_PROFILE
def test_an_exec_timeout_below_one_second_is_refused(run_module, audit_writes):
    with audit_writes() as audit:
        result = run_module(MODULE, {"exec_timeout": 0})
    # Refused with every option Kubernetes or the wait would refuse, before any request (args.option_problems).
    assert result["failed"] and "exec_timeout is 0; give a number of seconds above 0" in result["msg"], result["msg"]
    assert audit.writes == []
