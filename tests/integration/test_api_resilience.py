"""KubeApi and the waits against the real API server when the path to it fails: a KubeApi talks to the test
cluster's kube-apiserver through the fault-injecting proxy of fault_proxy.py (``FaultProxy``).

Nothing here asserts on wall-clock time: retries are observed through the proxy's record of what it
saw and did, the waits the policy asked for, and the API server's audit log.
"""

import uuid

import pytest
from fault_proxy import Fault, FaultProxy, Sleeps, free_port, kube_api, node_list, node_patch, node_watch
from integration_helpers import ONE_PROFILE, labels

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError, OutcomeUnknown, WatchDropped
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_nodes

pytestmark = ONE_PROFILE  # the client's retries and waits: no platform difference

LABEL = "resilience.gpushare.k8s/mark"
WAIT = 60  # seconds any wait here may take at most; none should take more than a few


# --- node marks --------------------------------------------------------------------------------


def marked(value):
    """The expectation of a node carrying LABEL=value."""

    def problem(node):
        found = labels(node).get(LABEL)
        return None if found == value else "%s=%s (want %s)" % (LABEL, found, value)

    return problem


def mark_node(kube, name):
    """Label node ``name`` through the harness (straight to the API server); returns the value."""
    value = uuid.uuid4().hex[:12]
    return value, lambda: kube.label_node(name, {LABEL: value})


# --- reads ------------------------------------------------------------------------------------


def test_a_list_succeeds_after_throttling_server_errors_and_a_reset(cluster, kube, proxy):
    proxy.add(
        Fault(node_list, "status", times=2, status=429, retry_after=1, message="too many requests, try again"),
        Fault(node_list, "status", status=503, message="the server is currently unable to handle the request"),
        Fault(node_list, "reset-before"),
    )
    api = kube_api(cluster, proxy.url)

    items, resource_version = api.list_nodes()

    assert sorted(item["metadata"]["name"] for item in items) == sorted(kube.gpu_nodes() + kube.cpu_nodes())
    assert int(resource_version) > 0
    assert [request.action for request in proxy.requests(node_list)] == [
        "status",
        "status",
        "status",
        "reset-before",
        "forward",
    ]
    asked = api.retry_policy.sleep.asked
    assert len(asked) == 4
    assert asked[0] >= 1 and asked[1] >= 1  # Retry-After: 1 honoured


def test_a_read_gives_up_at_its_deadline_with_the_servers_answer(cluster, proxy):
    proxy.add(Fault(node_list, "status", times=None, status=503, message="etcdserver: leader changed"))
    api = kube_api(cluster, proxy.url, deadline=2)

    with pytest.raises(GpuShareError) as error:
        api.list_nodes()

    attempts = len(proxy.requests(node_list))
    assert attempts >= 2
    assert error.value.status == 503
    assert error.value.msg.startswith(
        "Failed to list nodes: etcdserver: leader changed (HTTP 503). Gave up after %d attempts in " % attempts
    )
    assert sum(api.retry_policy.sleep.asked) <= 2  # no wait past the deadline


def test_an_unreachable_api_server_is_one_clean_error(cluster):
    port = free_port()
    api = kube_api(cluster, "https://127.0.0.1:%d" % port, deadline=1)

    with pytest.raises(GpuShareError) as error:
        api.list_nodes()

    assert error.value.msg.startswith("Failed to list nodes: cannot reach the Kubernetes API: ")
    assert "Connection refused" in error.value.msg and "Gave up after" in error.value.msg
    assert len(api.retry_policy.sleep.asked) >= 1


# --- watches ----------------------------------------------------------------------------------


def test_watch_errors_carry_the_servers_message_and_name_the_watch(cluster):
    api = kube_api(cluster, cluster.server(), who="nobody")

    with pytest.raises(GpuShareError) as error:
        list(api.watch_nodes("0", 5))

    assert error.value.status == 403 and error.value.reason == "Forbidden"
    assert error.value.msg.startswith('Failed to watch nodes: nodes is forbidden: User "gpushare-nobody" cannot watch')
    # The server's message, then what to grant (errors.py names the verb, the resource and the shipped role).
    assert "(HTTP 403). The identity lacks 'watch' on 'nodes'" in error.value.msg


