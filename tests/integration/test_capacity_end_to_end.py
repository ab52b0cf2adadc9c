"""Capacity that fits, end to end on the OpenShift testbed (issue 40, point 7), as users run it:
playbooks/sharing_plan.yml through ansible-playbook, and the gpu_autoplan rulebook through ansible-rulebook.

An H100 MachineSet that no MachineAutoscaler targets (its size is the plan's) has one machine of eight GPUs, and eight
trainers hold them whole. Pods then wait for MIG instances in its pool (the pool label is ``cluster-api/accelerator``,
which its template sets): with moves off no GPU of the pool can be re-partitioned, so only a new machine serves them.
The plan adds one, its node boots into the planned MIG layout through the template's ``nvidia.com/mig.config``, and
the pods run. Once they end, the node the plan added is taken back; the trainers' node never is."""

import json

import pytest
from integration_helpers import MACHINESETS, run_playbook
from kubernetes import client
from rulebook import Rulebook, install_java
from workloads import TOLERATE_GPU, create_pods, wait_for_pods

from testbed import seed

pytestmark = pytest.mark.profiles("openshift")

POOL_LABEL = "cluster-api/accelerator"
POOL = "nvidia-h100"
H100_SET = "gpushare-ocp-gpu-h100-us-east-1a"
TRAINERS = 8
SMALL = 14  # 1g.10gb pods: more than one GPU's seven, fewer than a machine's 56


def pool_pod(name, resource):
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {POOL_LABEL: POOL},
            "tolerations": TOLERATE_GPU,
            "containers": [
                {
                    "name": "cuda",
                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "resources": {"limits": {resource: "1"}},
                }
            ],
        },
    }


def h100_set_with_busy_trainers(kube, api_client, namespace):
    """The H100 MachineSet, its first node labelled by GPU Feature Discovery, and the trainers running on it."""
    kube.add_gpu_machineset(H100_SET, POOL, 8, instance_type="PowerEdge-XE9680", autoscaler=False)
    first = kube.machineset_gpu_node(H100_SET, seed.MACHINE_API_NAMESPACE)
    create_pods(api_client, namespace, [pool_pod("trainer-%d" % n, "nvidia.com/gpu") for n in range(TRAINERS)])
    wait_for_pods(api_client, namespace, running=TRAINERS, waiting=0, timeout=120)
    return first["metadata"]["name"]


def set_nodes(kube):
    return kube.machineset_node_names(H100_SET, seed.MACHINE_API_NAMESPACE)


def replicas(kube):
    return kube.custom_object(MACHINESETS, H100_SET, seed.MACHINE_API_NAMESPACE)["spec"]["replicas"]


def plan_and_apply(cluster, **variables):
    code, report, stderr = run_playbook(
        cluster, "sharing_plan.yml", "-e", json.dumps(dict({"sharing_plan_pool_label": POOL_LABEL}, **variables))
    )
    assert code == 0, "sharing_plan.yml exited %d: %s\n%s" % (code, stderr, json.dumps(report)[-3000:])
    return dict(
        (task["task"]["name"], task["hosts"]["localhost"])
        for play in report["plays"]
        for task in play["tasks"]
        if "localhost" in task["hosts"]
    )


def decisions(tasks):
    return [item["msg"] for item in tasks["Log each decision about nodes, with its reason"].get("results", [])]


def test_the_playbook_adds_a_machine_in_the_mig_layout_the_waiting_pods_need_and_takes_it_back_once_idle(
    cluster, kube, api_client, namespace
):
    first = h100_set_with_busy_trainers(kube, api_client, namespace)
    create_pods(api_client, namespace, [pool_pod("small-%d" % n, "nvidia.com/mig-1g.10gb") for n in range(SMALL)])
    wait_for_pods(api_client, namespace, running=TRAINERS, waiting=SMALL, timeout=120)

    # The default adds no node: the decision says why, and nothing is written to the MachineSet.
    tasks = plan_and_apply(cluster)
    assert decisions(tasks) == [] and replicas(kube) == 1  # without sharing_plan_max_new_nodes, no capacity read

    tasks = plan_and_apply(cluster, sharing_plan_max_new_nodes=1)
    [decision] = decisions(tasks)
    assert decision.startswith(
        "MachineSet %s/%s: add 1 node(s), size 1 -> 2, booting into MIG layout" % (seed.MACHINE_API_NAMESPACE, H100_SET)
    )
    wait_for_pods(api_client, namespace, running=TRAINERS + SMALL, waiting=0, timeout=120)
    [added] = [name for name in set_nodes(kube) if name != first]
    labels = kube.node(added)["metadata"]["labels"]
    assert labels["nvidia.com/mig.config"].startswith("gpushare-plan-") and labels["nvidia.com/mig.config.state"] == (
        "success"
    )
    # Served: the second plan adds nothing and changes nothing.
    tasks = plan_and_apply(cluster, sharing_plan_max_new_nodes=1)
    assert decisions(tasks) == [] and replicas(kube) == 2
    assert all(not result.get("changed") for result in tasks.values())

    # The small pods end: the node the plan added runs no GPU pod and nothing waits, so it is taken back.
    core = client.CoreV1Api(api_client)
    for n in range(SMALL):
        core.delete_namespaced_pod("small-%d" % n, namespace, grace_period_seconds=0)
    wait_for_pods(api_client, namespace, running=TRAINERS, waiting=0, timeout=120)
    tasks = plan_and_apply(cluster, sharing_plan_max_new_nodes=1, sharing_plan_scale_in_after=0)
    [decision] = decisions(tasks)
    assert "take back 1 node(s) the collection added, size 2 -> 1: %s run no GPU pod" % added in decision
    assert replicas(kube) == 1 and set_nodes(kube) == [first]


