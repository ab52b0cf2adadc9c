"""``kube/wait.wait_for_objects`` and ``wait_for_events`` against the real API server, through the fault-injecting
proxy of fault_proxy.py: what a wait returns, when it raises and what it says, on the nodes (marked with a label), on
a test's pods, and on Events about a node name no node has (only the test's own Events are about it).

What a wait does when its watch ends, expires (410) or drops is in test_api_resilience.py; the backoff's reset by an
event between drops, which no server shows on demand, stays in tests/unit/plugins/module_utils/kube/test_wait.py.
"""

import uuid

import pytest
from fault_proxy import Fault, kube_api, node_list, node_watch
from integration_helpers import ONE_PROFILE, labels
from kubernetes import client
from workloads import TOLERATE_GPU

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_events, wait_for_objects

pytestmark = ONE_PROFILE  # the waits: no platform difference

LABEL = "waits.gpushare.k8s/mark"
WAIT = 60  # seconds any wait here may take at most; none should take more than a few
WHAT = "the marks"


def marked(value):
    def problem(node):
        found = labels(node).get(LABEL)
        return None if found == value else "%s=%s (want %s)" % (LABEL, found, value)

    return problem


def wait_for_marks(api, marks, timeout=WAIT):
    return wait_for_objects(
        api.list_nodes,
        api.watch_nodes,
        dict((name, marked(value)) for name, value in marks.items()),
        timeout,
        WHAT,
        "node",
        policy=api.retry_policy,
    )


def node_requests(proxy):
    return ["watch" if request.watch else "list" for request in proxy.requests(lambda r: r.path == "/api/v1/nodes")]


def test_marks_already_there_end_the_wait_with_the_list_alone(cluster, kube, proxy):
    a, b = kube.gpu_nodes()[:2]
    kube.label_node(a, {LABEL: "x"})
    kube.label_node(b, {LABEL: "y"})

    final = wait_for_marks(kube_api(cluster, proxy.url), {a: "x", b: "y"})

    assert sorted(final) == [a, b] and labels(final[b])[LABEL] == "y"
    assert node_requests(proxy) == ["list"]


def test_a_met_node_that_regresses_is_unmet_again(cluster, kube, proxy):
    """a is met from the start; then, in one watch: a loses its mark, b gets its own, a gets its mark back. The wait
    ends on the last: had it kept a as met, it would have ended on b's with a unmarked."""
    a, b = kube.gpu_nodes()[:2]
    kube.label_node(a, {LABEL: "x"})

    def regress():
        kube.label_node(a, {LABEL: "wrong"})
        kube.label_node(b, {LABEL: "y"})
        kube.label_node(a, {LABEL: "x"})

    proxy.add(Fault(node_watch, "forward", hook=regress))

    final = wait_for_marks(kube_api(cluster, proxy.url), {a: "x", b: "y"})

    assert labels(final[a])[LABEL] == "x" and labels(final[b])[LABEL] == "y"
    assert int(final[a]["metadata"]["resourceVersion"]) > int(final[b]["metadata"]["resourceVersion"])


def test_a_refused_watch_is_raised(cluster, kube, proxy):
    proxy.add(Fault(node_watch, "status", status=403, message='nodes is forbidden: cannot watch resource "nodes"'))

    with pytest.raises(GpuShareError) as error:
        wait_for_marks(kube_api(cluster, proxy.url), {kube.gpu_nodes()[0]: "x"})

    assert error.value.status == 403
    assert error.value.msg.startswith('Failed to watch nodes: nodes is forbidden: cannot watch resource "nodes"')


def test_a_timeout_names_each_unmet_node_and_what_it_shows(cluster, kube, proxy):
    a, b, c = kube.gpu_nodes()[:3]
    kube.label_node(b, {LABEL: "old"})
    kube.label_node(c, {LABEL: "z"})

    with pytest.raises(GpuShareError) as error:
        wait_for_marks(kube_api(cluster, proxy.url), {a: "x", b: "y", c: "z"}, timeout=0)

    msg = error.value.msg
    assert msg.startswith("Timed out after 0s waiting for %s; 2 node(s) not there yet: " % WHAT)
    assert "%s: %s=None (want x)" % (a, LABEL) in msg and "%s: %s=old (want y)" % (b, LABEL) in msg
    assert msg.index(a + ":") < msg.index(b + ":") and c not in msg
    assert sorted(error.value.details["unmet"]) == [a, b]


def test_refuses_to_wait_for_nodes_that_do_not_exist(cluster, kube, proxy):
    with pytest.raises(GpuShareError) as error:
        wait_for_marks(kube_api(cluster, proxy.url), {kube.gpu_nodes()[0]: "x", "ghost": "x", "gone": "x"})

    assert error.value.msg == "Cannot wait for %s: node(s) ghost, gone do not exist." % WHAT
    assert node_requests(proxy) == ["list"]