def test_a_watch_cut_mid_stream_is_one_clean_error(cluster, proxy):
    proxy.add(Fault(node_watch, "cut-after-head"))
    api = kube_api(cluster, proxy.url)
    _, resource_version = api.list_nodes()

    with pytest.raises(WatchDropped) as error:
        list(api.watch_nodes(resource_version, 30))

    assert error.value.msg.startswith("Failed to watch nodes: the watch stream broke off: ")
    assert [request.action for request in proxy.requests(node_watch)] == ["cut-after-head"]


@pytest.mark.parametrize("action", ["cut-after-head", "end-after-head"])
def test_wait_for_nodes_relists_after_a_dropped_watch_and_sees_the_change(cluster, kube, proxy, action):
    """The change is made while the watch is down: only the fresh LIST can show it."""
    name = kube.gpu_nodes()[0]
    value, change = mark_node(kube, name)
    proxy.add(Fault(node_watch, action, hook=change))
    api = kube_api(cluster, proxy.url)

    final = wait_for_nodes(api, {name: marked(value)}, WAIT, "the mark on %s" % name)

    assert labels(final[name])[LABEL] == value
    kinds = ["watch" if request.watch else "list" for request in proxy.requests(lambda r: r.path == "/api/v1/nodes")]
    assert kinds[:3] == ["list", "watch", "list"]
    assert proxy.requests(node_watch)[0].action == action


def test_wait_for_nodes_survives_a_connection_reset_mid_watch(cluster, kube, proxy):
    """Reset right after the watch's head: the client sees it while starting the watch (a read,
    retried) or while reading it (a drop, LIST again), depending on when the reset lands; the wait
    ends with the change either way."""
    name = kube.gpu_nodes()[0]
    value, change = mark_node(kube, name)
    proxy.add(Fault(node_watch, "reset-after-head", hook=change))
    api = kube_api(cluster, proxy.url)

    final = wait_for_nodes(api, {name: marked(value)}, WAIT, "the mark on %s" % name)

    assert labels(final[name])[LABEL] == value
    requests = proxy.requests(lambda request: request.path == "/api/v1/nodes")
    assert [request.action for request in requests[:2]] == ["forward", "reset-after-head"]
    assert len(requests) >= 3  # then a LIST, or the watch tried again


def test_a_watch_the_server_ends_resumes_from_the_last_resource_version(cluster, kube, proxy):
    """Watches of at most 2 s: the first ends on time, the next starts where it stopped (no LIST),
    and the change made once it runs arrives as an event."""
    name = kube.gpu_nodes()[0]
    value, change = mark_node(kube, name)
    proxy.add(Fault(node_watch, "forward"), Fault(node_watch, "forward", hook=change))
    api = kube_api(cluster, proxy.url, max_watch_seconds=2)

    final = wait_for_nodes(api, {name: marked(value)}, WAIT, "the mark on %s" % name)

    assert labels(final[name])[LABEL] == value
    lists, watches = proxy.requests(node_list), proxy.requests(node_watch)
    assert len(lists) == 1 and len(watches) >= 2
    assert watches[0].query["timeoutSeconds"] == "2"
    assert int(watches[1].query["resourceVersion"]) >= int(watches[0].query["resourceVersion"])


@pytest.mark.parametrize("how", ["error-event", "status"])
def test_an_expired_watch_relists_and_sees_the_change(cluster, kube, proxy, how):
    """410 Gone, as an ERROR event in the stream (how the API server's watch cache says it) or as
    the status of the watch request."""
    name = kube.gpu_nodes()[0]
    value, change = mark_node(kube, name)
    proxy.add(Fault(node_watch, how, status=410, message="too old resource version: 1 (999)", hook=change))
    api = kube_api(cluster, proxy.url)

    final = wait_for_nodes(api, {name: marked(value)}, WAIT, "the mark on %s" % name)

    assert labels(final[name])[LABEL] == value
    kinds = ["watch" if request.watch else "list" for request in proxy.requests(lambda r: r.path == "/api/v1/nodes")]
    assert kinds[:3] == ["list", "watch", "list"]
    assert api.retry_policy.sleep.asked == []  # an expired watch is no failure: no backoff


