"""gpu_nvidia_smi against the local cluster (issue 10). Its nodes are simulated: no kubelet answers pods/exec,
so what is tested is that the module finds the driver pod of every GPU node, tries, and says clearly why it
cannot run there; that a node without driver or toolkit pod is named with the DaemonSets looked for; and
that check mode reads the same and writes nothing. The parsing of real nvidia-smi output is unit-tested
(tests/unit/plugins/module_utils/test_nvidia_smi.py)."""

from integration_helpers import wait_for_object
from kubernetes import client

MODULE = "gpu_nvidia_smi"
DRIVER_DAEMONSET = "nvidia-driver-daemonset"
KUBELET_MESSAGE = (
    "The kubelet on that node did not answer (the API server could not connect to it: check the node's address and "
    "port 10250 from the control plane); on the gpushare.k8s local test cluster nodes are simulated and have no "
    "kubelet, so gpu_nvidia_smi cannot run there."
)


def running_driver_pod(api_client, namespace, node):
    """The driver DaemonSet's pod on ``node`` once it is Running (the DaemonSet controller and the simulated
    kubelet may still be at it right after the reset)."""

    def wanted(pod):
        owners = [owner["name"] for owner in pod["metadata"].get("ownerReferences") or []]
        return (
            pod["spec"].get("nodeName") == node
            and DRIVER_DAEMONSET in owners
            and not pod["metadata"].get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase") == "Running"
        )

    return wait_for_object(
        client.CoreV1Api(api_client).list_namespaced_pod, wanted, "a Running driver pod on %s" % node, namespace
    )


def without_run_details(result):
    return dict((key, value) for key, value in result.items() if key not in ("_stdout", "_seconds"))


def test_every_gpu_node_is_tried_in_its_driver_pod_and_the_failure_says_why(
    run_module, kube, profile, api_client, audit_writes
):
    namespace = profile.operator_namespace
    driver_pods = dict(
        (node, running_driver_pod(api_client, namespace, node)["metadata"]["name"]) for node in kube.gpu_nodes()
    )
    result = run_module(MODULE, {})
    assert result["failed"], result["_stdout"]
    assert result["namespace"] == namespace and result["changed"] is False
    assert sorted(result["nodes"]) == sorted(driver_pods)
    for node, pod in driver_pods.items():
        report = result["nodes"][node]
        assert report["pod"] == "%s/%s" % (namespace, pod)
        assert (report["gpus"], report["gpu_instances"]) == (None, None)
        assert report["error"].startswith(
            "pods/exec to %s/%s (container %s) on node %s failed: " % (namespace, pod, DRIVER_DAEMONSET, node)
        ), report["error"]
        assert report["error"].endswith(KUBELET_MESSAGE)
    assert result["msg"].startswith("gpu_nvidia_smi could not read %d of %d node(s): " % ((len(driver_pods),) * 2))
    assert result["msg"].count(KUBELET_MESSAGE) == 1

    with audit_writes() as audit:
        checked = run_module(MODULE, {}, check=True)
    assert without_run_details(checked) == without_run_details(result)
    assert audit.writes == []
    # Check mode tried the exec too, once per GPU node (the second command is not tried after a failure).
    execs = [event for event in audit.requests if (event.get("objectRef") or {}).get("subresource") == "exec"]
    assert sorted(event["objectRef"]["name"] for event in execs) == sorted(driver_pods.values())


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
