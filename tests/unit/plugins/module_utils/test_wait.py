# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""wait_for_objects with plain callables standing in for LIST and watch: generators of node dicts
shaped like the API's, checked with the planning module's NodeExpectation.

wait_for_objects against the real API server is tested in tests/integration: test_waits.py (what a wait returns,
raises and says, drops and their backoff, deletions), test_api_resilience.py (a watch that ends, expires with 410 or
drops, then the fresh LIST) and, for follow_forever (the gpu_demand event source's watch), test_eda_resilience.py.
What stays here is what no server shows on demand: a watch held open until the deadline (a fake clock), the
backoff's reset by an event in the middle of dropping watches, and wait_for_events."""

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


# --- watches that drop -------------------------------------------------------------------------


def dropped(how="the watch stream broke off: Connection reset by peer"):
    return WatchDropped("Failed to watch nodes: %s" % how)


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
    # No jitter: the backoff before the n-th drop in a row after the first is 0.25 * 2 ** (n - 2) s.
    run(api, {"t4-a": SHARED_X4}, policy=RetryPolicy(random=lambda: 0.0, sleep=clock.sleep))
    assert clock.sleeps == [0.25]  # the second drop in a row; the third came after an event


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
