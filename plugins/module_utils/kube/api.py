# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes calls the collection makes, each returning plain dicts.

Requests are made by path through the client's ApiClient and answers parsed as JSON: the domain
logic works on the API's own JSON shape, a 1,000-node LIST parses in a fraction of the time the typed
models take, and the typed API classes (over a second to import) are never loaded. Every method
converts API failures into ``GpuShareError`` naming the object involved, after the retries of
``kube/retry.py`` (reads retried on throttling, 5xx and broken connections; writes only when they
certainly were not processed)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections import namedtuple
from http.client import HTTPException
from urllib.parse import quote

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
    from urllib3.exceptions import HTTPError
except ImportError:  # reported by GpuShareModule
    HTTPError = None

# What a LIST a watch may follow returns: its ``items`` (API dicts) and the list's ``resource_version``, to start the
# watch from (kube/wait.py).
Listed = namedtuple("Listed", ["items", "resource_version"])

CLUSTER_POLICY_GROUP = "nvidia.com"
CLUSTER_POLICY_VERSION = "v1"
CLUSTER_POLICY_PLURAL = "clusterpolicies"
MERGE_PATCH = "application/merge-patch+json"


def _listed(body):
    """The ``Listed`` of a LIST's answer."""
    return Listed(body["items"], body["metadata"]["resourceVersion"])


def _json(response):
    return json.loads(response.data)


def _path(*segments):
    """An API path from its segments, each escaped (a name never adds a path segment)."""
    return "/" + "/".join(quote(str(segment), safe="") for segment in segments)


def _involving(kind, name):
    """The field selector of the Events about one object."""
    return "involvedObject.kind=%s,involvedObject.name=%s" % (kind, name)


def _core(namespace, plural, *rest):
    """The path of a core (v1) resource in a namespace, or of one object of it and its subresource."""
    return _path("api", "v1", "namespaces", namespace, plural, *rest)


def _apps(namespace, plural, *rest):
    return _path("apis", "apps", "v1", "namespaces", namespace, plural, *rest)


def _custom(group, version, namespace, plural, *rest):
    """A custom resource's path; ``namespace`` None for a cluster-scoped kind."""
    if namespace is None:
        return _path("apis", group, version, plural, *rest)
    return _path("apis", group, version, "namespaces", namespace, plural, *rest)


NODES = _path("api", "v1", "nodes")
PODS = _path("api", "v1", "pods")
# The field selector of the pods the scheduler has not bound yet.
UNSCHEDULED_PODS = "spec.nodeName=,status.phase=Pending"
CLUSTER_POLICIES = _path("apis", CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL)