def test_nothing_to_wait_for(cluster, proxy):
    assert wait_for_marks(kube_api(cluster, proxy.url), {}) == {}


# --- watches that keep dropping ---------------------------------------------------------------------------------


def test_a_watch_that_keeps_dropping_backs_off_from_the_second_drop_and_keeps_one_deadline(cluster, kube, proxy):
    name = kube.gpu_nodes()[0]
    api = kube_api(cluster, proxy.url, random=lambda: 0.0)
    proxy.add(
        Fault(node_watch, "cut-after-head", times=4),
        Fault(node_watch, "forward", hook=lambda: kube.label_node(name, {LABEL: "x"})),
    )

    wait_for_marks(api, {name: "x"})

    policy = api.retry_policy
    assert policy.sleep.asked == [policy.backoff(0), policy.backoff(1), policy.backoff(2)]
    assert node_requests(proxy)[:10] == ["list", "watch"] * 5
    # Each watch asks for what is left of the one deadline, not a fresh timeout.
    asked = [int(request.query["timeoutSeconds"]) for request in proxy.requests(node_watch)]
    assert asked == sorted(asked, reverse=True) and asked[0] <= WAIT


def test_a_wait_that_times_out_while_the_watch_keeps_dropping_says_so(cluster, kube, proxy):
    name = kube.gpu_nodes()[0]
    proxy.add(Fault(node_watch, "cut-after-head", times=None))
    api = kube_api(cluster, proxy.url)

    with pytest.raises(GpuShareError) as error:
        wait_for_marks(api, {name: "x"}, timeout=3)

    msg = error.value.msg
    assert msg.startswith("Timed out after 3s waiting for %s; 1 node(s) not there yet: %s: " % (WHAT, name))
    drops = len(proxy.requests(node_watch))
    assert "; the watch dropped %d time(s) in a row, last: Failed to watch nodes: the watch stream " % drops in msg
    assert sum(api.retry_policy.sleep.asked) <= 3  # the backoff never sleeps past the deadline


def test_an_error_of_the_list_after_a_drop_is_raised(cluster, kube, proxy):
    proxy.add(
        Fault(node_list, "forward"),
        Fault(node_list, "status", status=403, message="nodes is forbidden"),
        Fault(node_watch, "cut-after-head"),
    )

    with pytest.raises(GpuShareError) as error:
        wait_for_marks(kube_api(cluster, proxy.url), {kube.gpu_nodes()[0]: "x"})

    assert error.value.status == 403 and error.value.msg.startswith("Failed to list nodes: nodes is forbidden")


# --- objects deleted while waited for (a test's own pods) -------------------------------------------------------


def waiting_pod(api_client, namespace, name):
    """A pod no node can hold (100 GPUs): it stays Pending."""
    body = {
        "metadata": {"name": name},
        "spec": {
            "tolerations": TOLERATE_GPU,
            "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "100"}}}],
        },
    }
    client.CoreV1Api(api_client).create_namespaced_pod(namespace, body)


def running(pod):
    phase = (pod.get("status") or {}).get("phase")
    return None if phase == "Running" else "phase %s" % phase


def wait_for_running(api, namespace, names, absent_ok=False):
    return wait_for_objects(
        lambda: api.list_namespaced_pods(namespace),
        lambda resource_version, seconds: api.watch_namespaced_pods(namespace, resource_version, seconds),
        dict((name, running) for name in names),
        WAIT,
        "the pods to run",
        "pod",
        absent_ok=absent_ok,
        policy=api.retry_policy,
    )


def pod_watch(request):
    return request.path.endswith("/pods") and request.watch


@pytest.mark.parametrize("seen_by", ["watch", "relist"])
def test_a_pod_deleted_while_waited_for_is_an_error(cluster, api_client, namespace, proxy, seen_by):
    """Seen as a DELETED event of the watch, or missing from the LIST after a dropped watch."""
    for name in ("a", "b"):
        waiting_pod(api_client, namespace, name)

    def delete_b():
        client.CoreV1Api(api_client).delete_namespaced_pod("b", namespace, grace_period_seconds=0)

    proxy.add(Fault(pod_watch, "forward" if seen_by == "watch" else "cut-after-head", hook=delete_b))

    with pytest.raises(GpuShareError) as error:
        wait_for_running(kube_api(cluster, proxy.url), namespace, ["a", "b"])

    assert error.value.msg == "pod b was deleted while waiting for the pods to run."


