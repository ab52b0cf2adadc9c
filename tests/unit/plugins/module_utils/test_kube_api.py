# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeApi's error path and retries, with the ApiClient's ``call_api`` (which sends one request)
replaced by a fake; the request itself is built by the real client: watch starts
and streams that fail in each way a real control plane fails, reads retried, writes not retried
after an ambiguous failure. (tests/integration/test_api_resilience.py does the same against the
real API server through a fault-injecting proxy.)"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from urllib.parse import parse_qsl, urlsplit

import pytest

kubernetes = pytest.importorskip("kubernetes")

from fake_clock import FakeClock  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402
from urllib3.exceptions import NewConnectionError, ProtocolError, ReadTimeoutError  # noqa: E402

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import (  # noqa: E402
    GpuShareError,
    OutcomeUnknown,
    WatchDropped,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import KubeApi  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.retry import RetryPolicy  # noqa: E402


class Stream(object):
    """A watch response: yields ``lines`` (advancing the clock by ``step`` each), then raises ``error``
    if given; records close() and release_conn()."""

    def __init__(self, lines, error=None, clock=None, step=0.0):
        self.lines = lines
        self.error = error
        self.clock = clock
        self.step = step
        self.closed = False
        self.released = False

    def __iter__(self):
        for line in self.lines:
            if self.clock is not None:
                self.clock.now += self.step
            yield line
        if self.error is not None:
            raise self.error

    def close(self):
        self.closed = True

    def release_conn(self):
        self.released = True


class Data(object):
    def __init__(self, body):
        self.data = json.dumps(body).encode()


def node(name, resource_version):
    return {"kind": "Node", "metadata": {"name": name, "resourceVersion": str(resource_version)}}


def event(event_type, obj):
    return (json.dumps({"type": event_type, "object": obj}) + "\n").encode()


def status_event(code, reason, message):
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason}
    status["code"] = code
    return event("ERROR", status)


def api_exception(status, message, reason="Reason", retry_after=None):
    exc = ApiException(status=status, reason=reason)
    exc.body = json.dumps({"kind": "Status", "message": message, "code": status}).encode()
    exc.headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return exc


def reset():
    return ProtocolError("Connection broken: ConnectionResetError(104, 'Connection reset by peer')")


@pytest.fixture
def clock():
    return FakeClock(0.0)


@pytest.fixture
def kube(clock):
    api_client = kubernetes.client.ApiClient(kubernetes.client.Configuration())
    return KubeApi(
        api_client, RetryPolicy(clock=clock.monotonic, sleep=clock.sleep, random=lambda: 0.0, max_watch_seconds=300)
    )


class Reply(object):
    """What ``ApiClient.call_api`` returns for a 2xx answer: the raw response in ``response``."""

    status = 200

    def __init__(self, response):
        self.response = response


