"""gpu_sharing_plan and playbooks/sharing_plan.yml end to end on the Kapsule fleet (issue 22, "End to end"): pods
the current layout cannot hold stay Pending; the plan, applied with the arguments it gives, gets them all running;
the plan's second run changes nothing; in check mode nothing is written.

The fleet is three H100 nodes of one GPU each (pool gpu-h100). Four trainers request nvidia.com/gpu (a Deployment:
three run, one waits) and four pods request MIG instances no node has (three 1g.10gb and one 3g.40gb). Without moves
nothing can hold the MIG pods, since every GPU runs a trainer; with moves the best plan partitions one GPU into
3g.40gb + 3 x 1g.10gb (its trainer moves) and time-slices another by 3 (two GPUs changed, one pod moved)."""

import json

import pytest
from integration_helpers import CLUSTER_AUTOSCALERS, MACHINE_AUTOSCALERS, run_playbook, wait_for_object
from kubernetes import client
from workloads import TOLERATE_GPU

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.apply import config_name_of
from testbed import seed

pytestmark = pytest.mark.profiles("scaleway")

POOL_LABEL = "k8s.scaleway.com/pool-name"
POOL = "gpu-h100"
PLAN_ARGS = {"pool_label": POOL_LABEL, "allow_moves": True}
MIG_PODS = {"small-0": "1g.10gb", "small-1": "1g.10gb", "small-2": "1g.10gb", "medium-0": "3g.40gb"}
TRAINERS = 4


def container(resource):
    return {
        "name": "cuda",
        "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
        "resources": {"limits": {resource: "1"}},
    }


def pod_spec(resource):
    return {"nodeSelector": {POOL_LABEL: POOL}, "tolerations": TOLERATE_GPU, "containers": [container(resource)]}


def start_workloads(api_client, namespace):
    """The MIG pods first (they wait whatever the order), then the trainers: three run, one per GPU."""
    core = client.CoreV1Api(api_client)
    for name, profile in sorted(MIG_PODS.items()):
        core.create_namespaced_pod(
            namespace, {"metadata": {"name": name}, "spec": pod_spec("nvidia.com/mig-" + profile)}
        )
    client.AppsV1Api(api_client).create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "trainer"},
            "spec": {
                "replicas": TRAINERS,
                "selector": {"matchLabels": {"app": "trainer"}},
                "template": {"metadata": {"labels": {"app": "trainer"}}, "spec": pod_spec("nvidia.com/gpu")},
            },
        },
    )


def phases(api_client, namespace):
    pods = client.CoreV1Api(api_client).list_namespaced_pod(namespace).items
    return sorted((pod.metadata.name, pod.status.phase, bool(pod.spec.node_name)) for pod in pods)


def wait_for_pods(api_client, namespace, running, pending):
    """Until ``running`` pods run and ``pending`` wait with the scheduler's reason (a watch on the namespace)."""
    core = client.CoreV1Api(api_client)
    seen = {}

    def settled(pod):
        seen[pod["metadata"]["name"]] = pod
        live = [p for p in seen.values() if not p["metadata"].get("deletionTimestamp")]
        runs = [p for p in live if (p.get("status") or {}).get("phase") == "Running"]
        waits = [
            p
            for p in live
            if any(
                c.get("type") == "PodScheduled" and c.get("status") == "False"
                for c in (p.get("status") or {}).get("conditions") or []
            )
        ]
        return len(runs) == running and len(waits) == pending and len(live) == running + pending

    wait_for_object(
        core.list_namespaced_pod,
        settled,
        "%d pods running and %d pending in %s" % (running, pending, namespace),
        namespace,
        timeout=300,
    )


def run_ok(cluster, *args):
    code, report, stderr = run_playbook(
        cluster,
        "sharing_plan.yml",
        "-e",
        json.dumps({"sharing_plan_pool_label": POOL_LABEL, "sharing_plan_allow_moves": True}),
        *args,
    )
    assert code == 0, "sharing_plan.yml exited %d: %s\n%s" % (code, stderr, json.dumps(report)[-3000:])
    return report


