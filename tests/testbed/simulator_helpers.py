"""Helpers for the simulator's tests: waiting with watches, reading nodes, acting as a kubectl user."""

import json
import uuid

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from testbed.simulator.kube import CLUSTER_POLICY, MERGE_PATCH, as_dict, discard

TIMEOUT = 30


# waiting ---------------------------------------------------------------------------------------


def wait_for(list_call, predicate, what, *args, timeout=TIMEOUT, since=None, **kwargs):
    """The first object of ``list_call`` (then of its watch) that satisfies ``predicate``.

    Lists, checks every item, then watches from the list's resourceVersion, so no change is missed.
    With ``since`` (a resourceVersion), only changes after it count: a state that came and went
    between that write and the list is still seen. On timeout, fails with the last object seen.
    """
    last = None
    if since is None:
        listed = as_dict(list_call, *args, **kwargs)
        for item in listed["items"]:
            last = item
            if predicate(item):
                return item
        since = listed["metadata"]["resourceVersion"]
    response = list_call(
        *args, watch=True, resource_version=since, timeout_seconds=timeout, _preload_content=False, **kwargs
    )
    try:
        for line in iter_resp_lines(response):
            event = json.loads(line) if line else None
            if event and event["type"] in ("ADDED", "MODIFIED"):
                last = event["object"]
                if predicate(last):
                    return last
    finally:
        response.release_conn()
    pytest.fail(
        "timed out after %ss waiting for %s; last seen: %s" % (timeout, what, json.dumps(_summary(last), indent=1))
    )


def wait_for_deletion(list_call, what, *args, timeout=TIMEOUT, **kwargs):
    """Wait (with a watch) until ``list_call`` lists nothing."""
    listed = as_dict(list_call, *args, **kwargs)
    if not listed["items"]:
        return
    response = list_call(
        *args,
        watch=True,
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=timeout,
        _preload_content=False,
        **kwargs,
    )
    try:
        for line in iter_resp_lines(response):
            if line and json.loads(line)["type"] == "DELETED":
                return
    finally:
        response.release_conn()
    pytest.fail("timed out after %ss waiting for the deletion of %s" % (timeout, what))


def _summary(obj):
    if not obj:
        return obj
    return {
        "name": obj["metadata"]["name"],
        "labels": obj["metadata"].get("labels"),
        "status": {
            key: value
            for key, value in (obj.get("status") or {}).items()
            if key in ("capacity", "allocatable", "phase", "conditions")
        },
    }


def wait_for_node(kube, name, predicate, timeout=TIMEOUT, since=None):
    """Wait (with a watch) until node ``name`` satisfies ``predicate(node)``; returns the node."""
    return wait_for(
        kube.core.list_node,
        predicate,
        "node " + name,
        timeout=timeout,
        since=since,
        field_selector="metadata.name=" + name,
    )


def wait_for_node_event(kube, node, reason, timeout=TIMEOUT):
    """Wait for a core/v1 Event with ``reason`` on Node ``node``; returns it."""
    return wait_for(
        kube.core.list_namespaced_event,
        lambda event: True,
        "event %s on node %s" % (reason, node),
        "default",
        timeout=timeout,
        field_selector="involvedObject.kind=Node,involvedObject.name=%s,reason=%s" % (node, reason),
    )


def wait_for_pod(kube, namespace, name, predicate, timeout=TIMEOUT):
    return wait_for(
        kube.core.list_namespaced_pod,
        predicate,
        "pod %s/%s" % (namespace, name),
        namespace,
        timeout=timeout,
        field_selector="metadata.name=" + name,
    )


# reading ---------------------------------------------------------------------------------------


def labels(node):
    return node["metadata"].get("labels") or {}


def gpu_labels(node, *keys):
    """``{key: value}`` of ``nvidia.com/<key>`` labels, for compact assertions."""
    return {key: labels(node).get("nvidia.com/" + key) for key in keys}


def nvidia_resources(node, field):
    return {key: value for key, value in node["status"][field].items() if key.startswith("nvidia.com/")}


def read_node(kube, name):
    return as_dict(kube.core.read_node, name)


# acting as a user ------------------------------------------------------------------------------


def patch_policy(kube, profile, spec):
    """``kubectl patch clusterpolicy <name> --type merge -p '{"spec": ...}'``"""
    kube.custom.patch_cluster_custom_object(
        CLUSTER_POLICY["group"],
        CLUSTER_POLICY["version"],
        CLUSTER_POLICY["plural"],
        profile.policy_name,
        {"spec": spec},
        _content_type=MERGE_PATCH,
    )


def label_node(kube, name, node_labels):
    """``kubectl label node <name> --overwrite k=v`` for each item (None removes the label).

    Returns the node's resourceVersion after the change, to wait for what follows it.
    """
    return as_dict(kube.core.patch_node, name, {"metadata": {"labels": node_labels}}, _content_type=MERGE_PATCH)[
        "metadata"
    ]["resourceVersion"]


def annotate_node(kube, name, annotations):
    discard(kube.core.patch_node, name, {"metadata": {"annotations": annotations}}, _content_type=MERGE_PATCH)


def put_configmap(kube, namespace, name, data):
    """Create the ConfigMap, or replace its data (``kubectl apply``)."""
    body = {"metadata": {"name": name, "namespace": namespace}, "data": data}
    try:
        discard(kube.core.create_namespaced_config_map, namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        discard(kube.core.patch_namespaced_config_map, name, namespace, {"data": data}, _content_type=MERGE_PATCH)


def restart_device_plugin(kube, profile):
    """``kubectl rollout restart daemonset nvidia-device-plugin-daemonset``"""
    discard(
        kube.apps.patch_namespaced_daemon_set,
        "nvidia-device-plugin-daemonset",
        profile.operator_namespace,
        {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": uuid.uuid4().hex}}}}},
        _content_type=MERGE_PATCH,
    )


def gpu_pod(name, node, resource="nvidia.com/gpu", count=1):
    """A pod pinned to ``node`` that asks for ``count`` of ``resource`` and tolerates the GPU taint."""
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "cuda",
                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubi9",
                    "resources": {"limits": {resource: str(count)}},
                }
            ],
        },
    }
