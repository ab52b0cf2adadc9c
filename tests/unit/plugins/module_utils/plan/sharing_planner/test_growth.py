# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What pools may add (plan/sharing_planner/growth.py): MachineSets and given node pools, the ClusterAutoscaler's
shared limits, and whether the autoscaler can scale for a waiting resource. The facts tested are cluster-autoscaler's
and OpenShift's, each with its source in docs/PLATFORM_FACTS.md, "Cluster autoscaler and node pools (issue 40)"."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import (
    cluster_autoscaler,
    cpu_node,
    h100_mig_mixed,
    machine_autoscaler,
    machineset,
    t4_node,
    t4_pool,
    t4_time_sliced,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner import growth

POOL_LABEL = "gpushare.example/pool"


def t4_machineset(name="gpu-t4", pool="t4", replicas=1, annotations=None):
    labels = {"cluster-api/accelerator": "tesla-t4", POOL_LABEL: pool}
    found = machineset(name, labels=labels, annotations=annotations)
    found["spec"]["replicas"] = replicas
    return found


def growers(machinesets, autoscalers=(), machines=(), nodes=(), pools=("t4",)):
    return growth.machineset_growers(machinesets, list(autoscalers), list(machines), list(nodes), POOL_LABEL, pools)


def test_a_machineset_grows_its_template_labels_pool_within_its_machine_autoscaler():
    machines, nodes = t4_pool("gpu-t4-0")
    [grower] = growers([t4_machineset()], [machine_autoscaler()], machines, nodes)
    assert grower.pool == "t4" and grower.kind == "MachineSet" and grower.name == "openshift-machine-api/gpu-t4"
    assert (grower.size, grower.min_size, grower.max_size, grower.owner) == (1, 1, 4, growth.OWNER_AUTOSCALER)
    assert grower.new_node.gpus == 1 and grower.new_node.product == "Tesla-T4" and grower.new_node.source == "node"
    assert grower.new_node.gpu_type == "tesla-t4" and grower.ready_nodes == ("gpu-t4-0",)
    # Other pools' MachineSets and MachineSets without GPUs are not growers.
    assert growers([t4_machineset(pool="other")]) == []
    assert growers([machineset("workers", labels={POOL_LABEL: "t4"})]) == []


def test_a_machineset_at_zero_is_read_from_its_annotations_the_autoscalers_before_openshifts():
    annotations = {
        "machine.openshift.io/GPU": "1",
        "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "4",
        "machine.openshift.io/vCPU": "48",
        "machine.openshift.io/memoryMb": "196608",
    }
    [grower] = growers([t4_machineset(replicas=0, annotations=annotations)])
    assert grower.size == 0 and grower.owner == growth.OWNER_PLAN and grower.max_size is None
    assert grower.new_node == growth.NewNode(None, None, 4, "tesla-t4", 48.0, 192.0, "annotations")


def test_an_unset_replicas_is_the_machine_apis_default_of_one():
    found = t4_machineset(annotations={"machine.openshift.io/GPU": "1"})
    del found["spec"]["replicas"]
    assert growers([found])[0].size == 1


def test_node_pools_given_as_input_for_platforms_whose_pools_are_not_kubernetes_objects():
    given = [
        {"pool": "gpu-h100", "size": 2, "min_size": 1, "max_size": 5, "gpus": 8, "product": "NVIDIA-H100-80GB-HBM3"},
        {"pool": "gpu-l4", "size": 1, "gpus": 1, "autoscaling": True},
    ]
    l4_node = t4_node("l4-0")
    l4_node["metadata"]["labels"].update({POOL_LABEL: "gpu-l4", "k8s.scw.cloud/gpu": "l4"})
    h100, l4 = growth.node_pool_growers(given, [l4_node, t4_node("elsewhere")], POOL_LABEL)
    assert (h100.kind, h100.name, h100.size, h100.min_size, h100.max_size) == ("NodePool", "gpu-h100", 2, 1, 5)
    assert h100.owner == growth.OWNER_PLAN and h100.new_node.gpus == 8 and h100.ready_nodes == ()
    assert l4.owner == growth.OWNER_AUTOSCALER and l4.max_size is None
    assert l4.ready_nodes == ("l4-0",) and l4.new_node.gpu_type == "l4"
    # Kapsule's and VKS's scale-from-zero templates are not public.
    answer, reason = growth.autoscaler_can_scale(h100, "nvidia.com/gpu", [])
    assert answer == "unknown" and "no public source" in reason


def test_shared_limits_count_nodes_cores_memory_and_gpus_in_the_autoscalers_unit():
    ca = cluster_autoscaler(types=("tesla-t4",))
    ca["spec"]["resourceLimits"].update(maxNodesTotal=10, cores={"min": 0, "max": 200}, memory={"min": 0, "max": 1000})
    sliced = t4_time_sliced("t4-0", 4)
    sliced["metadata"]["labels"]["cluster-api/accelerator"] = "tesla-t4"
    whole = t4_node("t4-1")
    whole["metadata"]["labels"]["cluster-api/accelerator"] = "tesla-t4"
    limits = growth.shared_limits([ca], [sliced, whole, cpu_node("cpu-0")])
    # GetNodeGpuTarget: the time-sliced T4 counts its 4 allocatable nvidia.com/gpu, the whole one 1.
    assert limits.gpus == {"tesla-t4": (4, 5)}
    assert (limits.max_nodes_total, limits.nodes, limits.cores, limits.cores_now) == (10, 3, 200, 96)
    assert limits.memory_gib == 1000 and round(limits.memory_gib_now) == 755  # 3 x 263842112Ki
    # Without a ClusterAutoscaler nothing is limited; the counts stay.
    alone = growth.shared_limits([], [whole])
    assert (alone.max_nodes_total, alone.nodes, alone.gpus, alone.cores, alone.cores_now) == (None, 1, {}, None, 32)
    assert alone.memory_gib is None and round(alone.memory_gib_now) == 252