def test_pending_pods_run_once_the_plan_is_applied_and_the_second_plan_changes_nothing(
    cluster, api_client, namespace, run_module, audit_writes
):
    start_workloads(api_client, namespace)
    wait_for_pods(api_client, namespace, running=3, pending=1 + len(MIG_PODS))

    pinned = run_module("gpu_sharing_plan", {"pool_label": POOL_LABEL})
    assert not pinned.get("failed"), pinned.get("msg")
    assert pinned["pools"][POOL]["served"] == TRAINERS
    assert sorted((u["resource"], u["count"]) for u in pinned["unserved"]) == [
        ("nvidia.com/mig-1g.10gb", 3),
        ("nvidia.com/mig-3g.40gb", 1),
    ]
    assert all("allow_moves" in u["reason"] for u in pinned["unserved"])

    with audit_writes() as audit:
        plan = run_module("gpu_sharing_plan", PLAN_ARGS)
        run_ok(cluster, "--check")
    assert audit.writes == []
    assert not plan.get("failed"), plan.get("msg")
    pool = plan["pools"][POOL]
    assert (pool["served"], pool["pods_moved"], pool["gpus_changed"], pool["exact"]) == (8, 1, 2, True)
    # Proven by HiGHS: its bounds are the plan's own figures.
    assert pool["bound"] == dict(served=8, pods_moved=1, gpus_changed=2, free_slices=pool["free_slices"])
    assert plan["unserved"] == []
    reasons = [entry["reason"] for entry in plan["pending_pods"]]
    assert any("Insufficient nvidia.com/mig-1g.10gb" in (reason or "") for reason in reasons), reasons
    mig = plan["apply"]["gpu_mig_config"]
    assert len(mig) == 1 and mig[0]["drain"] is True and mig[0]["strategy"] == "mixed"
    assert mig[0]["layout"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 3, "3g.40gb": 1}}]
    assert [(call["replicas"], len(call["nodes"]["names"])) for call in plan["apply"]["gpu_timeslicing"]] == [(3, 1)]
    [split] = mig[0]["nodes"]["names"]
    [shared] = plan["apply"]["gpu_timeslicing"][0]["nodes"]["names"]
    assert sorted(plan["nodes"][split]["takes"]) == ["%s/%s" % (namespace, name) for name in sorted(MIG_PODS)]
    # The time-sliced node takes the trainer that waited and the one the split moves.
    assert (
        len(plan["nodes"][shared]["takes"]) == 2
        and plan["nodes"][split]["pods_to_move"][0] in plan["nodes"][shared]["takes"]
    )

    run_ok(cluster)
    wait_for_pods(api_client, namespace, running=TRAINERS + len(MIG_PODS), pending=0)

    again = run_module("gpu_sharing_plan", PLAN_ARGS)
    assert again["nodes_to_change"] == [], again["nodes"]
    assert again["pools"][POOL]["served"] == 8 and again["unserved"] == []
    assert all(calls == [] for calls in again["apply"].values())


# On the OpenShift fleet: instances only the A100 40GB nodes (two GPUs each) have, more than one GPU holds.
A100_PODS = {"medium-0": "3g.20gb", "half-0": "2g.10gb", "half-1": "2g.10gb"}
A100_PODS.update(("small-%d" % index, "1g.5gb") for index in range(4))


@pytest.mark.profiles("openshift")
def test_a_layout_over_several_gpus_of_a_node_is_read_back_as_planned(cluster, api_client, namespace, run_module):
    core = client.CoreV1Api(api_client)
    for name, profile in sorted(A100_PODS.items()):
        spec = {"tolerations": TOLERATE_GPU, "containers": [container("nvidia.com/mig-" + profile)]}
        core.create_namespaced_pod(namespace, {"metadata": {"name": name}, "spec": spec})
    wait_for_pods(api_client, namespace, running=0, pending=len(A100_PODS))

    plan = run_module("gpu_sharing_plan", {})
    assert not plan.get("failed"), plan.get("msg")
    assert plan["unserved"] == [] and plan["pools"][""]["served"] == len(A100_PODS)
    layouts = [call["layout"] for call in plan["apply"]["gpu_mig_config"]]
    # 11 compute slices: two GPUs, split differently.
    assert plan["pools"][""]["gpus_changed"] == 2 and any(len(layout) == 2 for layout in layouts), layouts
    code, report, stderr = run_playbook(cluster, "sharing_plan.yml")
    assert code == 0, "sharing_plan.yml exited %d: %s\n%s" % (code, stderr, json.dumps(report)[-3000:])
    wait_for_pods(api_client, namespace, running=len(A100_PODS), pending=0)

    again = run_module("gpu_sharing_plan", {})
    assert again["nodes_to_change"] == [], [(n, v["mode"], v["layout"]) for n, v in again["nodes"].items()]


