# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes calls the collection makes, each returning plain dicts.

Responses are read raw (``_preload_content=False``) and parsed as JSON: the domain logic works on
the API's own JSON shape, and a 1,000-node LIST parses in a fraction of the time the typed models
take. Every method converts API failures into ``GpuShareError`` naming the object involved."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import NOT_FOUND, GpuShareError, api_errors

try:
    from kubernetes import client as k8s
except ImportError:  # reported by GpuShareModule
    k8s = None

CLUSTER_POLICY_GROUP = "nvidia.com"
CLUSTER_POLICY_VERSION = "v1"
CLUSTER_POLICY_PLURAL = "clusterpolicies"
MERGE_PATCH = "application/merge-patch+json"


def _json(response):
    return json.loads(response.data)


class KubeApi(object):
    """Thin wrappers over the typed APIs; no policy, no retries beyond what a call needs."""

    def __init__(self, api_client):
        self.api_client = api_client
        self.core = k8s.CoreV1Api(api_client)
        self.apps = k8s.AppsV1Api(api_client)
        self.custom = k8s.CustomObjectsApi(api_client)

    # --- nodes -----------------------------------------------------------------------------
    @api_errors("list nodes")
    def list_nodes(self, label_selector=None):
        """All nodes (or those matching the selector) and the list's resourceVersion, for a watch."""
        kwargs = {"label_selector": label_selector} if label_selector else {}
        body = _json(self.core.list_node(_preload_content=False, **kwargs))
        return body["items"], body["metadata"]["resourceVersion"]

    @api_errors("patch node {name}")
    def patch_node(self, name, patch):
        return _json(self.core.patch_node(name, patch, _content_type=MERGE_PATCH, _preload_content=False))

    def watch_nodes(self, resource_version, timeout_seconds, label_selector=None):
        """Yield (event type, node dict) from a node watch that ends after ``timeout_seconds``."""
        kwargs = {"label_selector": label_selector} if label_selector else {}
        return self._watch(self.core.list_node, resource_version, timeout_seconds, "watch nodes", **kwargs)

    def _watch(self, list_function, resource_version, timeout_seconds, what, **kwargs):
        from kubernetes.client.exceptions import ApiException

        try:
            response = list_function(
                watch=True,
                resource_version=resource_version,
                timeout_seconds=max(1, int(timeout_seconds)),
                allow_watch_bookmarks=True,
                _preload_content=False,
                **kwargs,
            )
        except ApiException as exc:
            raise GpuShareError(
                "Failed to %s: %s (HTTP %s)" % (what, exc.reason, exc.status), status=exc.status, reason=exc.reason
            )
        try:
            for line in response:
                if not line.strip():
                    continue
                event = json.loads(line)
                if event["type"] == "ERROR":
                    status = event["object"]
                    raise GpuShareError(
                        "Failed to %s: %s" % (what, status.get("message")),
                        status=status.get("code"),
                        reason=status.get("reason"),
                    )
                yield event["type"], event["object"]
        finally:
            response.release_conn()

    # --- pods ------------------------------------------------------------------------------
    @api_errors("list pods")
    def list_pods(self, field_selector=None, label_selector=None):
        kwargs = dict((k, v) for k, v in (("field_selector", field_selector), ("label_selector", label_selector)) if v)
        return _json(self.core.list_pod_for_all_namespaces(_preload_content=False, **kwargs))["items"]

    @api_errors("list pods on node {node_name}")
    def list_pods_on_node(self, node_name):
        """The pods bound to a node and the list's resourceVersion, for a watch."""
        body = _json(
            self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node_name, _preload_content=False)
        )
        return body["items"], body["metadata"]["resourceVersion"]

    def watch_pods_on_node(self, node_name, resource_version, timeout_seconds):
        return self._watch(
            self.core.list_pod_for_all_namespaces,
            resource_version,
            timeout_seconds,
            "watch pods on node %s" % node_name,
            field_selector="spec.nodeName=%s" % node_name,
        )

    @api_errors("evict pod {namespace}/{name}")
    def evict_pod(self, namespace, name, policy_api_version="policy/v1"):
        body = {
            "apiVersion": policy_api_version,
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        return _json(self.core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False))

    @api_errors("list events of {kind} {name}")
    def list_events(self, kind, name):
        selector = "involvedObject.kind=%s,involvedObject.name=%s" % (kind, name)
        return _json(self.core.list_event_for_all_namespaces(field_selector=selector, _preload_content=False))["items"]

    # --- config maps -----------------------------------------------------------------------
    @api_errors("read ConfigMap {namespace}/{name}")
    def get_config_map(self, namespace, name):
        """The ConfigMap, or None when it does not exist."""
        return self._get_or_none(self.core.read_namespaced_config_map, name, namespace)

    @api_errors("list ConfigMaps in {namespace}")
    def list_config_maps(self, namespace):
        return _json(self.core.list_namespaced_config_map(namespace, _preload_content=False))["items"]

    @api_errors("create ConfigMap {namespace}/{name}")
    def create_config_map(self, namespace, name, data, annotations=None):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
        if annotations:
            body["metadata"]["annotations"] = annotations
        return _json(self.core.create_namespaced_config_map(namespace, body, _preload_content=False))

    @api_errors("patch ConfigMap {namespace}/{name}")
    def patch_config_map(self, namespace, name, patch):
        return _json(
            self.core.patch_namespaced_config_map(
                name, namespace, patch, _content_type=MERGE_PATCH, _preload_content=False
            )
        )

    @api_errors("delete ConfigMap {namespace}/{name}")
    def delete_config_map(self, namespace, name):
        self.core.delete_namespaced_config_map(name, namespace, _preload_content=False)

    @api_errors("read namespace {name}")
    def get_namespace(self, name):
        return self._get_or_none(self.core.read_namespace, name)

    # --- the GPU operator ------------------------------------------------------------------
    @api_errors("list ClusterPolicies (nvidia.com/v1)")
    def list_cluster_policies(self):
        """Every ClusterPolicy; an empty list when the CRD is not installed."""
        from kubernetes.client.exceptions import ApiException

        try:
            body = _json(
                self.custom.list_cluster_custom_object(
                    CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL, _preload_content=False
                )
            )
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return []
            raise
        return body["items"]

    @api_errors("patch ClusterPolicy {name}")
    def patch_cluster_policy(self, name, patch):
        return _json(
            self.custom.patch_cluster_custom_object(
                CLUSTER_POLICY_GROUP,
                CLUSTER_POLICY_VERSION,
                CLUSTER_POLICY_PLURAL,
                name,
                patch,
                _content_type=MERGE_PATCH,
                _preload_content=False,
            )
        )

    @api_errors("read DaemonSet {namespace}/{name}")
    def get_daemon_set(self, namespace, name):
        return self._get_or_none(self.apps.read_namespaced_daemon_set, name, namespace)

    @api_errors("list DaemonSets in {namespace}")
    def list_daemon_sets(self, namespace):
        """The namespace's DaemonSets and the list's resourceVersion, for a watch."""
        body = _json(self.apps.list_namespaced_daemon_set(namespace, _preload_content=False))
        return body["items"], body["metadata"]["resourceVersion"]

    def watch_daemon_sets(self, namespace, resource_version, timeout_seconds):
        return self._watch(
            self.apps.list_namespaced_daemon_set,
            resource_version,
            timeout_seconds,
            "watch DaemonSets in %s" % namespace,
            namespace=namespace,
        )

    @api_errors("patch DaemonSet {namespace}/{name}")
    def patch_daemon_set(self, namespace, name, patch):
        return _json(
            self.apps.patch_namespaced_daemon_set(
                name, namespace, patch, _content_type=MERGE_PATCH, _preload_content=False
            )
        )

    @staticmethod
    def _get_or_none(read_function, *args):
        from kubernetes.client.exceptions import ApiException

        try:
            return _json(read_function(*args, _preload_content=False))
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return None
            raise
