"""gpu_smoke_test against the local cluster (issue 10): the real kube-scheduler places the replicas and the
kubelet stand-in runs them; 11 replicas on 8 time-sliced slices give 8 running and 3 pending."""

import pytest
from integration_helpers import ONE_PROFILE
from kubernetes import client

MODULE = "gpu_smoke_test"
T4 = {"cluster-api/accelerator": "tesla-t4"}


def ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    return result


def leftovers(api_client, namespace):
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    selector = "gpushare.k8s/smoke-test"
    return [p.metadata.name for p in core.list_namespaced_pod(namespace, label_selector=selector).items] + [
        d.metadata.name for d in apps.list_namespaced_deployment(namespace, label_selector=selector).items
    ]


@pytest.mark.profiles("openshift")
def test_eleven_replicas_on_eight_slices_eight_run_and_three_stay_pending(run_module, api_client, namespace):
    shared = run_module("gpu_timeslicing", {"replicas": 4, "nodes": {"selector": "cluster-api/accelerator=tesla-t4"}})
    assert not shared.get("failed"), shared.get("msg")
    result = ok(run_module(MODULE, {"replicas": 11, "node_selector": T4, "workload_namespace": namespace}))
    assert (result["running"], result["pending"], result["failed_replicas"]) == (8, 3, 0)
    [(reason, count)] = result["pending_reasons"].items()
    assert count == 3 and "Insufficient nvidia.com/gpu" in reason
    nodes = sorted(pod["node"] for pod in result["pods"] if pod["outcome"] == "got a slice")
    assert nodes == ["gpu-t4-0"] * 4 + ["gpu-t4-1"] * 4
    assert result["changed"] is False and leftovers(api_client, namespace) == []


def test_one_pod_per_gpu_node_as_bare_pods_gets_a_slice_and_is_cleaned_up(run_module, api_client, namespace, kube):
    result = ok(run_module(MODULE, {"kind": "pod", "replicas": 2, "workload_namespace": namespace}))
    assert (result["running"], result["pending"]) == (2, 0)
    assert all(pod["node"] in kube.gpu_nodes() for pod in result["pods"])
    assert leftovers(api_client, namespace) == []


@ONE_PROFILE
def test_check_mode_creates_nothing_and_bad_input_is_refused(run_module, api_client, namespace, audit_writes):
    with audit_writes() as audit:
        checked = ok(run_module(MODULE, {"replicas": 3, "workload_namespace": namespace}, check=True))
        bad = run_module(MODULE, {"resource": "cpu", "workload_namespace": namespace})
        missing = run_module(MODULE, {"workload_namespace": "no-such-namespace"})
    assert audit.writes == []
    spec = checked["workload"]["spec"]["template"]["spec"]
    limits = spec["containers"][0]["resources"]
    assert limits["requests"] == limits["limits"] == {"nvidia.com/gpu": "1"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert bad["failed"] and "nvidia.com/" in bad["msg"]
    assert missing["failed"] and "no-such-namespace" in missing["msg"]


@ONE_PROFILE
def test_without_cleanup_the_workload_stays_and_a_second_run_refuses(run_module, api_client, namespace):
    first = ok(run_module(MODULE, {"workload_namespace": namespace, "cleanup": False}))
    assert first["changed"] is True and first["running"] == 1
    second = run_module(MODULE, {"workload_namespace": namespace})
    assert second["failed"] and "already exist" in second["msg"]