@pytest.mark.profiles("openshift")
def test_no_mig_is_planned_while_nodes_outside_the_selection_run_mig_under_the_single_strategy(run_module):
    split = run_module(
        "gpu_mig_config", {"strategy": "single", "config": "all-1g.10gb", "nodes": {"names": ["gpu-h100-0"]}}
    )
    assert not split.get("failed"), split.get("msg")
    plan = run_module(
        "gpu_sharing_plan",
        {
            "node_selector": "nvidia.com/gpu.product=NVIDIA-A100-PCIE-40GB",
            "requests": [{"profile": "3g.20gb", "count": 2}],
        },
    )
    assert not plan.get("failed"), plan.get("msg")
    assert plan["nodes_to_change"] == [] and sorted(plan["nodes"]) == ["gpu-a100-0", "gpu-a100-1"]
    assert "gpu-h100-0 run MIG under it" in plan["findings"][0]
    assert [u["reason"] for u in plan["unserved"]] == [
        "no MIG change is planned while the cluster's MIG strategy is single (see findings)"
    ]


@pytest.mark.profiles("openshift")
def test_capacity_reports_what_the_t4_machineset_may_add_as_its_autoscalers_count(run_module):
    """The seeded T4 MachineSet (2 machines, its MachineAutoscaler 1-4, the ClusterAutoscaler's tesla-t4 limit of 4 GPUs
    and 24 nodes). cluster-autoscaler counts a node as its allocatable nvidia.com/gpu (GetNodeGpuTarget): once the T4s
    are time-sliced 4 ways they count 8 against the limit of 4, and nothing more may be added."""
    args = {
        "capacity": True,
        "node_selector": "cluster-api/accelerator=tesla-t4",
        "requests": [{"resource": "nvidia.com/gpu", "count": 3}, {"resource": "nvidia.com/gpu.shared", "count": 2}],
    }
    plan = run_module("gpu_sharing_plan", args)
    assert not plan.get("failed"), plan.get("msg")
    [t4] = plan["capacity"]["pools"][""]
    assert (t4["kind"], t4["name"], t4["size"], t4["min_size"], t4["max_size"], t4["owner"]) == (
        "MachineSet",
        "openshift-machine-api/gpushare-ocp-gpu-t4-us-east-1a",
        2,
        1,
        4,
        "autoscaler",
    )
    new_node = dict(t4["new_node"], gpu_memory_mib=None)  # the simulated GFD's T4 memory is the testbed's business
    assert new_node == dict(
        product="Tesla-T4",
        gpu_memory_mib=None,
        gpus=1,
        gpu_type="tesla-t4",
        cores=4.0,
        memory_gib=16.0,
        source="annotations",
    )
    assert t4["new_node"]["gpu_memory_mib"] > 0
    assert (t4["new_nodes_at_most"], t4["limited_by"]) == (2, ["maxReplicas", "gpus[tesla-t4]"])
    limits = plan["capacity"]["limits"]
    assert limits["gpus"] == {"tesla-t4": {"max": 4, "counted": 2}} and limits["max_nodes_total"] == 24
    assert limits["nodes"] == 8  # every node, not only those the selector chose
    can = t4["autoscaler_can_scale"]
    assert can["nvidia.com/gpu"]["answer"] == "yes" and can["nvidia.com/gpu.shared"]["answer"] == "no"

    sliced = run_module("gpu_timeslicing", {"replicas": 4, "nodes": {"selector": "cluster-api/accelerator=tesla-t4"}})
    assert not sliced.get("failed"), sliced.get("msg")
    [t4] = run_module("gpu_sharing_plan", args)["capacity"]["pools"][""]
    assert (t4["new_nodes_at_most"], t4["limited_by"]) == (0, ["gpus[tesla-t4]"])


