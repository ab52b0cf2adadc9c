# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes calls the collection makes, each returning plain dicts.

Responses are read raw (``_preload_content=False``) and parsed as JSON: the domain logic works on
the API's own JSON shape, and a 1,000-node LIST parses in a fraction of the time the typed models
take. Every method converts API failures into ``GpuShareError`` naming the object involved, after
the retries of ``kube/retry.py`` (reads retried on throttling, 5xx and broken connections; writes only
when they certainly were not processed)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from http.client import HTTPException

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import (
    NOT_FOUND,
    GpuShareError,
    WatchDropped,
    watch_event_error,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.retry import (
    DEFAULT_POLICY,
    RETRY_STATUSES,
    api_call,
    call_with_retries,
)

try:
    from kubernetes import client as k8s
    from urllib3.exceptions import HTTPError
except ImportError:  # reported by GpuShareModule
    k8s = None
    HTTPError = None

CLUSTER_POLICY_GROUP = "nvidia.com"
CLUSTER_POLICY_VERSION = "v1"
CLUSTER_POLICY_PLURAL = "clusterpolicies"
MERGE_PATCH = "application/merge-patch+json"


def _json(response):
    return json.loads(response.data)


def _retry_nothing_in_urllib3(api_client):
    """Leave every retry decision to kube/retry.py.

    urllib3's pools retry by themselves a request whose connection broke after it was sent when the
    method is idempotent by HTTP's rules (GET, PUT, DELETE): a DELETE retried that way after it
    succeeded fails with 404, and the caller never learns the first one went through. The pools of
    this client get ``retries=False`` (the ``retries`` of kubernetes' Configuration does the same);
    they are created lazily, and their key includes it, so no pool made before keeps the old setting.
    """
    pool_manager = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    pool_kw = getattr(pool_manager, "connection_pool_kw", None)
    if isinstance(pool_kw, dict):
        pool_kw["retries"] = False


class KubeApi(object):
    """Thin wrappers over the typed APIs, with one retry policy (``retry_policy``, kube/retry.py)."""

    def __init__(self, api_client, retry_policy=None):
        self.api_client = api_client
        self.retry_policy = retry_policy or DEFAULT_POLICY
        _retry_nothing_in_urllib3(api_client)
        self.core = k8s.CoreV1Api(api_client)
        self.apps = k8s.AppsV1Api(api_client)
        self.custom = k8s.CustomObjectsApi(api_client)

    @property
    def _timeout(self):
        return self.retry_policy.request_timeout

    def _merge_patch(self, patch_function, *args):
        """A JSON merge patch (RFC 7386) through one of the typed APIs, returning the object as a dict."""
        return _json(
            patch_function(*args, _content_type=MERGE_PATCH, _preload_content=False, _request_timeout=self._timeout)
        )

    # --- nodes -----------------------------------------------------------------------------
    @api_call("list nodes")
    def list_nodes(self, label_selector=None):
        """All nodes (or those matching the selector) and the list's resourceVersion, for a watch."""
        kwargs = {"label_selector": label_selector} if label_selector else {}
        body = _json(self.core.list_node(_preload_content=False, _request_timeout=self._timeout, **kwargs))
        return body["items"], body["metadata"]["resourceVersion"]

    @api_call("patch node {name}", write=True)
    def patch_node(self, name, patch):
        return self._merge_patch(self.core.patch_node, name, patch)

    def watch_nodes(self, resource_version, timeout_seconds, label_selector=None):
        """Yield (event type, node dict) from a node watch that ends after ``timeout_seconds``."""
        kwargs = {"label_selector": label_selector} if label_selector else {}
        return self._watch(self.core.list_node, resource_version, timeout_seconds, "watch nodes", **kwargs)

    def _watch(self, list_function, resource_version, timeout_seconds, what, **kwargs):
        """Yield (event type, object dict) of a watch from ``resource_version``.

        The watch asks the server to end it after ``timeout_seconds`` (at most the policy's
        ``max_watch_seconds``); a stream that ends then simply ends. Every failure is a GpuShareError
        naming the watch: an error answer to the start (after the retries of reads; 410 Gone is not
        retried, the caller has to LIST again), or an ERROR event (its Status: code, reason,
        message). A stream that breaks off, ends before its time, or carries a transient server
        error (429, 5xx) raises WatchDropped: start again from a fresh LIST.
        """
        policy = self.retry_policy
        seconds = max(1, int(min(timeout_seconds, policy.max_watch_seconds)))

        def start():
            return list_function(
                watch=True,
                resource_version=resource_version,
                timeout_seconds=seconds,
                allow_watch_bookmarks=True,
                _preload_content=False,
                _request_timeout=policy.watch_request_timeout(seconds),
                **kwargs,
            )

        response = call_with_retries(start, what, policy=policy, deadline=min(policy.deadline, seconds))
        started = policy.clock()
        finished = False
        try:
            try:
                for line in response:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        status = event.get("object") or {}
                        transient = status.get("code") in RETRY_STATUSES
                        raise watch_event_error(what, status, WatchDropped if transient else GpuShareError)
                    yield event["type"], event["object"]
            except (HTTPError, HTTPException, OSError, ValueError) as exc:
                # urllib3's ProtocolError/ReadTimeoutError/IncompleteRead, a reset socket, a cut line.
                raise WatchDropped("Failed to %s: the watch stream broke off: %s" % (what, " ".join(str(exc).split())))
            finished = True
        finally:
            if not finished:
                # Never hand a connection that is still streaming back to the pool.
                response.close()
            response.release_conn()
        elapsed = policy.clock() - started
        if elapsed + 1 < seconds:
            # The server ends a watch at timeoutSeconds; earlier means a proxy, a load balancer or a
            # restarting API server cut it.
            raise WatchDropped(
                "Failed to %s: the watch stream ended after %.1fs of the %ss asked" % (what, elapsed, seconds)
            )

    # --- pods ------------------------------------------------------------------------------
    @api_call("list pods")
    def list_pods(self, field_selector=None, label_selector=None):
        kwargs = dict((k, v) for k, v in (("field_selector", field_selector), ("label_selector", label_selector)) if v)
        return _json(
            self.core.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=self._timeout, **kwargs)
        )["items"]

    @api_call("list pods on node {node_name}")
    def list_pods_on_node(self, node_name):
        """The pods bound to a node and the list's resourceVersion, for a watch."""
        body = _json(
            self.core.list_pod_for_all_namespaces(
                field_selector="spec.nodeName=%s" % node_name, _preload_content=False, _request_timeout=self._timeout
            )
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

    @api_call("evict pod {namespace}/{name}", write=True)
    def evict_pod(self, namespace, name, policy_api_version="policy/v1"):
        body = {
            "apiVersion": policy_api_version,
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        return _json(
            self.core.create_namespaced_pod_eviction(
                name, namespace, body, _preload_content=False, _request_timeout=self._timeout
            )
        )

    @api_call("list events of {kind} {name}")
    def list_events(self, kind, name):
        selector = "involvedObject.kind=%s,involvedObject.name=%s" % (kind, name)
        return _json(
            self.core.list_event_for_all_namespaces(
                field_selector=selector, _preload_content=False, _request_timeout=self._timeout
            )
        )["items"]

    # --- config maps -----------------------------------------------------------------------
    @api_call("read ConfigMap {namespace}/{name}")
    def get_config_map(self, namespace, name):
        """The ConfigMap, or None when it does not exist."""
        return self._get_or_none(self.core.read_namespaced_config_map, name, namespace)

    @api_call("list ConfigMaps in {namespace}")
    def list_config_maps(self, namespace):
        return _json(
            self.core.list_namespaced_config_map(namespace, _preload_content=False, _request_timeout=self._timeout)
        )["items"]

    @api_call("create ConfigMap {namespace}/{name}", write=True)
    def create_config_map(self, namespace, name, data, annotations=None):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
        if annotations:
            body["metadata"]["annotations"] = annotations
        return _json(
            self.core.create_namespaced_config_map(
                namespace, body, _preload_content=False, _request_timeout=self._timeout
            )
        )

    @api_call("patch ConfigMap {namespace}/{name}", write=True)
    def patch_config_map(self, namespace, name, patch):
        return self._merge_patch(self.core.patch_namespaced_config_map, name, namespace, patch)

    @api_call("delete ConfigMap {namespace}/{name}", write=True)
    def delete_config_map(self, namespace, name):
        self.core.delete_namespaced_config_map(name, namespace, _preload_content=False, _request_timeout=self._timeout)

    @api_call("read namespace {name}")
    def get_namespace(self, name):
        return self._get_or_none(self.core.read_namespace, name)

    # --- the GPU operator ------------------------------------------------------------------
    @api_call("list ClusterPolicies (nvidia.com/v1)")
    def list_cluster_policies(self):
        """Every ClusterPolicy; an empty list when the CRD is not installed."""
        from kubernetes.client.exceptions import ApiException

        try:
            body = _json(
                self.custom.list_cluster_custom_object(
                    CLUSTER_POLICY_GROUP,
                    CLUSTER_POLICY_VERSION,
                    CLUSTER_POLICY_PLURAL,
                    _preload_content=False,
                    _request_timeout=self._timeout,
                )
            )
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return []
            raise
        return body["items"]

    @api_call("patch ClusterPolicy {name}", write=True)
    def patch_cluster_policy(self, name, patch):
        return self._merge_patch(
            self.custom.patch_cluster_custom_object,
            CLUSTER_POLICY_GROUP,
            CLUSTER_POLICY_VERSION,
            CLUSTER_POLICY_PLURAL,
            name,
            patch,
        )

    @api_call("read DaemonSet {namespace}/{name}")
    def get_daemon_set(self, namespace, name):
        return self._get_or_none(self.apps.read_namespaced_daemon_set, name, namespace)

    @api_call("list DaemonSets in {namespace}")
    def list_daemon_sets(self, namespace):
        """The namespace's DaemonSets and the list's resourceVersion, for a watch."""
        body = _json(
            self.apps.list_namespaced_daemon_set(namespace, _preload_content=False, _request_timeout=self._timeout)
        )
        return body["items"], body["metadata"]["resourceVersion"]

    def watch_daemon_sets(self, namespace, resource_version, timeout_seconds):
        return self._watch(
            self.apps.list_namespaced_daemon_set,
            resource_version,
            timeout_seconds,
            "watch DaemonSets in %s" % namespace,
            namespace=namespace,
        )

    @api_call("patch DaemonSet {namespace}/{name}", write=True)
    def patch_daemon_set(self, namespace, name, patch):
        return self._merge_patch(self.apps.patch_namespaced_daemon_set, name, namespace, patch)

    @api_call("list DaemonSets in every namespace")
    def list_all_daemon_sets(self):
        return _json(
            self.apps.list_daemon_set_for_all_namespaces(_preload_content=False, _request_timeout=self._timeout)
        )["items"]

    # --- workloads (gpu_smoke_test) ----------------------------------------------------------
    @api_call("create pod {namespace}/{name}", write=True)
    def create_pod(self, namespace, name, body):
        return _json(
            self.core.create_namespaced_pod(namespace, body, _preload_content=False, _request_timeout=self._timeout)
        )

    @api_call("delete pod {namespace}/{name}", write=True)
    def delete_pod(self, namespace, name):
        """Delete a pod; None when it was already gone."""
        return self._delete_or_none(self.core.delete_namespaced_pod, name, namespace)

    @api_call("list pods in {namespace}")
    def list_namespaced_pods(self, namespace, label_selector=None):
        """The namespace's pods (matching the selector) and the list's resourceVersion, for a watch."""
        kwargs = {"label_selector": label_selector} if label_selector else {}
        body = _json(
            self.core.list_namespaced_pod(namespace, _preload_content=False, _request_timeout=self._timeout, **kwargs)
        )
        return body["items"], body["metadata"]["resourceVersion"]

    def watch_namespaced_pods(self, namespace, resource_version, timeout_seconds, label_selector=None):
        kwargs = {"label_selector": label_selector} if label_selector else {}
        return self._watch(
            self.core.list_namespaced_pod,
            resource_version,
            timeout_seconds,
            "watch pods in %s" % namespace,
            namespace=namespace,
            **kwargs,
        )

    @api_call("read Deployment {namespace}/{name}")
    def get_deployment(self, namespace, name):
        return self._get_or_none(self.apps.read_namespaced_deployment, name, namespace)

    @api_call("create Deployment {namespace}/{name}", write=True)
    def create_deployment(self, namespace, name, body):
        return _json(
            self.apps.create_namespaced_deployment(
                namespace, body, _preload_content=False, _request_timeout=self._timeout
            )
        )

    @api_call("delete Deployment {namespace}/{name}", write=True)
    def delete_deployment(self, namespace, name):
        """Delete a Deployment and, in the background, its ReplicaSets and pods; None when already gone."""
        return self._delete_or_none(
            self.apps.delete_namespaced_deployment, name, namespace, body={"propagationPolicy": "Background"}
        )

    @api_call("list Deployments in {namespace}")
    def list_deployments(self, namespace):
        body = _json(
            self.apps.list_namespaced_deployment(namespace, _preload_content=False, _request_timeout=self._timeout)
        )
        return body["items"], body["metadata"]["resourceVersion"]

    def watch_deployments(self, namespace, resource_version, timeout_seconds):
        return self._watch(
            self.apps.list_namespaced_deployment,
            resource_version,
            timeout_seconds,
            "watch Deployments in %s" % namespace,
            namespace=namespace,
        )

    def _delete_or_none(self, delete_function, *args, **kwargs):
        from kubernetes.client.exceptions import ApiException

        try:
            return _json(delete_function(*args, _preload_content=False, _request_timeout=self._timeout, **kwargs))
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return None
            raise

    # --- secrets (the vGPU licence; their data is never part of an error message) ----------------
    @api_call("read Secret {namespace}/{name}")
    def get_secret(self, namespace, name):
        return self._get_or_none(self.core.read_namespaced_secret, name, namespace)

    @api_call("create Secret {namespace}/{name}", write=True)
    def create_secret(self, namespace, name, body):
        return _json(
            self.core.create_namespaced_secret(namespace, body, _preload_content=False, _request_timeout=self._timeout)
        )

    @api_call("patch Secret {namespace}/{name}", write=True)
    def patch_secret(self, namespace, name, patch):
        return self._merge_patch(self.core.patch_namespaced_secret, name, namespace, patch)

    @api_call("delete Secret {namespace}/{name}", write=True)
    def delete_secret(self, namespace, name):
        return self._delete_or_none(self.core.delete_namespaced_secret, name, namespace)

    # --- quotas and platform objects --------------------------------------------------------
    @api_call("list ResourceQuotas")
    def list_resource_quotas(self):
        return _json(
            self.core.list_resource_quota_for_all_namespaces(_preload_content=False, _request_timeout=self._timeout)
        )["items"]

    @api_call("read ResourceQuota {namespace}/{name}")
    def get_resource_quota(self, namespace, name):
        return self._get_or_none(self.core.read_namespaced_resource_quota, name, namespace)

    @api_call("create ResourceQuota {namespace}/{name}", write=True)
    def create_resource_quota(self, namespace, name, body):
        return _json(
            self.core.create_namespaced_resource_quota(
                namespace, body, _preload_content=False, _request_timeout=self._timeout
            )
        )

    @api_call("patch ResourceQuota {namespace}/{name}", write=True)
    def patch_resource_quota(self, namespace, name, patch):
        return self._merge_patch(self.core.patch_namespaced_resource_quota, name, namespace, patch)

    @api_call("delete ResourceQuota {namespace}/{name}", write=True)
    def delete_resource_quota(self, namespace, name):
        return self._delete_or_none(self.core.delete_namespaced_resource_quota, name, namespace)

    @api_call("list {plural}.{group}/{version}")
    def list_custom_objects(self, group, version, plural):
        """Every object of a custom resource in every namespace; an empty list when its CRD is not installed."""
        from kubernetes.client.exceptions import ApiException

        try:
            body = _json(
                self.custom.list_cluster_custom_object(
                    group, version, plural, _preload_content=False, _request_timeout=self._timeout
                )
            )
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return []
            raise
        return body["items"]

    @api_call("create {plural}.{group} {name}", write=True)
    def create_custom_object(self, group, version, plural, namespace, name, body):
        """Create a custom object; ``namespace`` None for a cluster-scoped kind."""
        if namespace is None:
            response = self.custom.create_cluster_custom_object(
                group, version, plural, body, _preload_content=False, _request_timeout=self._timeout
            )
        else:
            response = self.custom.create_namespaced_custom_object(
                group, version, namespace, plural, body, _preload_content=False, _request_timeout=self._timeout
            )
        return _json(response)

    @api_call("patch {plural}.{group} {name}", write=True)
    def patch_custom_object(self, group, version, plural, namespace, name, patch):
        """JSON merge patch of a custom object; ``namespace`` None for a cluster-scoped kind."""
        if namespace is None:
            return self._merge_patch(self.custom.patch_cluster_custom_object, group, version, plural, name, patch)
        return self._merge_patch(
            self.custom.patch_namespaced_custom_object, group, version, namespace, plural, name, patch
        )

    def _get_or_none(self, read_function, *args):
        from kubernetes.client.exceptions import ApiException

        try:
            return _json(read_function(*args, _preload_content=False, _request_timeout=self._timeout))
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return None
            raise
