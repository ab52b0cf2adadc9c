"""Workloads the integration tests start on the local cluster: GPU pods in a fresh namespace per test."""

import uuid

import pytest
from integration_helpers import wait_for_object
from kubernetes import client

TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


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


def pod_exists(api_client, namespace, name):
    try:
        client.CoreV1Api(api_client).read_namespaced_pod(name, namespace)
        return True
    except client.exceptions.ApiException as exc:
        assert exc.status == 404
        return False
