"""The kubelet stand-in and the real scheduler: nodes stay Ready, bound pods run, GPUs are counted."""

import datetime

from simulator_helpers import gpu_pod, read_node, wait_for, wait_for_deletion, wait_for_node, wait_for_pod

from testbed.simulator.kube import as_dict, discard


def ready(node):
    return {condition["type"]: condition["status"] for condition in node["status"]["conditions"]}.get("Ready")


def test_every_node_is_ready_and_renews_its_lease(kube, profile):
    for node in as_dict(kube.core.list_node)["items"]:
        assert ready(node) == "True", node["metadata"]["name"]
    lease = as_dict(kube.coordination.read_namespaced_lease, "gpu-a100-0", "kube-node-lease")
    renewed = wait_for(
        kube.coordination.list_namespaced_lease,
        lambda item: item["spec"]["renewTime"] != lease["spec"]["renewTime"],
        "lease renewal",
        "kube-node-lease",
        field_selector="metadata.name=gpu-a100-0",
        timeout=45,
    )
    assert renewed["spec"]["holderIdentity"] == "gpu-a100-0"


def test_node_turned_unknown_is_reported_ready_again(kube):
    # What the node lifecycle controller writes after a gap in heartbeats.
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    unknown = [
        {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    ]
    discard(
        kube.core.patch_node_status,
        "worker-0",
        {"status": {"conditions": unknown}},
        _content_type="application/strategic-merge-patch+json",
    )
    wait_for_node(kube, "worker-0", lambda node: ready(node) == "True")


def test_bound_pod_runs_and_a_deleted_pod_goes_away(kube, namespace):
    discard(kube.core.create_namespaced_pod, namespace, gpu_pod("job", "gpu-t4-0"))
    pod = wait_for_pod(kube, namespace, "job", lambda pod: pod["status"].get("phase") == "Running")
    assert pod["status"]["podIP"] and all(status["ready"] for status in pod["status"]["containerStatuses"])
    assert {condition["type"]: condition["status"] for condition in pod["status"]["conditions"]}["Ready"] == "True"

    discard(kube.core.delete_namespaced_pod, "job", namespace)  # graceful, as kubectl delete
    wait_for_deletion(
        kube.core.list_namespaced_pod, "pod %s/job" % namespace, namespace, field_selector="metadata.name=job"
    )


def test_deployment_asking_more_gpus_than_the_node_has_leaves_pods_pending(kube, namespace):
    template = gpu_pod("worker", "gpu-a100-0")  # 2 GPUs on that node
    template["metadata"] = {"labels": {"app": "worker"}}
    discard(
        kube.apps.create_namespaced_deployment,
        namespace,
        {
            "metadata": {"name": "worker"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "worker"}}, "template": template},
        },
    )

    def placed(pods):
        phases = sorted(pod["status"].get("phase") for pod in pods)
        unschedulable = [
            pod
            for pod in pods
            if any(condition.get("reason") == "Unschedulable" for condition in pod["status"].get("conditions") or [])
        ]
        return phases == ["Pending", "Running", "Running"] and len(unschedulable) == 1

    # Any pod change may complete the picture: look at all of them each time.
    wait_for(
        kube.core.list_namespaced_pod,
        lambda _pod: placed(as_dict(kube.core.list_namespaced_pod, namespace, label_selector="app=worker")["items"]),
        "2 running pods and 1 unschedulable",
        namespace,
        label_selector="app=worker",
    )
    assert read_node(kube, "gpu-a100-0")["status"]["allocatable"]["nvidia.com/gpu"] == "2"
