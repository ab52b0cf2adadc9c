# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""wait_for_objects with plain callables standing in for LIST and watch: generators of node dicts
shaped like the API's, checked with the planning module's NodeExpectation.

What the real API server does to a wait (a watch that ends, expires with 410 or drops, then the fresh LIST) is
tested against it in tests/integration/test_api_resilience.py, and follow_forever (the gpu_demand event source's
watch) in tests/integration/test_eda_resilience.py; what stays here is the bookkeeping those do not reach: the
timeout's message, the backoff's numbers on a fake clock, deletions seen by a relist."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from fake_clock import FakeClock
from k8s_objects import cpu_node, t4_node, t4_time_sliced

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError, WatchDropped
from ansible_collections.gpushare.k8s.plugins.module_utils.kube import wait as wait_module
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.retry import RetryPolicy
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import (
    wait_for_events,
    wait_for_objects,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import build_sharing_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import NodeExpectation

SHARED_X4 = NodeExpectation(build_sharing_config("time-slicing", 4)).problem
WHAT = "profile 't4' (time-slicing) on 2 node(s)"


def versioned(obj, resource_version):
    obj["metadata"]["resourceVersion"] = str(resource_version)
    return obj


def bookmark(resource_version):
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": str(resource_version)}}


class FakeApi(object):
    """``lists`` is the successive answers of LIST; ``watches`` the successive watch streams, each a
    list of (type, object) events, or an exception raised once the stream's events are consumed."""

    def __init__(self, lists, watches=()):
        self.lists = list(lists)
        self.watches = list(watches)
        self.list_calls = 0
        self.watch_calls = []
        self.consumed = []

    def list_objects(self):
        self.list_calls += 1
        return self.lists.pop(0)

    def watch_objects(self, resource_version, seconds):
        self.watch_calls.append((resource_version, seconds))
        if not self.watches:
            raise AssertionError("unexpected watch from %s" % resource_version)
        return self._stream(self.watches.pop(0))

    def _stream(self, stream):
        error = None
        if stream and isinstance(stream[-1], Exception):
            stream, error = stream[:-1], stream[-1]
        for event in stream:
            self.consumed.append(event)
            yield event
        if error is not None:
            raise error


def run(api, expectations, timeout=300, **kwargs):
    return wait_for_objects(api.list_objects, api.watch_objects, expectations, timeout, WHAT, "node", **kwargs)


def test_returns_at_once_when_all_are_met():
    a, b = t4_time_sliced("t4-a", 4), t4_time_sliced("t4-b", 4)
    api = FakeApi([([a, b, cpu_node("cpu-1")], "500")])
    result = run(api, {"t4-a": SHARED_X4, "t4-b": SHARED_X4})
    assert result == {"t4-a": a, "t4-b": b}
    assert api.watch_calls == [] and api.list_calls == 1


def test_follows_events_until_met():
    api = FakeApi(
        [([t4_node("t4-a"), t4_node("t4-b"), cpu_node("cpu-1")], "500")],
        [
            [
                ("MODIFIED", versioned(cpu_node("cpu-1"), 501)),
                ("BOOKMARK", bookmark(502)),
                ("MODIFIED", versioned(t4_time_sliced("t4-a", 4), 503)),
                ("MODIFIED", versioned(t4_time_sliced("t4-b", 2), 504)),  # not there yet
                ("MODIFIED", versioned(t4_time_sliced("t4-b", 4), 505)),
                ("MODIFIED", versioned(t4_time_sliced("t4-a", 4), 506)),  # never read: all met before
            ]
        ],
    )
    result = run(api, {"t4-a": SHARED_X4, "t4-b": SHARED_X4})
    assert result["t4-b"]["metadata"]["resourceVersion"] == "505"
    assert result["t4-a"]["metadata"]["resourceVersion"] == "503"
    assert len(api.watch_calls) == 1
    resource_version, seconds = api.watch_calls[0]
    assert resource_version == "500"  # the watch starts where the LIST ended
    assert 0 < seconds <= 300
    assert len(api.consumed) == 5


def test_a_met_object_that_regresses_is_unmet_again():
    api = FakeApi(
        [([t4_node("t4-a")], "10")],
        [[("MODIFIED", versioned(t4_time_sliced("t4-a", 4), 11))]],
    )
    assert run(api, {"t4-a": SHARED_X4})["t4-a"]["metadata"]["resourceVersion"] == "11"

    api = FakeApi(
        [([t4_time_sliced("t4-a", 4), t4_node("t4-b")], "10")],
        [
            [
                ("MODIFIED", versioned(t4_node("t4-a"), 11)),
                ("MODIFIED", versioned(t4_time_sliced("t4-b", 4), 12)),
                ("MODIFIED", versioned(t4_time_sliced("t4-a", 4), 13)),
            ]
        ],
    )
    result = run(api, {"t4-a": SHARED_X4, "t4-b": SHARED_X4})
    assert result["t4-a"]["metadata"]["resourceVersion"] == "13"


def test_other_watch_errors_propagate():
    forbidden = GpuShareError("Failed to watch nodes: forbidden", status=403, reason="Forbidden")
    api = FakeApi([([t4_node("t4-a")], "1")], [[forbidden]])
    with pytest.raises(GpuShareError) as error:
        run(api, {"t4-a": SHARED_X4})
    assert error.value is forbidden


def test_times_out_naming_each_unmet_object_and_its_problem():
    api = FakeApi([([t4_node("t4-a"), t4_time_sliced("t4-b", 2), t4_time_sliced("t4-c", 4)], "1")])
    with pytest.raises(GpuShareError) as error:
        run(api, {"t4-a": SHARED_X4, "t4-b": SHARED_X4, "t4-c": SHARED_X4}, timeout=0)
    msg = error.value.msg
    assert msg.startswith("Timed out after 0s waiting for %s; 2 node(s) not there yet: " % WHAT)
    assert (
        "t4-a: nvidia.com/gpu.replicas=1 (want 4); nvidia.com/gpu.sharing-strategy=none (want time-slicing); "
        "product Tesla-T4 lacks -SHARED; allocatable nvidia.com/gpu=1 (want 4)"
    ) in msg
    assert "t4-b: nvidia.com/gpu.replicas=2 (want 4); allocatable nvidia.com/gpu=2 (want 4)" in msg
    assert msg.index("t4-a:") < msg.index("t4-b:")
    assert "t4-c" not in msg
    assert sorted(error.value.details["unmet"]) == ["t4-a", "t4-b"]


def test_times_out_after_watches_that_bring_nothing(monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(wait_module, "time", clock)

    class Api(FakeApi):
        def watch_objects(self, resource_version, seconds):
            self.watch_calls.append((resource_version, seconds))
            clock.now += seconds  # the server kept the watch open for all of it

            def stream():
                yield "MODIFIED", versioned(t4_time_sliced("t4-a", 2), 7)

            return stream()

    api = Api([([t4_node("t4-a")], "5")])
    with pytest.raises(GpuShareError) as error:
        run(api, {"t4-a": SHARED_X4}, timeout=60)
    assert api.watch_calls == [("5", 60.0)]
    assert error.value.msg.startswith(
        "Timed out after 60s waiting for %s; 1 node(s) not there yet: t4-a: nvidia.com/gpu.replicas=2 (want 4)" % WHAT
    )


def test_raises_when_a_waited_for_object_is_deleted():
    api = FakeApi(
        [([t4_node("t4-a"), t4_node("t4-b")], "1")],
        [[("DELETED", versioned(cpu_node("cpu-1"), 2)), ("DELETED", versioned(t4_node("t4-b"), 3))]],
    )
    with pytest.raises(GpuShareError) as error:
        run(api, {"t4-a": SHARED_X4, "t4-b": SHARED_X4})
    assert error.value.msg == "node t4-b was deleted while waiting for %s." % WHAT


def test_refuses_to_wait_for_objects_that_do_not_exist():
    api = FakeApi([([t4_node("t4-a")], "1")])
    with pytest.raises(GpuShareError) as error:
        run(api, {"t4-a": SHARED_X4, "ghost": SHARED_X4, "gone": SHARED_X4})
    assert error.value.msg == "Cannot wait for %s: node(s) ghost, gone do not exist." % WHAT
    assert api.watch_calls == []


def test_nothing_to_wait_for():
    api = FakeApi([([t4_node("t4-a")], "1")])
    assert run(api, {}) == {}


# --- watches that drop -------------------------------------------------------------------------


def dropped(how="the watch stream broke off: Connection reset by peer"):
    return WatchDropped("Failed to watch nodes: %s" % how)


# No jitter: the backoff before the n-th drop in a row after the first is 0.25 * 2 ** (n - 2) s.
STEADY = RetryPolicy(random=lambda: 0.0)


def test_a_watch_that_keeps_dropping_backs_off_and_keeps_the_deadline(monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(wait_module, "time", clock)
    lists = [([t4_node("t4-a")], str(n)) for n in range(1, 6)] + [([t4_time_sliced("t4-a", 4)], "6")]
    api = FakeApi(lists, [[dropped("the watch stream ended after 0.0s of the 300s asked")]] * 5)
    result = run(api, {"t4-a": SHARED_X4}, timeout=300, policy=STEADY)
    assert result["t4-a"]["metadata"]["resourceVersion"] is not None
    assert api.list_calls == 6 and len(api.watch_calls) == 5
    assert clock.sleeps == [0.25, 0.5, 1.0, 2.0]
    # Each watch asks for what is left of the one deadline, not a fresh timeout.
    assert [seconds for _, seconds in api.watch_calls] == [300, 300, 299.75, 299.25, 298.25]


def test_an_event_resets_the_backoff(monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(wait_module, "time", clock)
    api = FakeApi(
        [([t4_node("t4-a")], "1"), ([t4_node("t4-a")], "2"), ([t4_node("t4-a")], "3"), ([t4_node("t4-a")], "4")],
        [
            [dropped()],
            [dropped()],
            [("BOOKMARK", bookmark(5)), dropped()],
            [("MODIFIED", versioned(t4_time_sliced("t4-a", 4), 6))],
        ],
    )
    run(api, {"t4-a": SHARED_X4}, policy=STEADY)
    assert clock.sleeps == [0.25]  # the second drop in a row; the third came after an event


def test_times_out_while_the_watch_keeps_dropping_and_says_so(monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(wait_module, "time", clock)

    class Api(FakeApi):
        def list_objects(self):
            self.list_calls += 1
            return [t4_node("t4-a")], str(self.list_calls)

        def watch_objects(self, resource_version, seconds):
            self.watch_calls.append((resource_version, seconds))
            return self._stream([dropped()])

    api = Api([])
    with pytest.raises(GpuShareError) as error:
        run(api, {"t4-a": SHARED_X4}, timeout=10, policy=STEADY)
    assert sum(clock.sleeps) == 10  # the backoff never sleeps past the deadline
    msg = error.value.msg
    assert msg.startswith("Timed out after 10s waiting for %s; 1 node(s) not there yet: t4-a: " % WHAT)
    assert msg.endswith(
        "; the watch dropped %d time(s) in a row, last: Failed to watch nodes: the watch stream broke off: "
        "Connection reset by peer" % len(api.watch_calls)
    )


def test_an_object_gone_from_the_relist_was_deleted(monkeypatch):
    monkeypatch.setattr(wait_module, "time", FakeClock(1000.0))
    api = FakeApi([([t4_node("t4-a"), t4_node("t4-b")], "1"), ([t4_node("t4-a")], "9")], [[dropped()]])
    with pytest.raises(GpuShareError) as error:
        run(api, {"t4-a": SHARED_X4, "t4-b": SHARED_X4})
    assert error.value.msg == "node t4-b was deleted while waiting for %s." % WHAT


def test_an_object_gone_from_the_relist_is_fine_when_absence_is(monkeypatch):
    monkeypatch.setattr(wait_module, "time", FakeClock(1000.0))
    api = FakeApi([([t4_node("t4-a"), t4_node("t4-b")], "1"), ([t4_node("t4-b")], "9")], [[dropped()]])
    result = wait_for_objects(
        api.list_objects, api.watch_objects, {"t4-a": lambda node: "still there"}, 60, WHAT, "node", absent_ok=True
    )
    assert result == {}


def test_other_errors_while_relisting_propagate(monkeypatch):
    monkeypatch.setattr(wait_module, "time", FakeClock(1000.0))
    forbidden = GpuShareError("Failed to list nodes: forbidden (HTTP 403)", status=403)

    class Api(FakeApi):
        def list_objects(self):
            if self.list_calls:
                raise forbidden
            return FakeApi.list_objects(self)

    api = Api([([t4_node("t4-a")], "1")], [[dropped()]])
    with pytest.raises(GpuShareError) as error:
        run(api, {"t4-a": SHARED_X4})
    assert error.value is forbidden


# --- an object's Events: wait_for_events ---------------------------------------------------------


def node_event(uid, reason, message, resource_version):
    return {
        "metadata": {"uid": uid, "name": "gpu-a.%s" % uid, "resourceVersion": str(resource_version)},
        "involvedObject": {"kind": "Node", "name": "gpu-a"},
        "reason": reason,
        "message": message,
    }


class FakeEventsApi(FakeApi):
    """The Kube calls wait_for_events makes, over FakeApi's LIST answers and watch streams."""

    def list_events(self, kind, name):
        assert (kind, name) == ("Node", "gpu-a")
        return self.list_objects()

    def watch_events(self, kind, name, resource_version, seconds):
        assert (kind, name) == ("Node", "gpu-a")
        return self.watch_objects(resource_version, seconds)


def failed_about(config):
    return lambda events: [e for e in events if e["reason"] == "MigConfigFailed" and config in e["message"]]


def test_events_already_listed_end_the_wait_at_once():
    failed = node_event("1", "MigConfigFailed", "all-1g.10gb: In use by another client", 7)
    api = FakeEventsApi([([node_event("0", "Rebooted", "", 5), failed], "9")])
    assert wait_for_events(api, "Node", "gpu-a", failed_about("all-1g.10gb"), 5) == [
        node_event("0", "Rebooted", "", 5),
        failed,
    ]
    assert api.watch_calls == []


def test_an_event_recorded_after_the_list_is_watched_for():
    api = FakeEventsApi(
        [([], "10")],
        [
            [
                ("ADDED", node_event("1", "MigConfigFailed", "all-3g.40gb: not found", 11)),  # another config
                ("BOOKMARK", bookmark(12)),
                ("ADDED", node_event("2", "MigConfigFailed", "all-1g.10gb: In use by another client", 13)),
                ("ADDED", node_event("3", "MigConfigFailed", "never read", 14)),
            ]
        ],
    )
    events = wait_for_events(api, "Node", "gpu-a", failed_about("all-1g.10gb"), 5)
    assert [e["metadata"]["uid"] for e in events] == ["1", "2"]
    assert [call[0] for call in api.watch_calls] == ["10"] and 0 < api.watch_calls[0][1] <= 5


def test_no_event_within_the_timeout_is_no_error(monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(wait_module, "time", clock)

    class Api(FakeEventsApi):
        def watch_events(self, kind, name, resource_version, seconds):
            self.watch_calls.append((resource_version, seconds))
            clock.now += seconds  # the server kept the watch open for all of it
            return iter([("DELETED", node_event("0", "Rebooted", "", 6))])

    api = Api([([node_event("0", "Rebooted", "", 5)], "5")])
    assert wait_for_events(api, "Node", "gpu-a", failed_about("all-1g.10gb"), 5) == []
    assert api.watch_calls == [("5", 5.0)]


def test_a_dropped_event_watch_relists(monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(wait_module, "time", clock)
    failed = node_event("1", "MigConfigFailed", "all-1g.10gb: In use by another client", 150)
    api = FakeEventsApi([([], "100"), ([failed], "200")], [[dropped()]])
    assert wait_for_events(api, "Node", "gpu-a", failed_about("all-1g.10gb"), 5) == [failed]
    assert api.list_calls == 2