def test_the_autopilot_adds_no_more_nodes_an_hour_than_allowed_and_logs_why(
    cluster, kube, api_client, namespace, tmp_path
):
    first = h100_set_with_busy_trainers(kube, api_client, namespace)
    install_java()
    variables = {"gpu_autoplan_pool_label": POOL_LABEL, "gpu_autoplan_max_new_nodes": 1}
    rulebook = Rulebook(cluster, tmp_path, variables).started()
    try:
        # 1. Fourteen pods of 1g.10gb no GPU of the pool can give: one plan adds one machine, and they all run.
        create_pods(api_client, namespace, [pool_pod("small-%d" % n, "nvidia.com/mig-1g.10gb") for n in range(SMALL)])
        wait_for_pods(api_client, namespace, running=TRAINERS + SMALL, waiting=0, timeout=300)
        assert rulebook.plans() == 1 and replicas(kube) == 2

        # 2. A pod for a whole-GPU instance no GPU of the pool has free: another machine would serve it, but the
        # hour's one node is spent. The plan says so, and the pod waits.
        create_pods(api_client, namespace, [pool_pod("large-0", "nvidia.com/mig-7g.80gb")])
        rulebook.wait_for("PLAY RECAP", count=2, timeout=300)
        wait_for_pods(api_client, namespace, running=TRAINERS + SMALL, waiting=1, timeout=60)
        assert rulebook.plans() == 2 and replicas(kube) == 2 and len(set_nodes(kube)) == 2 and first in set_nodes(kube)
    finally:
        rulebook.stop()
    output = rulebook.output()
    assert "add 1 node(s), size 1 -> 2, booting into MIG layout" in output, output
    assert "the hourly cap is reached: 1 node(s) added in the last hour, max_new_nodes_per_hour 1" in output, output


def test_the_playbook_gives_a_machineset_the_autoscaler_owns_the_template_its_nodes_have(cluster, kube, run_module):
    """The seeded T4 MachineSet's MachineAutoscaler owns its replicas. Once its two T4s are time-sliced 2 ways, the
    autoscaler copies one of them as the template of the nodes it adds: those must boot time-sliced too. The plan sets
    the template's label, never the replicas."""
    sliced = run_module("gpu_timeslicing", {"replicas": 2, "nodes": {"selector": "cluster-api/accelerator=tesla-t4"}})
    assert not sliced.get("failed"), sliced.get("msg")
    tasks = plan_and_apply(cluster, sharing_plan_max_new_nodes=1)
    t4 = seed.OPENSHIFT_T4_MACHINESET
    assert any(
        decision.startswith(
            "MachineSet %s/%s: its template now names time-slicing x2" % (seed.MACHINE_API_NAMESPACE, t4)
        )
        for decision in decisions(tasks)
    ), decisions(tasks)
    machineset = kube.custom_object(MACHINESETS, t4, seed.MACHINE_API_NAMESPACE)
    labels = machineset["spec"]["template"]["spec"]["metadata"]["labels"]
    assert labels["nvidia.com/device-plugin.config"] == "gpushare-plan-ts-2" and machineset["spec"]["replicas"] == 2
    again = plan_and_apply(cluster, sharing_plan_max_new_nodes=1)
    assert not again[
        "Scale the MachineSets the plan grows or takes nodes back from, new nodes booting into the plan"
    ].get("changed")