@pytest.mark.profiles("scaleway")
def test_capacity_reports_a_kapsule_pool_given_as_input(run_module):
    given = {"pool": POOL, "size": 3, "max_size": 5, "gpus": 1, "product": "NVIDIA-H100-PCIe", "autoscaling": True}
    plan = run_module(
        "gpu_sharing_plan",
        {
            "pool_label": POOL_LABEL,
            "capacity": True,
            "node_pools": [given],
            "requests": [{"profile": "1g.10gb", "count": 2}],
        },
    )
    assert not plan.get("failed"), plan.get("msg")
    [pool] = plan["capacity"]["pools"][POOL]
    assert (pool["kind"], pool["name"], pool["new_nodes_at_most"], pool["limited_by"]) == (
        "NodePool",
        POOL,
        2,
        ["max_size"],
    )
    # Kapsule has no ClusterAutoscaler object: no shared limit is known.
    assert plan["capacity"]["limits"]["max_nodes_total"] is None and plan["capacity"]["limits"]["gpus"] == {}
    # Its autoscaler copies one of the pool's ready nodes, whole H100s advertising no MIG instance.
    can = pool["autoscaler_can_scale"]["nvidia.com/mig-1g.10gb"]
    assert can["answer"] == "no" and "none of which advertises nvidia.com/mig-1g.10gb" in can["reason"]


@pytest.mark.profiles("openshift")
def test_the_plan_adds_a_t4_machine_time_sliced_within_the_autoscalers_gpu_limit(run_module, kube):
    """Without its MachineAutoscaler the T4 MachineSet's size is the plan's. Six requests of nvidia.com/gpu, at most 2
    replicas a GPU: the two T4s time-sliced serve four, and the ClusterAutoscaler's tesla-t4 limit, raised to 8,
    leaves room for one more T4 time-sliced (the limit counts 2 for each T4 by 2: GetNodeGpuTarget)."""
    kube.delete_custom(MACHINE_AUTOSCALERS, seed.OPENSHIFT_T4_MACHINESET, seed.MACHINE_API_NAMESPACE)
    kube.patch_custom(
        CLUSTER_AUTOSCALERS,
        "default",
        {"spec": {"resourceLimits": {"gpus": [{"type": "tesla-t4", "min": 0, "max": 8}]}}},
    )
    args = {
        "capacity": True,
        "max_new_nodes": 3,
        "max_replicas": 2,
        "node_selector": "cluster-api/accelerator=tesla-t4",
        "requests": [{"resource": "nvidia.com/gpu", "count": 6}],
    }
    plan = run_module("gpu_sharing_plan", args)
    assert not plan.get("failed"), plan.get("msg")
    pool = plan["pools"][""]
    assert (pool["served"], pool["new_nodes"], pool["new_node_cost"], pool["exact"]) == (6, 1, 1, True)
    assert plan["unserved"] == [] and plan["findings"] == []
    [t4] = plan["capacity"]["pools"][""]
    sharing = dict(mode="time-slicing", config_key="gpushare-plan-ts-2", replicas=2, rename_by_default=False)
    planned = dict(new_nodes=1, size=3, mode="time-slicing", layout=None, replicas=2, sharing=sharing)
    assert t4["owner"] == "plan" and t4["planned"] == planned
    # At the seeded limit of 4 the two T4s time-sliced by 2 already count 4: nothing more may be added.
    kube.patch_custom(
        CLUSTER_AUTOSCALERS,
        "default",
        {"spec": {"resourceLimits": {"gpus": [{"type": "tesla-t4", "min": 0, "max": 4}]}}},
    )
    plan = run_module("gpu_sharing_plan", args)
    assert plan["pools"][""]["new_nodes"] == 0 and plan["pools"][""]["served"] == 4