class Calls(object):
    """Stands in for ``ApiClient.call_api``: each call takes the next of ``answers`` (raise it if it is
    an exception, answer 200 with it otherwise) and records the request: method, url (with its query),
    headers, body and the request timeout."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    def __call__(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        self.calls.append(Request(method, url, header_params, body, _request_timeout))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return Reply(answer)


class Request(object):
    def __init__(self, method, url, headers, body, timeout):
        self.method = method
        url = urlsplit(url)
        self.path = url.path
        self.query = dict(parse_qsl(url.query))
        self.headers = headers
        self.body = body
        self.timeout = timeout


def answer_with(kube, calls):
    kube.api_client.call_api = calls
    return calls


def watch(kube, calls, resource_version="100", seconds=60):
    answer_with(kube, calls)
    return list(kube.watch_nodes(resource_version, seconds))


# --- the client ------------------------------------------------------------------------------


def test_urllib3_pools_of_the_client_retry_nothing(kube):
    # KubeApi decides every retry; urllib3 would otherwise retry a DELETE whose connection broke.
    assert kube.api_client.rest_client.pool_manager.connection_pool_kw["retries"] is False


# --- watches ---------------------------------------------------------------------------------


def test_a_watch_yields_events_and_asks_for_a_bounded_stream(kube, clock):
    stream = Stream([event("ADDED", node("a", 101)), b"\n", event("BOOKMARK", node("", 102))], clock=clock, step=30)
    calls = Calls(stream)
    assert watch(kube, calls) == [("ADDED", node("a", 101)), ("BOOKMARK", node("", 102))]
    request = calls.calls[0]
    assert request.method == "GET" and request.path == "/api/v1/nodes"
    assert request.query == {
        "watch": "true",
        "resourceVersion": "100",
        "timeoutSeconds": "60",
        "allowWatchBookmarks": "true",
    }
    assert request.timeout == (10.0, 75.0)  # reads may pause until the server ends the watch
    assert stream.released and not stream.closed  # a finished stream's connection can be reused


def test_a_watch_is_never_longer_than_max_watch_seconds(kube, clock):
    calls = Calls(Stream([event("ADDED", node("a", 101))], clock=clock, step=300))
    watch(kube, calls, seconds=900)
    assert calls.calls[0].query["timeoutSeconds"] == "300"


def test_a_watch_start_refused_names_the_watch_and_gives_the_servers_message(kube):
    forbidden = api_exception(
        403, 'nodes is forbidden: User "gpushare-nobody" cannot watch resource "nodes"', reason="Forbidden"
    )
    with pytest.raises(GpuShareError) as error:
        watch(kube, Calls(forbidden))
    assert not isinstance(error.value, WatchDropped)
    assert error.value.status == 403 and error.value.reason == "Forbidden"
    assert error.value.msg == (
        'Failed to watch nodes: nodes is forbidden: User "gpushare-nobody" cannot watch resource "nodes" (HTTP 403)'
    )


def test_a_watch_start_answered_410_is_not_retried(kube, clock):
    calls = Calls(api_exception(410, "too old resource version: 100 (5000)", reason="Gone"))
    with pytest.raises(GpuShareError) as error:
        watch(kube, calls)
    assert len(calls.calls) == 1 and clock.sleeps == []
    assert error.value.status == 410
    assert error.value.msg == "Failed to watch nodes: too old resource version: 100 (5000) (HTTP 410)"


def test_a_watch_start_is_retried_like_a_read(kube, clock):
    stream = Stream([event("ADDED", node("a", 101))], clock=clock, step=60)
    calls = Calls(api_exception(503, "unavailable"), NewConnectionError(None, "refused"), stream)
    assert watch(kube, calls) == [("ADDED", node("a", 101))]
    assert len(calls.calls) == 3 and clock.sleeps == [0.25, 0.5]
    assert [call.query["resourceVersion"] for call in calls.calls] == ["100"] * 3


def test_a_watch_start_gives_up_within_the_watch_length(kube, clock):
    calls = Calls(*[api_exception(503, "unavailable")] * 50)
    with pytest.raises(GpuShareError) as error:
        watch(kube, calls, seconds=2)
    assert sum(clock.sleeps) == 2
    assert error.value.status == 503 and "Gave up after" in error.value.msg


@pytest.mark.parametrize(
    "failure",
    [reset(), ReadTimeoutError(None, "/api/v1/nodes", "Read timed out."), ConnectionResetError(104, "reset")],
    ids=["ProtocolError", "ReadTimeoutError", "ConnectionResetError"],
)
def test_a_stream_that_breaks_off_is_a_watch_dropped_naming_the_watch(kube, failure):
    stream = Stream([event("ADDED", node("a", 101))], error=failure)
    answer_with(kube, Calls(stream))
    events = kube.watch_nodes("100", 60)
    assert next(events) == ("ADDED", node("a", 101))
    with pytest.raises(WatchDropped) as error:
        next(events)
    assert error.value.msg.startswith("Failed to watch nodes: the watch stream broke off: ")
    assert error.value.status is None
    assert stream.closed and stream.released  # never back into the pool mid-stream


def test_a_cut_line_is_a_watch_dropped(kube):
    stream = Stream([event("ADDED", node("a", 101)), b'{"type":"MODIFIED","object":{"kind":'])
    with pytest.raises(WatchDropped) as error:
        watch(kube, Calls(stream))
    assert error.value.msg.startswith("Failed to watch nodes: the watch stream broke off: ")


def test_a_stream_that_ends_before_its_time_is_a_watch_dropped(kube, clock):
    stream = Stream([event("ADDED", node("a", 101))], clock=clock, step=5)
    with pytest.raises(WatchDropped) as error:
        watch(kube, Calls(stream), seconds=60)
    assert error.value.msg == "Failed to watch nodes: the watch stream ended after 5.0s of the 60s asked"
    assert stream.released


def test_a_stream_the_server_ends_on_time_just_ends(kube, clock):
    # The server's timer starts after ours: its end never comes before the asked seconds.
    assert watch(kube, Calls(Stream([], clock=clock, step=0)), seconds=1) == []
    clock.now = 0
    stream = Stream([event("BOOKMARK", node("", 7))], clock=clock, step=59.5)
    assert watch(kube, Calls(stream), seconds=60) == [("BOOKMARK", node("", 7))]


def test_an_error_event_410_raises_gone_with_the_servers_message(kube):
    stream = Stream([event("ADDED", node("a", 101)), status_event(410, "Expired", "too old resource version: 1 (50)")])
    with pytest.raises(GpuShareError) as error:
        watch(kube, Calls(stream))
    assert not isinstance(error.value, WatchDropped)
    assert error.value.status == 410 and error.value.reason == "Expired"
    assert error.value.msg == "Failed to watch nodes: too old resource version: 1 (50) (HTTP 410)"
    assert stream.closed and stream.released


@pytest.mark.parametrize("code", [429, 500, 503, 504])
def test_an_error_event_with_a_transient_code_is_a_watch_dropped(kube, code):
    stream = Stream([status_event(code, "InternalError", "etcd leader changed")])
    with pytest.raises(WatchDropped) as error:
        watch(kube, Calls(stream))
    assert error.value.status == code
    assert error.value.msg == "Failed to watch nodes: etcd leader changed (HTTP %d)" % code


def test_other_error_events_are_plain_errors(kube):
    stream = Stream([status_event(403, "Forbidden", "no longer allowed")])
    with pytest.raises(GpuShareError) as error:
        watch(kube, Calls(stream))
    assert not isinstance(error.value, WatchDropped) and error.value.status == 403


def test_a_consumer_that_stops_early_closes_the_stream(kube):
    stream = Stream([event("ADDED", node("a", 101)), event("ADDED", node("b", 102))])
    answer_with(kube, Calls(stream))
    events = kube.watch_nodes("100", 60)
    next(events)
    events.close()
    assert stream.closed and stream.released


def test_other_watches_name_their_objects(kube):
    calls = answer_with(kube, Calls(Stream([], error=reset())))
    with pytest.raises(WatchDropped) as error:
        list(kube.watch_pods_on_node("gpu-a100-0", "5", 60))
    assert error.value.msg.startswith("Failed to watch pods on node gpu-a100-0: the watch stream broke off: ")
    assert calls.calls[0].path == "/api/v1/pods" and calls.calls[0].query["fieldSelector"] == "spec.nodeName=gpu-a100-0"
    calls = answer_with(kube, Calls(api_exception(403, "daemonsets is forbidden", reason="Forbidden")))
    with pytest.raises(GpuShareError) as error:
        list(kube.watch_daemon_sets("gpu-operator", "5", 60))
    assert calls.calls[0].path == "/apis/apps/v1/namespaces/gpu-operator/daemonsets"
    assert error.value.msg == "Failed to watch DaemonSets in gpu-operator: daemonsets is forbidden (HTTP 403)"


# --- reads and writes ------------------------------------------------------------------------


def test_a_list_is_retried_and_sends_request_timeouts(kube, clock):
    body = Data({"items": [node("a", 1)], "metadata": {"resourceVersion": "9"}})
    calls = answer_with(kube, Calls(api_exception(429, "throttled", retry_after=1), reset(), body))
    assert kube.list_nodes() == ([node("a", 1)], "9")
    assert len(calls.calls) == 3 and clock.sleeps == [1.0, 0.5]
    assert all(call.timeout == (10.0, 60.0) for call in calls.calls)


def test_a_patch_is_not_retried_after_the_connection_broke(kube, clock):
    calls = answer_with(kube, Calls(reset()))
    with pytest.raises(OutcomeUnknown) as error:
        kube.patch_node("gpu-a100-0", {"metadata": {"labels": {"a": "b"}}})
    assert len(calls.calls) == 1 and clock.sleeps == []
    assert error.value.msg.startswith("Failed to patch node gpu-a100-0: cannot reach the Kubernetes API: ")
    assert "Whether it was applied is unknown" in error.value.msg


def test_a_refused_patch_is_retried(kube, clock):
    calls = answer_with(kube, Calls(NewConnectionError(None, "Connection refused"), Data({"metadata": {"name": "a"}})))
    assert kube.patch_node("a", {"metadata": {"labels": {"x": None}}}) == {"metadata": {"name": "a"}}
    assert len(calls.calls) == 2
    request = calls.calls[1]
    assert request.method == "PATCH" and request.path == "/api/v1/nodes/a"
    assert request.headers["Content-Type"] == "application/merge-patch+json"
    assert request.body == {"metadata": {"labels": {"x": None}}}  # sent as JSON: null deletes a label


def test_an_eviction_refused_by_a_budget_is_not_retried(kube, clock):
    calls = answer_with(
        kube, Calls(api_exception(429, "Cannot evict pod as it would violate the pod's disruption budget."))
    )
    with pytest.raises(GpuShareError) as error:
        kube.evict_pod("default", "cuda-job")
    assert len(calls.calls) == 1 and error.value.status == 429 and not isinstance(error.value, OutcomeUnknown)
    assert error.value.msg.startswith("Failed to evict pod default/cuda-job: Cannot evict pod")


def test_a_create_that_conflicts_fails_with_409(kube):
    calls = answer_with(kube, Calls(api_exception(409, 'configmaps "cm" already exists', reason="Conflict")))
    with pytest.raises(GpuShareError) as error:
        kube.create_config_map("gpu-operator", "cm", {"a": "b"})
    assert len(calls.calls) == 1 and error.value.status == 409


def test_a_missing_object_reads_as_none_without_retries(kube):
    calls = answer_with(kube, Calls(api_exception(404, 'configmaps "cm" not found', reason="Not Found")))
    assert kube.get_config_map("gpu-operator", "cm") is None
    assert len(calls.calls) == 1


def test_a_name_is_one_escaped_path_segment(kube):
    # A name the API would refuse never reaches another object's path.
    calls = answer_with(kube, Calls(Data({})))
    kube.get_config_map("gpu-operator", "a/../b c")
    assert calls.calls[0].path == "/api/v1/namespaces/gpu-operator/configmaps/a%2F..%2Fb%20c"


def test_a_missing_custom_resource_lists_as_empty(kube):
    answer_with(kube, Calls(api_exception(404, "the server could not find the requested resource")))
    assert kube.list_cluster_policies() == []


@pytest.mark.parametrize(
    "args, attributes",
    [
        (("patch", "", "nodes"), {"verb": "patch", "group": "", "resource": "nodes"}),
        (
            ("create", "", "pods/eviction", "team-a"),
            {"verb": "create", "group": "", "resource": "pods", "subresource": "eviction", "namespace": "team-a"},
        ),
    ],
)
def test_may_asks_a_self_subject_access_review(kube, args, attributes):
    calls = answer_with(kube, Calls(Data({"status": {"allowed": True}}), Data({"status": {"allowed": False}})))
    assert kube.may(*args) is True
    assert kube.may(*args) is False
    request = calls.calls[0]
    assert (request.method, request.path) == ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
    assert request.body["spec"]["resourceAttributes"] == attributes


def test_the_writer_refuses_before_any_write_what_the_identity_may_not_do(kube):
    from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites
    from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import OperatorInstall
    from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import write_plan

    plan = ObjectWrites()
    plan.create_config_map = {"time-slicing": "version: v1\n"}
    plan.policy_patch = {"spec": {"devicePlugin": {"config": {"name": "time-slicing-config"}}}}
    plan.node_patches = {"gpu-0": {"metadata": {"labels": {"nvidia.com/device-plugin.config": "time-slicing"}}}}
    operator = OperatorInstall({"metadata": {"name": "cluster-policy"}}, "gpu-operator", None)
    # Asked in (verb, group, resource, namespace) order: create configmaps, patch nodes, patch clusterpolicies.
    allowed = [True, False, False]
    calls = answer_with(kube, Calls(*[Data({"status": {"allowed": answer}}) for answer in allowed]))
    with pytest.raises(GpuShareError) as error:
        write_plan(kube, operator, plan)
    assert [request.method for request in calls.calls] == ["POST"] * 3  # the reviews, and no write
    assert error.value.status == 403
    assert error.value.msg.startswith("Nothing was written: the API server would refuse part of this change.")
    assert "lacks 'patch' on 'nodes'; bind the gpushare-sharing ClusterRole" in error.value.msg
    assert "lacks 'patch' on 'clusterpolicies.nvidia.com'" in error.value.msg
    assert "configmaps" not in error.value.msg
