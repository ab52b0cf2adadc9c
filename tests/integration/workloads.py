"""Workloads the integration tests start on the local cluster: GPU pods in a fresh namespace per test."""

import uuid

import pytest
from integration_helpers import wait_for_object
from kubernetes import client

TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


@pytest.fixture
def namespace(api_client):
    """A fresh namespace per test: the reset deletes the previous ones, which may still be terminating."""
    name = "it-" + uuid.uuid4().hex[:6]
    client.CoreV1Api(api_client).create_namespace({"metadata": {"name": name}})
    return name


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
    # Kubernetes 1.20's ServiceAccount admission refuses pods ("No API token found") until the token
    # controller has given the namespace's default ServiceAccount its token, which can take seconds on a
    # busy machine: wait for it (a watch) instead of retrying the create.
    wait_for_object(
        core.list_namespaced_service_account,
        lambda account: bool(account.get("secrets")),
        "the default ServiceAccount of %s to get its token" % namespace,
        namespace,
        field_selector="metadata.name=default",
    )
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
