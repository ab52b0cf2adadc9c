"""Workloads the integration tests start on the local cluster: GPU pods in a fresh namespace per test."""

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from integration_helpers import wait_for_object, wait_for_objects
from kubernetes import client

TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
KAPSULE_POOL_LABEL = "k8s.scaleway.com/pool-name"


def fresh_namespace(api_client, prefix="it-"):
    """A new namespace, returned once it is ready for pods.

    Kubernetes 1.20's ServiceAccount admission refuses pods ("No API token found", HTTP 500) until the token
    controller has given the namespace's default ServiceAccount its token, which can take seconds on a busy
    machine; a module that creates pods there (gpu_smoke_test) would fail on it, so the token is waited for (a
    watch, not a retry of the create).
    """
    name = prefix + uuid.uuid4().hex[:6]
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": name}})
    wait_for_object(
        core.list_namespaced_service_account,
        lambda account: bool(account.get("secrets")),
        "the default ServiceAccount of %s to get its token" % name,
        name,
        field_selector="metadata.name=default",
    )
    return name


@pytest.fixture
def namespace(api_client):
    """A fresh namespace per test: the reset deletes the previous ones, which may still be terminating."""
    return fresh_namespace(api_client)


def gpu_pod(api_client, node, namespace, name="trainer", pod_labels=None):
    """A pod bound to ``node`` holding one GPU, once the kubelet stand-in reports it Running."""
    core = client.CoreV1Api(api_client)
    body = {
        "metadata": {"name": name, "namespace": namespace, "labels": pod_labels or {"app": name}},
        "spec": {
            "nodeName": node,
            "tolerations": TOLERATE_GPU,
            "containers": [
                {
                    "name": "cuda",
                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    core.create_namespaced_pod(namespace, body)
    return wait_for_object(
        core.list_namespaced_pod,
        lambda pod: (pod.get("status") or {}).get("phase") == "Running",
        "pod %s/%s Running" % (namespace, name),
        namespace,
        field_selector="metadata.name=" + name,
    )


def guarded_gpu_pod(api_client, node, namespace):
    """``gpu_pod`` "trainer" on ``node``, with a PodDisruptionBudget that allows none of its pods to go, once the
    disruption controller has counted it: an eviction of the pod is then refused (429)."""
    gpu_pod(api_client, node, namespace, pod_labels={"app": "guarded"})
    budget = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded", "namespace": namespace},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    # Kubernetes 1.20 serves PodDisruptionBudgets as policy/v1beta1 only, which the typed client no longer has.
    custom = client.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object("policy", "v1beta1", namespace, "poddisruptionbudgets", budget)
    wait_for_object(
        custom.list_namespaced_custom_object,
        lambda pdb: (pdb.get("status") or {}).get("currentHealthy") == 1,
        "the disruption controller to count the guarded pod",
        "policy",
        "v1beta1",
        namespace,
        "poddisruptionbudgets",
    )


def pod_exists(api_client, namespace, name):
    try:
        client.CoreV1Api(api_client).read_namespaced_pod(name, namespace)
        return True
    except client.exceptions.ApiException as exc:
        assert exc.status == 404
        return False


def mig_pod(name, profile, pool="gpu-h100"):
    """A pod of the Kapsule fleet's ``pool`` (None: of no pool) asking for one ``nvidia.com/mig-<profile>``
    instance."""
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {KAPSULE_POOL_LABEL: pool} if pool else {},
            "tolerations": TOLERATE_GPU,
            "containers": [
                {
                    "name": "cuda",
                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "resources": {"limits": {"nvidia.com/mig-" + profile: "1"}},
                }
            ],
        },
    }


def create_pods(api_client, namespace, pods):
    """All at once (eight requests in flight), as a burst."""
    core = client.CoreV1Api(api_client)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda body: core.create_namespaced_pod(namespace, body), pods))


def wait_for_pods(api_client, namespace, running, waiting, timeout):
    """Until ``running`` pods run and ``waiting`` are unschedulable (the scheduler's verdict, after the plan)."""

    def problem(pods):
        phases = [(pod.get("status") or {}).get("phase") for pod in pods]
        unschedulable = [
            pod
            for pod in pods
            if any(
                c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                for c in (pod.get("status") or {}).get("conditions") or []
            )
        ]
        if phases.count("Running") == running and len(unschedulable) == waiting:
            return None
        return "%d running, %d unschedulable of %d" % (phases.count("Running"), len(unschedulable), len(pods))

    wait_for_objects(
        client.CoreV1Api(api_client).list_namespaced_pod,
        problem,
        "%d pods running and %d unschedulable in %s" % (running, waiting, namespace),
        namespace,
        timeout=timeout,
    )
