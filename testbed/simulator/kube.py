"""Thin helpers over the Kubernetes client that work on plain dicts, as the collection does."""

import datetime
import json
import uuid

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from testbed.simulator.names import NODE_EVENT_NAMESPACE

MERGE_PATCH = "application/merge-patch+json"
CLUSTER_POLICY = dict(group="nvidia.com", version="v1", plural="clusterpolicies")


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def as_dict(call, *args, **kwargs):
    """Run a client call and return its JSON body as a dict (no model deserialisation)."""
    response = call(*args, _preload_content=False, **kwargs)
    return json.loads(response.data)


def discard(call, *args, **kwargs):
    """Run a client call whose answer nobody needs, and read that answer to its end, so that its connection goes back
    to the client's pool. An unread answer keeps its connection: the next request opens a new one, with a TLS
    handshake at both ends (nine per reset between tests, and one per pod, event or status a simulator wrote)."""
    call(*args, _preload_content=False, **kwargs).drain_conn()


def get_or_none(call, *args, **kwargs):
    try:
        return as_dict(call, *args, **kwargs)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def merge_patch(call, *args, body):
    return as_dict(call, *args, body=body, _content_type=MERGE_PATCH)


class Kube(object):
    """The API groups the test bed uses, sharing one ApiClient."""

    def __init__(self, api_client):
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.coordination = client.CoordinationV1Api(api_client)
        self.extensions = client.ApiextensionsV1Api(api_client)

    def node_event(self, node, reason, message, component):
        """Record a Warning Event on a Node, where ``kubectl describe node`` shows it."""
        timestamp = now_rfc3339()
        name = node["metadata"]["name"]
        discard(
            self.core.create_namespaced_event,
            NODE_EVENT_NAMESPACE,
            {
                "metadata": {"name": "%s.%s" % (name, uuid.uuid4().hex[:16]), "namespace": NODE_EVENT_NAMESPACE},
                "involvedObject": {
                    "kind": "Node",
                    "apiVersion": "v1",
                    "name": name,
                    "uid": node["metadata"]["uid"],
                },
                "reason": reason,
                "message": message,
                "type": "Warning",
                "source": {"component": component, "host": name},
                "firstTimestamp": timestamp,
                "lastTimestamp": timestamp,
                "count": 1,
            },
        )