# --- writes -----------------------------------------------------------------------------------


def test_a_write_is_not_retried_after_an_ambiguous_failure(cluster, kube, proxy, audit_writes):
    """The PATCH reaches the API server, which applies it; the answer never comes back. Trying
    again would be blind: the error says the outcome is unknown, and the write happened once."""
    name = kube.gpu_nodes()[0]
    value = uuid.uuid4().hex[:12]
    proxy.add(Fault(node_patch, "reset-after-response"))
    api = kube_api(cluster, proxy.url)

    with audit_writes() as audit:
        with pytest.raises(OutcomeUnknown) as error:
            api.patch_node(name, {"metadata": {"labels": {LABEL: value}}})

    msg = error.value.msg
    assert msg.startswith("Failed to patch node %s: cannot reach the Kubernetes API: " % name)
    assert "Whether it was applied is unknown (the connection broke after the request was sent)" in msg
    assert "running the module again re-reads the cluster and converges" in msg
    assert [request.action for request in proxy.requests(node_patch)] == ["reset-after-response"]
    assert audit.count(verb="patch", resource="nodes") == 1
    assert labels(kube.node(name))[LABEL] == value  # it was applied: a retry would have repeated it
    assert api.retry_policy.sleep.asked == []


def test_a_throttled_write_is_retried_after_retry_after(cluster, kube, proxy, audit_writes):
    name = kube.gpu_nodes()[0]
    value = uuid.uuid4().hex[:12]
    proxy.add(Fault(node_patch, "status", status=429, retry_after=1, message="too many requests"))
    api = kube_api(cluster, proxy.url)

    with audit_writes() as audit:
        patched = api.patch_node(name, {"metadata": {"labels": {LABEL: value}}})

    assert labels(patched)[LABEL] == value
    assert [request.action for request in proxy.requests(node_patch)] == ["status", "forward"]
    assert audit.count(verb="patch", resource="nodes") == 1  # the throttled one never reached it
    assert api.retry_policy.sleep.asked[0] >= 1


def test_a_write_refused_at_connect_is_retried(cluster, kube):
    """Nothing listens at first (connection refused: the request was never sent); the proxy starts
    listening during the first backoff, and the retried write goes through."""
    name = kube.gpu_nodes()[0]
    value = uuid.uuid4().hex[:12]
    proxy = FaultProxy(cluster, port=free_port())
    api = kube_api(cluster, proxy.url, sleep=Sleeps(then=proxy.start))
    try:
        patched = api.patch_node(name, {"metadata": {"labels": {LABEL: value}}})
    finally:
        proxy.stop()

    assert labels(patched)[LABEL] == value
    assert len(api.retry_policy.sleep.asked) == 1
    assert [request.action for request in proxy.requests(node_patch)] == ["forward"]


def test_a_conflicting_create_fails_at_once_with_409(cluster, kube, proxy):
    namespace = kube.namespace
    kube.put_config_map("resilience-test", {"a": "1"})
    api = kube_api(cluster, proxy.url)

    with pytest.raises(GpuShareError) as error:
        api.create_config_map(namespace, "resilience-test", {"a": "2"})

    assert not isinstance(error.value, OutcomeUnknown)
    assert error.value.status == 409
    assert error.value.msg.startswith(
        'Failed to create ConfigMap %s/resilience-test: configmaps "resilience-test" already exists (HTTP 409).'
        % namespace
    )
    assert len(proxy.requests(lambda request: request.method == "POST")) == 1
    assert kube.config_map("resilience-test")["data"] == {"a": "1"}