def _query(params):
    """Query parameters for the request, booleans as the API spells them, unset ones left out."""
    pairs = []
    for key, value in params.items():
        if value is None:
            continue
        pairs.append((key, ("true" if value else "false") if isinstance(value, bool) else value))
    return pairs


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
    """The REST calls, by path, with one retry policy (``retry_policy``, kube/retry.py).

    Requests go through the ApiClient (its authentication, TLS, proxy and impersonation headers), not
    through the typed ``CoreV1Api``/``AppsV1Api`` classes: importing those builds a few hundred typed
    models and costs more than a second per module run (kubernetes 37), which is most of a no-op's time.
    """

    def __init__(self, api_client, retry_policy=None):
        self.api_client = api_client
        self.retry_policy = retry_policy or DEFAULT_POLICY
        _retry_nothing_in_urllib3(api_client)

    @property
    def _timeout(self):
        return self.retry_policy.request_timeout

    def _send(self, method, path, query=None, body=None, content_type="application/json", timeout=None):
        """Send one request; the urllib3 response, not yet read. A non-2xx answer raises ApiException."""
        from kubernetes.client.exceptions import ApiException

        client = self.api_client
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        query = _query(query or {})
        timeout = timeout or self._timeout
        if hasattr(client, "param_serialize"):
            # kubernetes >= 35 (openapi-generator 7): serialise (with authentication), then send.
            request = client.param_serialize(
                method, path, query_params=query, header_params=headers, body=body, auth_settings=["BearerToken"]
            )
            response = client.call_api(*request, _request_timeout=timeout)
            if not 200 <= response.status <= 299:
                response.read()
                raise ApiException.from_response(http_resp=response, body=None, data=None)
            return response.response
        # Older clients raise for a non-2xx answer and hand back the raw response when not preloading.
        return client.call_api(
            path,
            method,
            query_params=query,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )

    def _call(self, method, path, query=None, body=None, content_type="application/json"):
        """One request and its JSON answer."""
        return _json(self._send(method, path, query, body, content_type))

    def _list(self, path, **query):
        return self._call("GET", path, query)

    def _merge_patch(self, path, patch):
        """A JSON merge patch (RFC 7386), returning the object."""
        return self._call("PATCH", path, body=patch, content_type=MERGE_PATCH)

    def _unless_missing(self, missing, method, path, body=None):
        """One request's JSON answer, or ``missing`` when the API answers 404 (no such object or resource)."""
        from kubernetes.client.exceptions import ApiException

        try:
            return self._call(method, path, body=body)
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return missing
            raise

    def _get_or_none(self, path):
        """The object at ``path``, or None when it does not exist."""
        return self._unless_missing(None, "GET", path)

    def _delete_or_none(self, path, body=None):
        """Delete the object at ``path``; None when it was already gone."""
        return self._unless_missing(None, "DELETE", path, body)

    def _list_items_or_empty(self, path):
        """A LIST's items; an empty list when the resource does not exist (its CRD is not installed)."""
        return self._unless_missing({"items": []}, "GET", path)["items"]

    # --- nodes -----------------------------------------------------------------------------
    @api_call("list nodes")
    def list_nodes(self, label_selector=None):
        """All nodes (or those matching the selector) and the list's resourceVersion, for a watch: a ``Listed``."""
        return _listed(self._list(NODES, labelSelector=label_selector))

    @api_call("patch node {name}", write=True)
    def patch_node(self, name, patch):
        return self._merge_patch(_path("api", "v1", "nodes", name), patch)

    def watch_nodes(self, resource_version, timeout_seconds, label_selector=None):
        """Yield (event type, node dict) from a node watch that ends after ``timeout_seconds``."""
        return self._watch(NODES, resource_version, timeout_seconds, "watch nodes", labelSelector=label_selector)

    def _watch(self, path, resource_version, timeout_seconds, what, **query):
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

        query = dict(query, watch=True, resourceVersion=resource_version, timeoutSeconds=seconds)
        query["allowWatchBookmarks"] = True

        def start():
            return self._send("GET", path, query, timeout=policy.watch_request_timeout(seconds))

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
        return self._list(PODS, fieldSelector=field_selector, labelSelector=label_selector)["items"]

    @api_call("list pods on node {node_name}")
    def list_pods_on_node(self, node_name):
        """The pods bound to a node and the list's resourceVersion, for a watch."""
        return _listed(self._list(PODS, fieldSelector="spec.nodeName=%s" % node_name))

    def watch_pods_on_node(self, node_name, resource_version, timeout_seconds):
        return self._watch(
            PODS,
            resource_version,
            timeout_seconds,
            "watch pods on node %s" % node_name,
            fieldSelector="spec.nodeName=%s" % node_name,
        )

    @api_call("list unscheduled pods")
    def list_unscheduled_pods(self):
        """The pods no node holds yet (Pending, no ``spec.nodeName``) and the list's resourceVersion, for a watch."""
        return _listed(self._list(PODS, fieldSelector=UNSCHEDULED_PODS))

    def watch_unscheduled_pods(self, resource_version, timeout_seconds):
        """A pod the scheduler binds leaves the selection: the watch says DELETED."""
        return self._watch(
            PODS, resource_version, timeout_seconds, "watch unscheduled pods", fieldSelector=UNSCHEDULED_PODS
        )

    @api_call("evict pod {namespace}/{name}", write=True)
    def evict_pod(self, namespace, name, policy_api_version="policy/v1"):
        body = {
            "apiVersion": policy_api_version,
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        return self._call("POST", _core(namespace, "pods", name, "eviction"), body=body)

    @api_call("ask whether this identity may {verb} {resource}")
    def may(self, verb, group, resource, namespace=None):
        """Whether the API server would allow this identity ``verb`` on ``resource`` ("pods/eviction": a
        subresource) of ``group`` ("" for core) in ``namespace``: a SelfSubjectAccessReview, which every
        authenticated identity may create (system:basic-user) and which changes nothing."""
        resource, _slash, subresource = resource.partition("/")
        attributes = dict(verb=verb, group=group, resource=resource)
        if subresource:
            attributes["subresource"] = subresource
        if namespace:
            attributes["namespace"] = namespace
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        review = self._call("POST", _path("apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"), body=body)
        return bool((review.get("status") or {}).get("allowed"))

    @api_call("list events of {kind} {name}")
    def list_events(self, kind, name):
        """The Events about one object and the list's resourceVersion, for a watch."""
        return _listed(self._list(_path("api", "v1", "events"), fieldSelector=_involving(kind, name)))

    def watch_events(self, kind, name, resource_version, timeout_seconds):
        return self._watch(
            _path("api", "v1", "events"),
            resource_version,
            timeout_seconds,
            "watch events of %s %s" % (kind, name),
            fieldSelector=_involving(kind, name),
        )

    # --- config maps -----------------------------------------------------------------------
    @api_call("read ConfigMap {namespace}/{name}")
    def get_config_map(self, namespace, name):
        """The ConfigMap, or None when it does not exist."""
        return self._get_or_none(_core(namespace, "configmaps", name))

    @api_call("list ConfigMaps in {namespace}")
    def list_config_maps(self, namespace):
        return self._list(_core(namespace, "configmaps"))["items"]

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
        return self._call("POST", _core(namespace, "configmaps"), body=body)

    @api_call("patch ConfigMap {namespace}/{name}", write=True)
    def patch_config_map(self, namespace, name, patch):
        return self._merge_patch(_core(namespace, "configmaps", name), patch)

    @api_call("delete ConfigMap {namespace}/{name}", write=True)
    def delete_config_map(self, namespace, name):
        self._call("DELETE", _core(namespace, "configmaps", name))

    @api_call("read namespace {name}")
    def get_namespace(self, name):
        return self._get_or_none(_path("api", "v1", "namespaces", name))

    # --- the GPU operator ------------------------------------------------------------------
    @api_call("list ClusterPolicies (nvidia.com/v1)")
    def list_cluster_policies(self):
        """Every ClusterPolicy; an empty list when the CRD is not installed."""
        return self._list_items_or_empty(CLUSTER_POLICIES)

    @api_call("patch ClusterPolicy {name}", write=True)
    def patch_cluster_policy(self, name, patch):
        return self._merge_patch(CLUSTER_POLICIES + _path(name), patch)

    @api_call("read DaemonSet {namespace}/{name}")
    def get_daemon_set(self, namespace, name):
        return self._get_or_none(_apps(namespace, "daemonsets", name))

    @api_call("list DaemonSets in {namespace}")
    def list_daemon_sets(self, namespace):
        """The namespace's DaemonSets and the list's resourceVersion, for a watch."""
        return _listed(self._list(_apps(namespace, "daemonsets")))

    def watch_daemon_sets(self, namespace, resource_version, timeout_seconds):
        return self._watch(
            _apps(namespace, "daemonsets"), resource_version, timeout_seconds, "watch DaemonSets in %s" % namespace
        )

    @api_call("patch DaemonSet {namespace}/{name}", write=True)
    def patch_daemon_set(self, namespace, name, patch):
        return self._merge_patch(_apps(namespace, "daemonsets", name), patch)

    @api_call("list DaemonSets in every namespace")
    def list_all_daemon_sets(self):
        return self._list(_path("apis", "apps", "v1", "daemonsets"))["items"]

    # --- workloads (gpu_smoke_test) ----------------------------------------------------------
    @api_call("create pod {namespace}/{name}", write=True)
    def create_pod(self, namespace, name, body):
        return self._call("POST", _core(namespace, "pods"), body=body)

    @api_call("delete pod {namespace}/{name}", write=True)
    def delete_pod(self, namespace, name):
        """Delete a pod; None when it was already gone."""
        return self._delete_or_none(_core(namespace, "pods", name))

    @api_call("list pods in {namespace}")
    def list_namespaced_pods(self, namespace, label_selector=None):
        """The namespace's pods (matching the selector) and the list's resourceVersion, for a watch."""
        return _listed(self._list(_core(namespace, "pods"), labelSelector=label_selector))

    def watch_namespaced_pods(self, namespace, resource_version, timeout_seconds, label_selector=None):
        return self._watch(
            _core(namespace, "pods"),
            resource_version,
            timeout_seconds,
            "watch pods in %s" % namespace,
            labelSelector=label_selector,
        )

    @api_call("read Deployment {namespace}/{name}")
    def get_deployment(self, namespace, name):
        return self._get_or_none(_apps(namespace, "deployments", name))

    @api_call("create Deployment {namespace}/{name}", write=True)
    def create_deployment(self, namespace, name, body):
        return self._call("POST", _apps(namespace, "deployments"), body=body)

    @api_call("delete Deployment {namespace}/{name}", write=True)
    def delete_deployment(self, namespace, name):
        """Delete a Deployment and, in the background, its ReplicaSets and pods; None when already gone."""
        return self._delete_or_none(_apps(namespace, "deployments", name), body={"propagationPolicy": "Background"})

    @api_call("list Deployments in {namespace}")
    def list_deployments(self, namespace):
        return _listed(self._list(_apps(namespace, "deployments")))

    def watch_deployments(self, namespace, resource_version, timeout_seconds):
        return self._watch(
            _apps(namespace, "deployments"), resource_version, timeout_seconds, "watch Deployments in %s" % namespace
        )

    # --- secrets (the vGPU licence; their data is never part of an error message) ----------------
    @api_call("read Secret {namespace}/{name}")
    def get_secret(self, namespace, name):
        return self._get_or_none(_core(namespace, "secrets", name))

    @api_call("create Secret {namespace}/{name}", write=True)
    def create_secret(self, namespace, name, body):
        return self._call("POST", _core(namespace, "secrets"), body=body)

    @api_call("patch Secret {namespace}/{name}", write=True)
    def patch_secret(self, namespace, name, patch):
        return self._merge_patch(_core(namespace, "secrets", name), patch)

    @api_call("delete Secret {namespace}/{name}", write=True)
    def delete_secret(self, namespace, name):
        return self._delete_or_none(_core(namespace, "secrets", name))

    # --- quotas and platform objects --------------------------------------------------------
    @api_call("list ResourceQuotas")
    def list_resource_quotas(self):
        return self._list(_path("api", "v1", "resourcequotas"))["items"]

    @api_call("read ResourceQuota {namespace}/{name}")
    def get_resource_quota(self, namespace, name):
        return self._get_or_none(_core(namespace, "resourcequotas", name))

    @api_call("create ResourceQuota {namespace}/{name}", write=True)
    def create_resource_quota(self, namespace, name, body):
        return self._call("POST", _core(namespace, "resourcequotas"), body=body)

    @api_call("patch ResourceQuota {namespace}/{name}", write=True)
    def patch_resource_quota(self, namespace, name, patch):
        return self._merge_patch(_core(namespace, "resourcequotas", name), patch)

    @api_call("delete ResourceQuota {namespace}/{name}", write=True)
    def delete_resource_quota(self, namespace, name):
        return self._delete_or_none(_core(namespace, "resourcequotas", name))

    @api_call("list {plural}.{group}/{version}")
    def list_custom_objects(self, group, version, plural):
        """Every object of a custom resource in every namespace; an empty list when its CRD is not installed."""
        return self._list_items_or_empty(_path("apis", group, version, plural))

    @api_call("list {plural}.{group}/{version} in {namespace}")
    def list_namespaced_custom_objects(self, group, version, plural, namespace):
        """The objects of a custom resource in ``namespace`` and the list's resourceVersion, for a watch."""
        return _listed(self._list(_custom(group, version, namespace, plural)))

    def watch_namespaced_custom_objects(self, group, version, plural, namespace, resource_version, timeout_seconds):
        return self._watch(
            _custom(group, version, namespace, plural),
            resource_version,
            timeout_seconds,
            "watch %s.%s in %s" % (plural, group, namespace),
        )

    @api_call("create {plural}.{group} {name}", write=True)
    def create_custom_object(self, group, version, plural, namespace, name, body):
        """Create a custom object; ``namespace`` None for a cluster-scoped kind."""
        return self._call("POST", _custom(group, version, namespace, plural), body=body)

    @api_call("patch {plural}.{group} {name}", write=True)
    def patch_custom_object(self, group, version, plural, namespace, name, patch):
        """JSON merge patch of a custom object; ``namespace`` None for a cluster-scoped kind."""
        return self._merge_patch(_custom(group, version, namespace, plural, name), patch)
