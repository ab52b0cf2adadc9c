# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_demand event source's decisions (plan/sharing_planner/demand_events.py) on API-shaped pods and nodes, with
the time handed in: which pods are demand, one event per settled burst, no event for a demand already planned, the
cool-down."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools

import dpath
import pytest
from k8s_objects import container, pod, t4_node

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.demand_events import (
    ANY_POOL,
    NODES,
    PODS,
    DemandEvents,
    SettleWindow,
    demand_of,
    describe_demand,
    waiting_pod,
)

POOL_LABEL = "k8s.scaleway.com/pool-name"
MIG_SMALL = "nvidia.com/mig-1g.10gb"
SETTLE, LONGEST, COOL_DOWN = 10.0, 60.0, 30.0


def unschedulable(name, resource=MIG_SMALL, count=1, pool=None, namespace="ml"):
    waiting = pod(name, [container(limits={resource: str(count)})], namespace=namespace, phase="Pending")
    waiting["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient %s." % resource,
        }
    ]
    if pool is not None:
        waiting["spec"]["nodeSelector"] = {POOL_LABEL: pool}
    return waiting


def in_pool(node, pool):
    node["metadata"]["labels"][POOL_LABEL] = pool
    return node


def test_only_unschedulable_unbound_pods_asking_for_planned_resources_are_demand():
    not_tried = pod("new", [container(limits={MIG_SMALL: "1"})], phase="Pending")
    bound = unschedulable("bound")
    bound["spec"]["nodeName"] = "gpu-0"
    cpu_only = unschedulable("cpu", resource="cpu")
    memory = unschedulable("hami", resource="nvidia.com/gpumem")
    assert [waiting_pod(p, POOL_LABEL) for p in (not_tried, bound, cpu_only, memory)] == [None] * 4
    assert waiting_pod(unschedulable("a", pool="gpu-h100"), POOL_LABEL) == dict(
        namespace="ml",
        name="a",
        pool="gpu-h100",
        requests={MIG_SMALL: 1},
        reason="0/3 nodes are available: 3 Insufficient %s." % MIG_SMALL,
    )


def test_a_pod_without_the_pools_label_in_its_node_selector_waits_for_any_pool():
    assert waiting_pod(unschedulable("a"), POOL_LABEL)["pool"] == ANY_POOL == "*"
    assert waiting_pod(unschedulable("a", pool="gpu-h100"), None)["pool"] == ANY_POOL
    assert waiting_pod(unschedulable("a", pool=""), POOL_LABEL)["pool"] == ANY_POOL


def test_demand_is_counted_per_pool_and_resource():
    waiting = [
        waiting_pod(p, POOL_LABEL)
        for p in (
            unschedulable("a", pool="h100"),
            unschedulable("b", count=2, pool="h100"),
            unschedulable("c", resource="nvidia.com/gpu"),
        )
    ]
    demand = demand_of(waiting)
    assert demand == {"h100": {MIG_SMALL: 3}, ANY_POOL: {"nvidia.com/gpu": 1}}
    assert describe_demand(demand) == "any pool: 1 nvidia.com/gpu; pool h100: 3 %s" % MIG_SMALL


def test_the_window_closes_after_the_settle_time_or_at_the_latest_after_the_longest():
    window = SettleWindow(SETTLE, LONGEST)
    assert window.due_at() is None
    window.change(100.0)
    window.change(105.0)
    assert window.due_at() == 115.0
    for now in range(110, 200, 5):
        window.change(float(now))
    assert window.due_at() == 160.0
    window.close()
    assert window.due_at() is None


def source(nodes=(), pods=(), now=0.0):
    events = DemandEvents(POOL_LABEL, SETTLE, LONGEST, COOL_DOWN)
    events.listed(NODES, list(nodes), now)
    events.listed(PODS, list(pods), now)
    return events


H100_NODES = [in_pool(t4_node("gpu-%d" % n), "h100") for n in range(3)]