def test_a_pod_gone_from_the_relist_is_as_wanted_when_absence_is(cluster, api_client, namespace, proxy):
    waiting_pod(api_client, namespace, "a")

    def delete_a():
        client.CoreV1Api(api_client).delete_namespaced_pod("a", namespace, grace_period_seconds=0)

    proxy.add(Fault(pod_watch, "cut-after-head", hook=delete_a))

    assert wait_for_running(kube_api(cluster, proxy.url), namespace, ["a"], absent_ok=True) == {}


def test_a_wait_whose_watches_bring_nothing_times_out_going_on_from_each_watchs_end(cluster, kube, proxy):
    name = kube.gpu_nodes()[0]

    with pytest.raises(GpuShareError) as error:
        wait_for_marks(kube_api(cluster, proxy.url), {name: "x"}, timeout=3)

    assert error.value.msg == "Timed out after 3s waiting for %s; 1 node(s) not there yet: %s: %s=None (want x)" % (
        WHAT,
        name,
        LABEL,
    )
    assert node_requests(proxy)[0] == "list" and set(node_requests(proxy)[1:]) == {"watch"}


# --- an object's Events: wait_for_events ------------------------------------------------------------------------


EVENTS_NAMESPACE = "default"  # where the Events about cluster-scoped objects (nodes) go


def record_event(api_client, about, reason, message):
    """An Event about node ``about`` (a name no node has: only this test's Events are about it)."""
    client.CoreV1Api(api_client).create_namespaced_event(
        EVENTS_NAMESPACE,
        {
            "metadata": {"generateName": about + "."},
            "involvedObject": {"kind": "Node", "name": about},
            "reason": reason,
            "message": message,
            "type": "Warning",
        },
    )


def failed_about(config):
    return lambda events: [e for e in events if e["reason"] == "MigConfigFailed" and config in e["message"]]


def reasons_and_messages(events):
    return sorted((event["reason"], event["message"]) for event in events)


def event_requests(proxy, watch):
    return [request for request in proxy.requests(lambda r: r.path == "/api/v1/events" and r.watch == watch)]


@pytest.fixture
def about(api_client):
    """The name of a node no node has, whose Events are deleted after the test."""
    name = "gpu-waits-%s" % uuid.uuid4().hex[:8]
    yield name
    client.CoreV1Api(api_client).delete_collection_namespaced_event(
        EVENTS_NAMESPACE, field_selector="involvedObject.name=%s" % name
    )


def test_events_already_recorded_end_the_wait_at_once(cluster, api_client, proxy, about):
    record_event(api_client, about, "Rebooted", "the node rebooted")
    record_event(api_client, about, "MigConfigFailed", "all-1g.10gb: In use by another client")

    events = wait_for_events(kube_api(cluster, proxy.url), "Node", about, failed_about("all-1g.10gb"), WAIT)

    assert reasons_and_messages(events) == [
        ("MigConfigFailed", "all-1g.10gb: In use by another client"),
        ("Rebooted", "the node rebooted"),
    ]
    assert event_requests(proxy, watch=True) == []


def test_an_event_recorded_after_the_list_is_watched_for(cluster, api_client, proxy, about):
    def record():
        record_event(api_client, about, "MigConfigFailed", "all-3g.40gb: not found")  # another config
        record_event(api_client, about, "MigConfigFailed", "all-1g.10gb: In use by another client")

    proxy.add(Fault(lambda request: request.path == "/api/v1/events" and request.watch, "forward", hook=record))

    events = wait_for_events(kube_api(cluster, proxy.url), "Node", about, failed_about("all-1g.10gb"), WAIT)

    assert reasons_and_messages(events) == [
        ("MigConfigFailed", "all-1g.10gb: In use by another client"),
        ("MigConfigFailed", "all-3g.40gb: not found"),
    ]
    assert len(event_requests(proxy, watch=False)) == 1


def test_no_event_within_the_timeout_is_no_error(cluster, api_client, proxy, about):
    record_event(api_client, about, "Rebooted", "the node rebooted")

    events = wait_for_events(kube_api(cluster, proxy.url), "Node", about, failed_about("all-1g.10gb"), 2)

    assert reasons_and_messages(events) == [("Rebooted", "the node rebooted")]


def test_a_dropped_event_watch_relists(cluster, api_client, proxy, about):
    def record():
        record_event(api_client, about, "MigConfigFailed", "all-1g.10gb: In use by another client")

    proxy.add(Fault(lambda request: request.path == "/api/v1/events" and request.watch, "cut-after-head", hook=record))

    events = wait_for_events(kube_api(cluster, proxy.url), "Node", about, failed_about("all-1g.10gb"), WAIT)

    assert reasons_and_messages(events) == [("MigConfigFailed", "all-1g.10gb: In use by another client")]
    assert len(event_requests(proxy, watch=False)) == 2