def test_the_tightest_limit_bounds_what_a_grower_may_add_and_is_named():
    annotations = {
        "machine.openshift.io/GPU": "1",
        "machine.openshift.io/vCPU": "4",
        "machine.openshift.io/memoryMb": "16384",
    }
    [grower] = growers([t4_machineset(annotations=annotations)], [machine_autoscaler()])
    limits = growth.SharedLimits(24, 20, {"tesla-t4": (4, 1)}, 100, 90, None, 0)
    # maxReplicas 4 - 1 = 3, maxNodesTotal 24 - 20 = 4, gpus[tesla-t4] (4 - 1) // 1 = 3, cores (100 - 90) // 4 = 2.
    assert growth.new_nodes_at_most(grower, limits) == (2, ["cores"])
    assert growth.new_nodes_at_most(grower, limits._replace(cores=None)) == (3, ["maxReplicas", "gpus[tesla-t4]"])
    free = grower._replace(max_size=None)
    assert growth.new_nodes_at_most(free, growth.shared_limits([], [])) == (None, [])


def states(*nodes):
    return [NodeGpuState.from_node(node) for node in nodes]


def test_from_zero_the_autoscaler_scales_only_for_nvidia_com_gpu():
    [grower] = growers([t4_machineset(replicas=0, annotations={"machine.openshift.io/GPU": "1"})])
    assert growth.autoscaler_can_scale(grower, "nvidia.com/gpu", [])[0] == "yes"
    answer, reason = growth.autoscaler_can_scale(grower, "nvidia.com/mig-1g.10gb", [])
    assert answer == "no" and "from zero its template advertises only nvidia.com/gpu" in reason


def test_with_ready_nodes_the_autoscaler_copies_one_so_their_layout_decides():
    [grower] = growers([t4_machineset()])
    sliced = states(t4_time_sliced("t4-0", 4))
    assert growth.autoscaler_can_scale(grower, "nvidia.com/gpu", sliced)[0] == "yes"
    answer, reason = growth.autoscaler_can_scale(grower, "nvidia.com/gpu.shared", sliced)
    assert answer == "no" and "none of which advertises nvidia.com/gpu.shared" in reason
    mixed = states(h100_mig_mixed("h100-0"), t4_node("t4-1"))
    answer, reason = growth.autoscaler_can_scale(
        grower._replace(new_node=grower.new_node._replace(gpu_type=None)), "nvidia.com/mig-1g.10gb", mixed
    )
    assert answer == "maybe" and "only h100-0 of them" in reason


def test_a_labelled_node_advertising_no_nvidia_com_gpu_is_never_the_template():
    """kubernetes/autoscaler#8095: such a node looks not ready, so the scale-from-zero template is used instead."""
    [grower] = growers([t4_machineset()])
    all_mig = h100_mig_mixed("h100-0")
    all_mig["status"]["allocatable"].pop("nvidia.com/gpu", None)
    answer, reason = growth.autoscaler_can_scale(grower, "nvidia.com/mig-1g.10gb", states(all_mig))
    assert answer == "no" and "#8095" in reason


def test_a_pool_only_a_machineset_at_zero_names_is_reported_with_what_waits_for_it():
    """No node is in pool "a100" yet: the pods whose nodeSelector names it are its demand, and from zero the
    autoscaler's template advertises only nvidia.com/gpu (docs/PLATFORM_FACTS.md, "OpenShift: GPUs are only ever
    nvidia.com/gpu")."""
    at_zero = machineset("gpu-a100", labels={"cluster-api/accelerator": "nvidia-a100", POOL_LABEL: "a100"})
    at_zero["metadata"]["annotations"] = {"machine.openshift.io/GPU": "2"}
    at_zero["spec"]["replicas"] = 0
    sources = growth.CapacitySources(
        machinesets=[at_zero],
        machine_autoscalers=[machine_autoscaler("gpu-a100", minimum=0)],
        cluster_autoscalers=[],
        machines=[],
        nodes=[t4_node("t4-0")],
        node_pools=(),
    )
    pending = [
        {"pool": "a100", "requests": {"nvidia.com/mig-3g.20gb": 2}},
        {"pool": "a100", "requests": {"nvidia.com/gpu": 1}},
        {"pool": "t4", "requests": {"nvidia.com/gpu": 5}},  # a planned pool: its demand is in waiting
    ]
    growers = growth.every_grower(sources, POOL_LABEL)
    limits = growth.shared_limits(sources.cluster_autoscalers, sources.nodes)
    answer = growth.capacity_answer(sources, growers, limits, {"t4": {"nvidia.com/gpu": 1}}, pending, {}, {})
    [a100] = answer["pools"]["a100"]
    assert answer["pools"]["t4"] == []
    assert (a100["size"], a100["new_nodes_at_most"], a100["limited_by"]) == (0, 4, ["maxReplicas"])
    assert a100["autoscaler_can_scale"]["nvidia.com/gpu"]["answer"] == "yes"
    assert a100["autoscaler_can_scale"]["nvidia.com/mig-3g.20gb"]["answer"] == "no"
    assert answer["limits"]["max_nodes_total"] is None and answer["limits"]["nodes"] == 1