def test_a_burst_gives_one_event_once_it_settled():
    events = source(H100_NODES)
    assert events.take(SETTLE) is None  # the nodes alone: nothing waits
    for second in range(50):
        events.watched(PODS, "ADDED", unschedulable("p-%02d" % second, pool="h100"), 100.0 + second * 0.1)
    last_change = 100.0 + 49 * 0.1
    assert events.due_at() == pytest.approx(last_change + SETTLE)
    assert events.take(last_change + SETTLE - 1) is None and events.why_not is None
    body = events.take(last_change + SETTLE)["gpu_demand"]
    assert body["demand"] == {"h100": {MIG_SMALL: 50}}
    assert [p["name"] for p in body["pods"]] == ["p-%02d" % n for n in range(50)]
    assert body["gpu_nodes"] == {"h100": ["gpu-0", "gpu-1", "gpu-2"]}
    assert body["pool_label"] == POOL_LABEL
    assert body["reason"] == "%s waiting for pool h100: 50, was 0" % MIG_SMALL
    assert events.due_at() is None


def test_a_pods_status_updates_while_it_waits_open_no_window():
    waiting = unschedulable("a")
    events = source(H100_NODES, [waiting])
    assert events.take(SETTLE)
    updated = unschedulable("a")
    updated["status"]["conditions"][0]["message"] = "0/4 nodes are available"
    events.watched(PODS, "MODIFIED", updated, 100.0)
    events.watched(NODES, "MODIFIED", H100_NODES[0], 101.0)  # a heartbeat
    assert events.due_at() is None


def test_the_same_demand_after_a_plan_gives_no_event_and_says_why():
    events = source(H100_NODES, [unschedulable("a", pool="h100")])
    assert events.take(SETTLE)
    # The plan relabels nodes, the pod stays unschedulable and the scheduler rewrites its status: nothing new waits.
    events.watched(PODS, "DELETED", unschedulable("a", pool="h100"), 100.0)
    events.watched(PODS, "ADDED", unschedulable("a", pool="h100"), 101.0)
    assert events.take(200.0) is None
    assert events.why_not == "no event: the demand (pool h100: 1 %s) holds nothing the last event did not" % MIG_SMALL


def test_a_demand_that_shrinks_gives_no_event_and_a_later_wave_gives_one():
    events = source(H100_NODES, [unschedulable("p-%d" % n, pool="h100") for n in range(4)])
    assert events.take(SETTLE)
    for n in range(3):  # served while the plan is applied
        events.watched(PODS, "DELETED", unschedulable("p-%d" % n, pool="h100"), 100.0 + n)
    assert events.take(200.0) is None
    events.watched(PODS, "DELETED", unschedulable("p-3", pool="h100"), 300.0)
    assert events.take(400.0) is None and events.why_not == "no event: no pod waits for planned GPU resources"
    for n in range(4):
        events.watched(PODS, "ADDED", unschedulable("q-%d" % n, pool="h100"), 500.0)
    body = events.take(500.0 + SETTLE)["gpu_demand"]
    assert body["demand"] == {"h100": {MIG_SMALL: 4}} and body["reason"].endswith("4, was 0")


def test_one_more_pod_than_the_last_event_had_gives_an_event():
    events = source(H100_NODES, [unschedulable("a", pool="h100")])
    first = events.take(SETTLE)["gpu_demand"]
    events.watched(PODS, "ADDED", unschedulable("b", pool="h100"), 100.0)
    second = events.take(100.0 + SETTLE)["gpu_demand"]
    assert second["reason"] == "%s waiting for pool h100: 2, was 1" % MIG_SMALL
    assert second["fingerprint"] != first["fingerprint"]


def test_gpu_nodes_joining_while_pods_wait_give_an_event_for_the_same_demand():
    events = source(H100_NODES, [unschedulable("a", pool="h100")])
    assert events.take(SETTLE)
    events.watched(NODES, "ADDED", in_pool(t4_node("gpu-3"), "h100"), 100.0)
    body = events.take(100.0 + SETTLE)["gpu_demand"]
    assert body["reason"] == "the GPU nodes changed"
    assert body["gpu_nodes"] == {"h100": ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]}


def test_gpu_nodes_changing_while_nothing_waits_give_no_event_later():
    events = source(H100_NODES)
    events.watched(NODES, "DELETED", H100_NODES[0], 100.0)
    assert events.take(100.0 + SETTLE) is None
    events.watched(PODS, "ADDED", unschedulable("a", pool="h100"), 200.0)
    assert events.take(200.0 + SETTLE)["gpu_demand"]["reason"] == "%s waiting for pool h100: 1, was 0" % MIG_SMALL


