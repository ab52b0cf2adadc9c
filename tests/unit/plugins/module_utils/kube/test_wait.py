# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What of wait_for_objects no API server shows on demand: an event (a bookmark) arriving between watches that drop
resets the backoff. Plain callables stand in for LIST and watch, on a fake clock.

Everything else about the waits is tested against the real API server in tests/integration: test_waits.py (what
wait_for_objects and wait_for_events return, raise and say, drops and their backoff, deletions),
test_api_resilience.py (a watch that ends, expires with 410 or drops, then the fresh LIST) and test_eda_resilience.py
(follow_forever, the gpu_demand event source's watch)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from fake_clock import FakeClock
from k8s_objects import t4_node, t4_time_sliced

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import WatchDropped
from ansible_collections.gpushare.k8s.plugins.module_utils.kube import wait as wait_module
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.retry import RetryPolicy
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_objects
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import build_sharing_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import NodeExpectation

SHARED_X4 = NodeExpectation(build_sharing_config("time-slicing", 4)).problem


def dropped():
    return WatchDropped("Failed to watch nodes: the watch stream broke off: Connection reset by peer")


def stream(*events):
    """A watch stream: its events, then the exception if the last is one."""
    for event in events:
        if isinstance(event, Exception):
            raise event
        yield event


def test_an_event_between_dropping_watches_resets_the_backoff(monkeypatch):
    clock = FakeClock(1000.0)
    monkeypatch.setattr(wait_module, "time", clock)
    bookmark = {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}}
    met = t4_time_sliced("t4-a", 4)
    met["metadata"]["resourceVersion"] = "6"
    watches = [
        stream(dropped()),
        stream(dropped()),
        stream(("BOOKMARK", bookmark), dropped()),
        stream(("MODIFIED", met)),
    ]
    lists = [([t4_node("t4-a")], str(version)) for version in range(1, 5)]

    wait_for_objects(
        lambda: lists.pop(0),
        lambda resource_version, seconds: watches.pop(0),
        {"t4-a": SHARED_X4},
        300,
        "profile 't4' (time-slicing) on 1 node(s)",
        "node",
        # No jitter: the backoff before the n-th drop in a row after the first is 0.25 * 2 ** (n - 2) s.
        policy=RetryPolicy(random=lambda: 0.0, sleep=clock.sleep),
    )

    assert clock.sleeps == [0.25]  # the second drop in a row; the third came after an event
    assert watches == [] and lists == []