@pytest.mark.profiles("scaleway")
def test_the_plan_adds_kapsule_nodes_in_the_mig_layout_their_pods_need_within_the_pools_max_size(run_module):
    """Five pods' worth of 7g.80gb on three H100s (one GPU each, none running a pod): the three are partitioned and
    the pool, given at size 3 with a max of 4, adds one node in the same layout; the fifth stays unserved."""
    given = {"pool": POOL, "size": 3, "max_size": 4, "gpus": 1, "product": "NVIDIA-H100-PCIe"}
    args = {
        "pool_label": POOL_LABEL,
        "capacity": True,
        "max_new_nodes": 5,
        "node_pools": [given],
        "requests": [{"profile": "7g.80gb", "count": 5}],
    }
    plan = run_module("gpu_sharing_plan", args)
    assert not plan.get("failed"), plan.get("msg")
    pool = plan["pools"][POOL]
    assert (pool["served"], pool["new_nodes"], pool["exact"]) == (4, 1, True)
    assert [(u["resource"], u["count"]) for u in plan["unserved"]] == [("nvidia.com/mig-7g.80gb", 1)]
    [grower] = plan["capacity"]["pools"][POOL]
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.80gb": 1}}]
    sharing = dict(mode="mig", config_name=config_name_of(layout), layout=layout)
    assert grower["planned"] == dict(new_nodes=1, size=4, mode="mig", layout=layout, replicas=None, sharing=sharing)
    labels = {"nvidia.com/mig.config": sharing["config_name"]}
    assert plan["apply"]["node_pools"] == [dict(pool=POOL, name=POOL, size=4, sharing=sharing, labels=labels)]
    assert (grower["new_nodes_at_most"], grower["limited_by"]) == (1, ["max_size"])


@pytest.mark.profiles("scaleway")
def test_pods_for_a_kapsule_pool_at_zero_get_its_new_nodes_in_one_mig_layout(
    cluster, api_client, namespace, run_module
):
    """Ten pods ask for 1g.10gb in pool gpu-h100-new, which has no node (a Kapsule pool at size 0, given): only new
    nodes serve them. Every new node takes the same layout: two H100s of five 1g.10gb each (fewer nodes cannot hold
    ten, and five a GPU leaves the most slices free)."""
    core = client.CoreV1Api(api_client)
    spec = {
        "nodeSelector": {POOL_LABEL: "gpu-h100-new"},
        "tolerations": TOLERATE_GPU,
        "containers": [container("nvidia.com/mig-1g.10gb")],
    }
    for n in range(10):
        core.create_namespaced_pod(namespace, {"metadata": {"name": "new-%d" % n}, "spec": spec})
    given = {
        "pool": "gpu-h100-new",
        "size": 0,
        "max_size": 3,
        "gpus": 1,
        "product": "NVIDIA-H100-PCIe",
        "gpu_memory_mib": 81559,
    }
    args = {"pool_label": POOL_LABEL, "capacity": True, "max_new_nodes": 3, "node_pools": [given]}
    plan = run_module("gpu_sharing_plan", args)
    assert not plan.get("failed"), plan.get("msg")
    pool = plan["pools"]["gpu-h100-new"]
    assert (pool["nodes"], pool["served"], pool["new_nodes"], pool["exact"]) == (0, 10, 2, True)
    [grower] = plan["capacity"]["pools"]["gpu-h100-new"]
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 5}}]
    sharing = dict(mode="mig", config_name=config_name_of(layout), layout=layout)
    assert grower["planned"] == dict(new_nodes=2, size=2, mode="mig", layout=layout, replicas=None, sharing=sharing)
    assert [u for u in plan["unserved"] if u["pool"] == "gpu-h100-new"] == []
    # The playbook, which holds no Scaleway credential, prints the size to set and the label the new nodes need.
    variables = {
        "sharing_plan_pool_label": POOL_LABEL,
        "sharing_plan_max_new_nodes": 3,
        "sharing_plan_node_pools": [given],
    }
    code, report, stderr = run_playbook(cluster, "sharing_plan.yml", "-e", json.dumps(variables))
    assert code == 0, "sharing_plan.yml exited %d: %s\n%s" % (code, stderr, json.dumps(report)[-3000:])
    [printed] = [
        item["msg"]
        for play in report["plays"]
        for task in play["tasks"]
        if task["task"]["name"].startswith("Show the node pool sizes to set")
        for item in task["hosts"]["localhost"]["results"]
    ]
    assert printed.startswith(
        "Set node pool gpu-h100-new (pool gpu-h100-new) to size 2, its nodes labelled nvidia.com/mig.config=%s"
        % sharing["config_name"]
    ), printed