def test_no_event_comes_within_the_cool_down_and_the_one_due_then_carries_the_demand_at_its_end():
    events = source(H100_NODES, [unschedulable("a", pool="h100")])
    assert events.take(SETTLE)
    events.watched(PODS, "ADDED", unschedulable("b", pool="h100"), SETTLE + 1)
    assert events.due_at() == SETTLE + COOL_DOWN
    assert events.take(SETTLE + 1 + SETTLE) is None
    events.watched(PODS, "ADDED", unschedulable("c", pool="h100"), SETTLE + 20)
    body = events.take(SETTLE + COOL_DOWN)["gpu_demand"]
    assert body["demand"] == {"h100": {MIG_SMALL: 3}}


def test_a_relist_that_shows_the_same_pods_changes_nothing():
    pods = [unschedulable("a", pool="h100"), unschedulable("b", pool="h100")]
    events = source(H100_NODES, pods)
    assert events.take(SETTLE)
    events.listed(PODS, pods, 100.0)
    events.listed(NODES, H100_NODES, 100.0)
    assert events.due_at() is None


def test_the_fingerprint_names_the_pods_so_other_pods_with_the_same_requests_are_planned_again():
    first = source(H100_NODES, [unschedulable("a", pool="h100")]).take(SETTLE)["gpu_demand"]
    same = source(H100_NODES, [unschedulable("a", pool="h100")]).take(SETTLE)["gpu_demand"]
    other = source(H100_NODES, [unschedulable("b", pool="h100")]).take(SETTLE)["gpu_demand"]
    assert first["fingerprint"] == same["fingerprint"] != other["fingerprint"]


def keys_of(value, path=()):
    """Every (path, key) of the mappings in ``value``, however deep, lists included."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key
            for found in keys_of(item, path + (key,)):
                yield found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            for found in keys_of(item, path + (index,)):
                yield found


# What a pod's nodeSelector and a node's labels can say of the pool: nothing, an empty value, a pool.
POOL_CHOICES = (None, "", "h100")
RESOURCES = (MIG_SMALL, "nvidia.com/gpu", "nvidia.com/gpu.shared")


def every_event():
    """The events of every combination of pool label, pod pools, node pools and resources, each reason included: a
    first wave, a second one, nodes joining while pods wait."""
    for pool_label, pod_pool, node_pool, resource in itertools.product(
        (POOL_LABEL, None), POOL_CHOICES, POOL_CHOICES, RESOURCES
    ):
        node = t4_node("gpu-0")
        if node_pool is not None:
            node["metadata"]["labels"][POOL_LABEL] = node_pool
        events = DemandEvents(pool_label, SETTLE, LONGEST, 0.0)
        events.listed(NODES, [node], 0.0)
        events.listed(PODS, [unschedulable("a", resource=resource, pool=pod_pool)], 0.0)
        yield events.take(SETTLE)
        events.watched(PODS, "ADDED", unschedulable("b", resource=MIG_SMALL, pool=pod_pool), 100.0)
        yield events.take(100.0 + SETTLE)
        events.watched(NODES, "ADDED", t4_node("gpu-1"), 200.0)
        yield events.take(200.0 + SETTLE)


def test_no_event_has_an_empty_key_so_ansible_rulebooks_reader_can_read_every_one():
    """ansible-rulebook 1.3.2 reads ``meta/source/name`` of each event it handed to the rule engine with dpath, which
    refuses an empty key anywhere in the event; its event reader then ends and no later event is read (issue 37)."""
    events = list(every_event())
    assert len(events) == 2 * 3 * 3 * 3 * 3 and None not in events
    reasons = set(event["gpu_demand"]["reason"].split(" waiting")[0].split(":")[0] for event in events)
    assert reasons >= {MIG_SMALL, "the GPU nodes changed"}
    for event in events:
        assert [(path, key) for path, key in keys_of(event) if not (isinstance(key, str) and key)] == []
        # As ansible-rulebook reads it once its insert_meta_info filter added the source's name.
        assert dpath.get(dict(event, meta={"source": {"name": "gpu_demand"}}), "meta/source/name") == "gpu_demand"
    assert [event["gpu_demand"]["gpu_nodes"] for event in events if event["gpu_demand"]["pool_label"] is None] == [
        {ANY_POOL: ["gpu-0"]},
        {ANY_POOL: ["gpu-0"]},
        {ANY_POOL: ["gpu-0", "gpu-1"]},
    ] * (3 * 3 * 3)
