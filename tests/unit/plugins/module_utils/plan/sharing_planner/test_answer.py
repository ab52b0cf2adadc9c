# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_sharing_plan's answer (plan/sharing_planner/answer.py) from API-shaped nodes and pods: the pools, the demand
read, what each node serves and takes, the unserved and why, the apply arguments (the search itself is test_search's).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import (
    a100_node,
    container,
    h100_mig_mixed,
    machine,
    machine_autoscaler,
    machineset,
    node,
    pod,
    t4_node,
    t4_time_sliced,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.answer import sharing_plan_answer
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.apply import config_name_of
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.demand import request_resource
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import UNKNOWN, GpuKind
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.growth import CapacitySources
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.settings import (
    given_request,
    plan_settings,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.supply import current_states

POOL_LABEL = "k8s.scaleway.com/pool-name"


def states(*nodes):
    return [NodeGpuState.from_node(body) for body in nodes]


def pending(name, resource, count=1, pool=None, message=None):
    body = pod(name, [container(limits={resource: str(count)})], phase="Pending")
    if pool:
        body["spec"]["nodeSelector"] = {POOL_LABEL: pool}
    if message:
        body["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        ]
    return body


def running(name, node_name, resource, count=1):
    return pod(name, [container(limits={resource: str(count)})], node_name=node_name)


def with_pool(body, pool):
    body["metadata"]["labels"][POOL_LABEL] = pool
    return body


CLUSTER_FACTS = ("mig_allowed", "mig_strategy", "single_mig_nodes")


def plan(nodes, pods=(), **options):
    """The answer for ``options``: the module's parameters, and the cluster facts the runner adds."""
    params = dict((name, value) for name, value in options.items() if name not in CLUSTER_FACTS)
    facts = dict((name, value) for name, value in options.items() if name in CLUSTER_FACTS)
    return sharing_plan_answer(states(*nodes), list(pods), {}, plan_settings(params)._replace(**facts))


def test_a_mig_config_that_cannot_be_read_back_is_unknown_and_kept_whole():
    body = h100_mig_mixed("h100")
    body["metadata"]["labels"]["nvidia.com/mig.config"] = "team-layout"
    assert current_states(NodeGpuState.from_node(body), {}) == (UNKNOWN, UNKNOWN)
    answer = plan([body])
    assert answer["nodes"]["h100"]["change"] is False


def test_pending_pods_become_the_demand_with_the_schedulers_reason():
    message = "0/1 nodes are available: 1 Insufficient nvidia.com/mig-3g.20gb."
    answer = plan([a100_node("a100")], [pending("p", "nvidia.com/mig-3g.20gb", message=message)])
    assert answer["pending_pods"] == [
        dict(namespace="ml", name="p", pool="", requests={"nvidia.com/mig-3g.20gb": 1}, reason=message)
    ]
    assert answer["nodes"]["a100"]["mode"] == "mig" and answer["unserved"] == []
    assert answer["nodes"]["a100"]["takes"] == ["ml/p"]
    assert answer["apply"]["gpu_mig_config"][0]["nodes"] == {"names": ["a100"]}


def test_pods_wait_in_the_pool_their_node_selector_names():
    nodes = [with_pool(t4_node("t4-a"), "a"), with_pool(t4_node("t4-b"), "b")]
    pods = [running("r", "t4-b", "nvidia.com/gpu"), pending("p", "nvidia.com/gpu", pool="b")]
    answer = plan(nodes, pods, pool_label=POOL_LABEL)
    assert answer["pools"]["b"]["demand"] == {"nvidia.com/gpu": 2}
    assert answer["nodes"]["t4-b"]["mode"] == GpuKind.TIME_SLICING and answer["nodes"]["t4-a"]["change"] is False


def test_a_pod_naming_no_pool_waits_in_the_one_with_room():
    nodes = [with_pool(t4_node("t4-a"), "a"), with_pool(t4_node("t4-b"), "b")]
    answer = plan(
        nodes, [running("r", "t4-a", "nvidia.com/gpu"), pending("p", "nvidia.com/gpu")], pool_label=POOL_LABEL
    )
    assert answer["pending_pods"][0]["pool"] == "b" and answer["nodes_to_change"] == []


def test_the_unserved_say_why():
    a30 = node(
        "a30",
        dict(
            (key, value)
            for key, value in a100_node("x")["metadata"]["labels"].items()
            if not key.startswith("feature.node")
        ),
        capacity={"nvidia.com/gpu": "1"},
    )
    a30["metadata"]["labels"].update(
        {"nvidia.com/gpu.product": "NVIDIA-A30", "nvidia.com/gpu.memory": "24576", "nvidia.com/gpu.count": "1"}
    )
    answer = plan([a30], [pending("big", "nvidia.com/mig-7g.80gb")])
    assert [u["resource"] for u in answer["unserved"]] == ["nvidia.com/mig-7g.80gb"]
    assert (
        "no GPU model in the selected nodes has the MIG profile 7g.80gb (A30 24GB:" in answer["unserved"][0]["reason"]
    )
    t4 = plan([t4_node("t4")], [pending("mig", "nvidia.com/mig-1g.10gb")])
    assert "may take MIG" in t4["unserved"][0]["reason"]
    vks = plan([a100_node("a100")], [pending("mig", "nvidia.com/mig-1g.5gb")], mig_allowed=False)
    assert "may take MIG" in vks["unserved"][0]["reason"]


def test_running_pods_stop_a_mig_change_unless_moves_are_allowed():
    nodes = [a100_node("a100", count=1)]
    # Two instances for one whole GPU: the change serves more, at the cost of the running pod's move.
    pods = [running("r", "a100", "nvidia.com/gpu"), pending("p", "nvidia.com/mig-1g.5gb", count=2)]
    kept = plan(nodes, pods)
    assert kept["nodes_to_change"] == [] and "allow_moves" in kept["unserved"][0]["reason"]
    moved = plan(nodes, pods, allow_moves=True)
    assert moved["nodes"]["a100"]["pods_to_move"] == ["ml/r"]
    assert moved["apply"]["gpu_mig_config"][0]["drain"] is True


def test_leaving_time_slicing_for_mig_resets_the_node_first():
    answer = plan([time_sliced_a100()], [pending("p", "nvidia.com/mig-3g.20gb")])
    assert answer["apply"]["gpu_reset"] == [dict(nodes=dict(names=["a100"]), drain=False)]
    assert answer["apply"]["gpu_mig_config"][0]["layout"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 1}}
    ]


def time_sliced_a100():
    body = a100_node("a100", count=1)
    body["metadata"]["labels"].update(
        {"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "2"}
    )
    body["status"]["capacity"]["nvidia.com/gpu"] = "2"
    return body


def test_given_requests_need_a_pool_when_there_are_several():
    nodes = [with_pool(t4_node("t4-a"), "a"), with_pool(t4_node("t4-b"), "b")]
    with pytest.raises(GpuShareError, match=r"requests\[1\] names no pool.*a, b"):
        plan(nodes, requests=[dict(resource="nvidia.com/gpu", count=2)], pool_label=POOL_LABEL)
    with pytest.raises(GpuShareError, match=r"pool c has no selected GPU node \(pools: a, b\)"):
        plan(nodes, requests=[dict(resource="nvidia.com/gpu", count=2, pool="c")], pool_label=POOL_LABEL)
    answer = plan(nodes, requests=[dict(resource="nvidia.com/gpu", count=3, pool="a")], pool_label=POOL_LABEL)
    assert answer["nodes"]["t4-a"]["takes"] == ["requests[1]"] and answer["nodes"]["t4-b"]["takes"] == []
    assert answer["apply"]["gpu_timeslicing"] == [
        dict(config_key="gpushare-plan-ts-3", replicas=3, rename_by_default=False, nodes=dict(names=["t4-a"]))
    ]


def test_memory_no_gpu_of_the_pool_holds_is_unserved_with_its_reason_not_planned():
    # A T4 has 15360 MiB (GFD's gpu.memory); 500 GiB is on no GPU, 15 GiB fits a whole T4.
    assert request_resource(given_request(dict(memory_gib=500)), [], 15360).impossible == (
        "it asks for 500 GiB of GPU memory, and the largest GPU of the pool has 15.0 GiB"
    )
    answer = plan([t4_node("t4")], requests=[dict(memory_gib=500, count=2), dict(memory_gib=15, count=1)])
    assert answer["pools"][""]["demand"] == {"nvidia.com/gpu": 1}
    assert answer["unserved"] == [
        dict(
            pool="",
            resource="nvidia.com/gpu",
            count=2,
            reason="no GPU of the selected nodes can serve requests[1]: it asks for 500 GiB of GPU memory, and the "
            "largest GPU of the pool has 15.0 GiB",
        )
    ]
    # On an H100 pool 500 GiB is beyond the largest profile and the whole GPU (81559 MiB, NVML).
    h100 = plan([h100_mig_mixed("h100")], requests=[dict(memory_gib=500, count=1)])
    assert h100["pools"][""]["demand"] == {} and "largest GPU of the pool has 79.6 GiB" in h100["unserved"][0]["reason"]


def test_replicas_stop_at_max_replicas_and_the_rest_is_unserved_with_its_reason():
    answer = plan([t4_node("t4", count=2)], requests=[dict(resource="nvidia.com/gpu", count=1000000)], max_replicas=10)
    assert answer["nodes"]["t4"]["replicas"] == 10 and answer["pools"][""]["served"] == 20
    assert answer["pools"][""]["exact"] is True and answer["pools"][""]["bound"]["served"] == 20
    assert answer["unserved"][0]["count"] == 1000000 - 20
    assert "shared by at most 10 replicas per GPU: max_replicas" in answer["unserved"][0]["reason"]


def test_no_mig_is_planned_while_the_single_strategy_serves_mig_nodes():
    pods = [pending("p", "nvidia.com/mig-3g.20gb")]
    single = plan([a100_node("a100")], pods, mig_strategy="single", single_mig_nodes=["gpu-h100-0"])
    assert single["nodes_to_change"] == [] and "gpu-h100-0 run MIG under it" in single["findings"][0]
    assert "strategy is single" in single["unserved"][0]["reason"]
    fresh = plan([a100_node("a100")], pods, mig_strategy="single", single_mig_nodes=[])
    assert fresh["findings"] == [] and fresh["apply"]["gpu_mig_config"][0]["strategy"] == "mixed"


def capacity_plan(nodes, pods, machinesets, **options):
    """The answer with capacity: the MachineSets given (no MachineAutoscaler: their size is the plan's), no
    ClusterAutoscaler; each node with ``machine`` in its annotations is its MachineSet's."""
    machines = [
        machine(
            "m-%s" % body["metadata"]["name"], body["metadata"]["annotations"]["machineset"], body["metadata"]["name"]
        )
        for body in nodes
        if "machineset" in body["metadata"]["annotations"]
    ]
    sources = CapacitySources(machinesets, [], [], machines, list(nodes), ())
    settings = plan_settings(dict(options, capacity=True))._replace(now=options.get("now", 0))
    return sharing_plan_answer(states(*nodes), list(pods), {}, settings, sources)


def a100_pool_machineset(name, pool, replicas=1):
    labels = {POOL_LABEL: pool, "cluster-api/accelerator": "nvidia-a100"}
    found = machineset(name, labels=labels, annotations={"machine.openshift.io/GPU": "2"})
    found["spec"]["replicas"] = replicas
    return found


def made_by(body, machineset_name, pool):
    body["metadata"]["annotations"]["machineset"] = machineset_name
    return with_pool(body, pool)


def test_a_pool_whose_gpus_are_taken_adds_the_nodes_the_waiting_pods_need_in_their_layout():
    """Both GPUs of the one A100 node run a pod (no moves): the 3g.20gb pods need new nodes, whole A100s of 2 GPUs
    made by the MachineSet, each split 2 x 3g.20gb."""
    a100 = made_by(a100_node("a100-0"), "gpu-a100", "a100")
    pods = [running("busy-%d" % n, "a100-0", "nvidia.com/gpu") for n in range(2)]
    pods += [pending("wait-%d" % n, "nvidia.com/mig-3g.20gb", pool="a100") for n in range(6)]
    answer = capacity_plan(
        [a100], pods, [a100_pool_machineset("gpu-a100", "a100")], pool_label=POOL_LABEL, max_new_nodes=5
    )
    pool = answer["pools"]["a100"]
    assert (pool["served"], pool["new_nodes"], pool["new_node_cost"], pool["exact"]) == (8, 2, 4, True)
    assert answer["unserved"] == [] and answer["nodes_to_change"] == []
    [grower] = answer["capacity"]["pools"]["a100"]
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]
    sharing = dict(mode="mig", config_name=config_name_of(layout), layout=layout)
    assert grower["planned"] == dict(new_nodes=2, size=3, mode="mig", layout=layout, replicas=None, sharing=sharing)
    # gpu_machineset's arguments: the new replicas, the layout written under the name the plan gives it everywhere.
    assert answer["apply"]["gpu_machineset"] == [
        dict(name="gpu-a100", machine_api_namespace="openshift-machine-api", replicas=3, sharing=sharing)
    ]
    [decision] = answer["capacity"]["decisions"]
    assert decision.startswith("MachineSet openshift-machine-api/gpu-a100: add 2 node(s), size 1 -> 3, booting into")
    # Without max_new_nodes the plan adds none and says what stays unserved, and why no node is added.
    answer = capacity_plan([a100], pods, [a100_pool_machineset("gpu-a100", "a100")], pool_label=POOL_LABEL)
    assert "new_nodes" not in answer["pools"]["a100"] and answer["unserved"][0]["count"] == 6
    assert answer["apply"]["gpu_machineset"] == []
    assert answer["capacity"]["decisions"] == [
        "pool a100: 6 x nvidia.com/mig-3g.20gb stay unserved and no node is added: max_new_nodes is 0 "
        "(gpu_autoplan_max_new_nodes, sharing_plan_max_new_nodes)"
    ]


def test_the_hourly_cap_counts_the_nodes_the_collection_added_within_the_hour():
    """The MachineSet's record shows one node added 10 minutes ago: with max_new_nodes_per_hour 1 no node is added
    now, and the decision says so; an hour later the cap is whole again."""
    a100 = made_by(a100_node("a100-0"), "gpu-a100", "a100")
    pods = [running("busy-%d" % n, "a100-0", "nvidia.com/gpu") for n in range(2)]
    pods += [pending("wait-%d" % n, "nvidia.com/mig-3g.20gb", pool="a100") for n in range(2)]
    recorded = a100_pool_machineset("gpu-a100", "a100")
    recorded["metadata"]["annotations"]["gpushare.k8s/scale-ups"] = '[{"at": "2026-11-29T07:00:00Z", "nodes": 1}]'
    ten_minutes_later = 1795935600 + 600
    options = dict(pool_label=POOL_LABEL, max_new_nodes=5, max_new_nodes_per_hour=1)
    answer = capacity_plan([a100], pods, [recorded], now=ten_minutes_later, **options)
    limits = answer["capacity"]["limits"]
    assert (limits["added_last_hour"], limits["allowed"]) == (1, 0) and answer["apply"]["gpu_machineset"] == []
    assert "the hourly cap is reached: 1 node(s) added in the last hour" in answer["capacity"]["decisions"][0]
    answer = capacity_plan([a100], pods, [recorded], now=ten_minutes_later + 3600, **options)
    assert answer["capacity"]["limits"]["allowed"] == 1 and answer["pools"]["a100"]["new_nodes"] == 1


def test_an_idle_node_the_collection_added_is_taken_back_once_it_has_been_there_long_enough():
    """The MachineSet's record says the collection added one of its two nodes. Nothing waits and one node runs no GPU
    pod: after scale_in_after it is proposed for removal; not while a pod waits in the pool, nor before its time."""
    joined = "2026-11-29T07:00:00Z"
    nodes = [made_by(a100_node("a-%d" % n), "gpu-a100", "a100") for n in range(2)]
    for body in nodes:
        body["metadata"]["creationTimestamp"] = joined
    busy = [running("busy-%d" % n, "a-0", "nvidia.com/gpu") for n in range(2)]
    recorded = a100_pool_machineset("gpu-a100", "a100", replicas=2)
    recorded["metadata"]["annotations"]["gpushare.k8s/added-nodes"] = "1"
    after = 1795935600 + 1800
    answer = capacity_plan(nodes, busy, [recorded], pool_label=POOL_LABEL, now=after)
    [grower] = answer["capacity"]["pools"]["a100"]
    assert grower["scale_in"] == dict(nodes=["a-1"], size=1)
    assert answer["apply"]["gpu_machineset"] == [
        dict(name="gpu-a100", machine_api_namespace="openshift-machine-api", replicas=1)
    ]
    assert (
        "take back 1 node(s) the collection added, size 2 -> 1: a-1 run no GPU pod"
        in answer["capacity"]["decisions"][0]
    )
    too_soon = capacity_plan(nodes, busy, [recorded], pool_label=POOL_LABEL, now=after - 1)
    waiting = busy + [pending("wait", "nvidia.com/mig-3g.20gb", pool="a100")]
    while_waiting = capacity_plan(nodes, waiting, [recorded], pool_label=POOL_LABEL, now=after)
    unrecorded = capacity_plan(
        nodes, busy, [a100_pool_machineset("gpu-a100", "a100", replicas=2)], pool_label=POOL_LABEL, now=after
    )
    for answer in (too_soon, while_waiting, unrecorded):
        assert "scale_in" not in answer["capacity"]["pools"]["a100"][0] and answer["apply"]["gpu_machineset"] == []


def test_pools_that_together_exceed_a_shared_cap_are_planned_one_after_the_other_and_not_proven():
    nodes = [made_by(a100_node("a-0"), "set-a", "a"), made_by(a100_node("b-0"), "set-b", "b")]
    pods = [running("busy-%s-%d" % (n, i), "%s-0" % n, "nvidia.com/gpu") for n in "ab" for i in range(2)]
    pods += [pending("wait-%s" % n, "nvidia.com/mig-3g.20gb", pool=n) for n in "ab"]
    sets = [a100_pool_machineset("set-a", "a"), a100_pool_machineset("set-b", "b")]
    answer = capacity_plan(nodes, pods, sets, pool_label=POOL_LABEL, max_new_nodes=1)
    assert [answer["pools"][p]["new_nodes"] for p in "ab"] == [1, 0]
    assert [answer["pools"][p]["exact"] for p in "ab"] == [False, False]
    assert "would exceed max_new_nodes" in answer["findings"][0]
    # With room for both, each pool's plan is the joint best: proven.
    answer = capacity_plan(nodes, pods, sets, pool_label=POOL_LABEL, max_new_nodes=2)
    assert [answer["pools"][p]["new_nodes"] for p in "ab"] == [1, 1] and answer["findings"] == []
    assert [answer["pools"][p]["exact"] for p in "ab"] == [True, True]


def test_a_pool_no_node_is_in_yet_is_planned_with_the_nodes_its_machineset_at_zero_may_add():
    """Pods name pool "new" through their nodeSelector; only a MachineSet at zero (2 GPUs a machine, product unknown:
    no MIG) gives nodes to it: the plan adds one, time-sliced, for the three pods."""
    pods = [pending("wait-%d" % n, "nvidia.com/gpu", pool="new") for n in range(3)]
    at_zero = a100_pool_machineset("set-new", "new", replicas=0)
    answer = capacity_plan([t4_node("t4-0")], pods, [at_zero], pool_label=POOL_LABEL, max_new_nodes=4)
    pool = answer["pools"]["new"]
    assert (pool["nodes"], pool["served"], pool["new_nodes"], pool["exact"]) == (0, 3, 1, True)
    [grower] = answer["capacity"]["pools"]["new"]
    sharing = dict(mode="time-slicing", config_key="gpushare-plan-ts-2", replicas=2, rename_by_default=False)
    assert grower["planned"] == dict(new_nodes=1, size=1, mode="time-slicing", layout=None, replicas=2, sharing=sharing)
    assert answer["unserved"] == []
    # Without max_new_nodes nothing may serve them: each is unserved, with its pool.
    answer = capacity_plan([t4_node("t4-0")], pods, [at_zero], pool_label=POOL_LABEL)
    assert [(u["pool"], u["reason"]) for u in answer["unserved"]] == [
        ("new", "no GPU node is selected in pool new")
    ] * 3


def test_a_machineset_the_autoscaler_owns_gets_the_template_its_nodes_have_and_never_replicas():
    """The cluster autoscaler copies a ready node of the set as its template: when all of them are time-sliced 2 ways,
    the nodes it adds must boot time-sliced too. The plan sets the template's label (gpu_machineset with sharing
    only), never the replicas, and says why; once the template names it, nothing more."""
    nodes = [made_by(t4_time_sliced("t4-%d" % n, 2), "gpu-t4", "t4") for n in range(2)]
    machines = [machine("m-t4-%d" % n, "gpu-t4", "t4-%d" % n) for n in range(2)]
    owned = machineset("gpu-t4", labels={POOL_LABEL: "t4", "cluster-api/accelerator": "tesla-t4"})
    owned["spec"]["replicas"] = 2

    def plan_with(machineset_body):
        sources = CapacitySources([machineset_body], [machine_autoscaler("gpu-t4")], [], machines, nodes, ())
        settings = plan_settings(dict(capacity=True, pool_label=POOL_LABEL, max_new_nodes=3))
        return sharing_plan_answer(states(*nodes), [], {}, settings, sources)

    answer = plan_with(owned)
    sharing = dict(mode="time-slicing", config_key="gpushare-plan-ts-2", replicas=2, rename_by_default=False)
    assert answer["apply"]["gpu_machineset"] == [
        dict(name="gpu-t4", machine_api_namespace="openshift-machine-api", sharing=sharing)
    ]
    assert answer["capacity"]["decisions"][0].startswith(
        "MachineSet openshift-machine-api/gpu-t4: its template now names time-slicing x2 (gpushare-plan-ts-2)"
    )
    owned["spec"]["template"]["spec"]["metadata"]["labels"]["nvidia.com/device-plugin.config"] = "gpushare-plan-ts-2"
    answer = plan_with(owned)
    assert answer["apply"]["gpu_machineset"] == [] and answer["capacity"]["decisions"] == []


def test_a_node_pool_given_gets_its_size_and_the_labels_its_new_nodes_need():
    """A Kapsule pool (not a Kubernetes object) at size 0: the plan adds one node for three pods and says the size to
    set and the label that makes the GPU Operator configure the node as it joins."""
    pods = [pending("wait-%d" % n, "nvidia.com/gpu", pool="new") for n in range(3)]
    pool = dict(pool="new", size=0, max_size=2, gpus=1, product="Tesla-T4", autoscaling=False)
    sources = CapacitySources([], [], [], [], [t4_node("t4-0")], (pool,))
    settings = plan_settings(dict(capacity=True, pool_label=POOL_LABEL, max_new_nodes=2, node_pools=[pool]))
    answer = sharing_plan_answer(states(t4_node("t4-0")), pods, {}, settings, sources)
    sharing = dict(mode="time-slicing", config_key="gpushare-plan-ts-3", replicas=3, rename_by_default=False)
    assert answer["apply"]["node_pools"] == [
        dict(
            pool="new",
            name="new",
            size=1,
            sharing=sharing,
            labels={"nvidia.com/device-plugin.config": "gpushare-plan-ts-3"},
        )
    ]
    assert answer["apply"]["gpu_machineset"] == []
