"""gpu_reset against the local cluster: back to unshared, pod safety, and restore: true leaving the
cluster exactly as it was."""

import json

import pytest
from integration_helpers import ONE_PROFILE, allocatable, labels
from kubernetes import client
from workloads import gpu_pod

pytestmark = pytest.mark.profiles("openshift", "scaleway", "vks")
OWNED_LABELS = ("nvidia.com/device-plugin.config", "nvidia.com/mig.config")


def user_annotations(obj):
    """Annotations but the simulator's own bookkeeping (the simulated operator's state, not config)."""
    return dict(
        (k, v)
        for k, v in ((obj.get("metadata") or {}).get("annotations") or {}).items()
        if not k.startswith("sim.gpushare.k8s/")
    )


def snapshot(kube):
    """What restore must bring back byte for byte: the operator's ConfigMaps, the policy's spec,
    every node's labels and annotations that the collection may touch."""
    core = client.CoreV1Api(kube.api_client)
    config_maps = json.loads(core.list_namespaced_config_map(kube.namespace, _preload_content=False).data)["items"]
    nodes = json.loads(core.list_node(_preload_content=False).data)["items"]
    return dict(
        config_maps=dict(
            (cm["metadata"]["name"], (cm.get("data"), cm["metadata"].get("annotations"))) for cm in config_maps
        ),
        policy=kube.policy()["spec"],
        nodes=dict(
            (
                node["metadata"]["name"],
                (dict((k, v) for k, v in labels(node).items() if k in OWNED_LABELS), user_annotations(node)),
            )
            for node in nodes
        ),
    )


def test_restore_leaves_the_cluster_as_it_was(kube, run_module):
    nodes = kube.gpu_nodes()
    kube.put_config_map("time-slicing-config", {"users-own-key": "version: v1\n"})
    before = snapshot(kube)
    assert run_module("gpu_timeslicing", {"replicas": 4, "make_default": True, "config_key": "everyone"})["changed"]
    assert run_module("gpu_mps", {"replicas": 2, "nodes": {"names": nodes[:1]}})["changed"]
    assert snapshot(kube) != before

    restored = run_module("gpu_reset", {"restore": True})
    assert restored["changed"], restored["_stdout"]
    assert snapshot(kube) == before
    assert not run_module("gpu_reset", {"restore": True})["changed"]
    for name in nodes:
        assert labels(kube.node(name))["nvidia.com/gpu.sharing-strategy"] == "none"


def test_reset_unshares_every_node_and_is_idempotent(kube, run_module):
    run_module("gpu_timeslicing", {"replicas": 3, "make_default": True})
    result = run_module("gpu_reset", {})
    assert result["changed"], result["_stdout"]
    for name in kube.gpu_nodes():
        node = kube.node(name)
        assert labels(node)["nvidia.com/gpu.replicas"] == "1"
        assert labels(node)["nvidia.com/gpu.sharing-strategy"] == "none"
        assert allocatable(node) == int(labels(node)["nvidia.com/gpu.count"])
    assert kube.policy()["spec"]["devicePlugin"]["config"].get("default") is None
    assert not run_module("gpu_reset", {})["changed"]


@ONE_PROFILE
def test_reset_of_some_nodes_keeps_them_off_a_sharing_default(kube, run_module):
    nodes = kube.gpu_nodes()
    run_module("gpu_timeslicing", {"replicas": 2, "make_default": True})
    result = run_module("gpu_reset", {"nodes": {"names": nodes[:1]}})
    assert result["changed"], result["_stdout"]
    assert labels(kube.node(nodes[0]))["nvidia.com/device-plugin.config"] == "unshared"
    assert labels(kube.node(nodes[0]))["nvidia.com/gpu.sharing-strategy"] == "none"
    assert labels(kube.node(nodes[-1]))["nvidia.com/gpu.sharing-strategy"] == "time-slicing"


@ONE_PROFILE
def test_reset_refuses_while_gpu_pods_run_unless_forced(kube, run_module, audit_writes, api_client, namespace):
    node = kube.gpu_nodes()[0]
    run_module("gpu_timeslicing", {"replicas": 2, "nodes": {"names": [node]}})
    gpu_pod(api_client, node, namespace)
    with audit_writes() as audit:
        refused = run_module("gpu_reset", {"nodes": {"names": [node]}})
    assert refused["failed"]
    assert namespace + "/trainer" in refused["msg"] and "drain=true" in refused["msg"]
    assert audit.writes == []
    forced = run_module("gpu_reset", {"nodes": {"names": [node]}, "force": True})
    assert forced["changed"], forced["_stdout"]


@ONE_PROFILE
def test_check_mode_makes_no_write(kube, run_module, audit_writes):
    run_module("gpu_timeslicing", {"replicas": 2, "make_default": True})
    with audit_writes() as audit:
        result = run_module("gpu_reset", {}, check=True, diff=True)
        restore = run_module("gpu_reset", {"restore": True}, check=True, diff=True)
    assert result["changed"] and restore["changed"]
    assert audit.writes == []


@pytest.mark.profiles("openshift")
def test_restore_after_mig_leaves_the_cluster_as_it_was(kube, run_module):
    mig_node = kube.mig_capable_nodes()[0]
    before = snapshot(kube)
    assert run_module("gpu_mig_config", {"strategy": "mixed", "config": "all-1g.5gb", "nodes": {"names": [mig_node]}})[
        "changed"
    ]
    shared = run_module(
        "gpu_timeslicing",
        {"replicas": 2, "resources": ["nvidia.com/mig-1g.5gb"], "config_key": "mig-x2", "nodes": {"names": [mig_node]}},
    )
    assert shared["changed"], shared["_stdout"]
    assert allocatable(kube.node(mig_node), "nvidia.com/mig-1g.5gb") == 14 * 2

    restored = run_module("gpu_reset", {"restore": True})
    assert restored["changed"], restored["_stdout"]
    assert snapshot(kube) == before
    node = kube.node(mig_node)
    assert labels(node)["nvidia.com/mig.config.state"] == "success"
    assert labels(node)["nvidia.com/mig.strategy"] == "single"
    assert allocatable(node) == int(labels(node)["nvidia.com/gpu.count"])


# --- check mode agrees with the real run; drain means the same as in gpu_mig_config; the MIG part is returned --


def stuck_mig_change(kube, run_module, namespace):
    """An A100 whose MIG change to all-1g.5gb mig-manager left pending (gpu-operator #2833)."""
    node = kube.mig_capable_nodes()[0]
    kube.annotate_node(node, {"sim.gpushare.k8s/mig-stuck": "true"})
    kube.label_node(node, {"nvidia.com/mig.config": "all-1g.5gb"})
    kube.wait_for_node(node, lambda n: labels(n).get("nvidia.com/mig.config.state") == "pending")
    return "pending"


def missing_mig_config_map(kube, run_module, namespace):
    """MIG enabled on a node, then the ConfigMap mig-manager reads deleted by hand."""
    node = kube.mig_capable_nodes()[0]
    result = run_module("gpu_mig_config", {"strategy": "mixed", "config": "all-1g.5gb", "nodes": {"names": [node]}})
    assert result["changed"], result["_stdout"]
    client.CoreV1Api(kube.api_client).delete_namespaced_config_map("default-mig-parted-config", kube.namespace)
    return "default-mig-parted-config"


def gpu_pod_on_a_time_sliced_node(kube, run_module, namespace):
    node = kube.gpu_nodes()[0]
    run_module("gpu_timeslicing", {"replicas": 2, "nodes": {"names": [node]}})
    gpu_pod(kube.api_client, node, namespace)
    return namespace + "/trainer"


@pytest.mark.profiles("openshift")
@pytest.mark.parametrize("make_state", [stuck_mig_change, missing_mig_config_map, gpu_pod_on_a_time_sliced_node])
def test_check_mode_refuses_what_the_real_run_refuses(kube, run_module, audit_writes, namespace, make_state):
    named = make_state(kube, run_module, namespace)
    with audit_writes() as audit:
        checked = run_module("gpu_reset", {}, check=True)
        real = run_module("gpu_reset", {})
    assert checked.get("failed") and real.get("failed"), (checked.get("msg"), real.get("msg"))
    assert named in real["msg"]
    assert checked["msg"] == real["msg"]
    assert audit.writes == []


@pytest.mark.profiles("openshift")
def test_drain_on_a_time_sliced_node_cordons_evicts_and_uncordons(kube, run_module, api_client, namespace):
    node = kube.gpu_nodes()[0]
    run_module("gpu_timeslicing", {"replicas": 2, "nodes": {"names": [node]}})
    gpu_pod(api_client, node, namespace)

    preview = run_module("gpu_reset", {"nodes": {"names": [node]}, "drain": True}, check=True)
    assert preview["evicted"] == {node: [namespace + "/trainer"]}, preview
    result = run_module("gpu_reset", {"nodes": {"names": [node]}, "drain": True})
    assert result["changed"], result["_stdout"]
    assert result["evicted"] == {node: [namespace + "/trainer"]} and result["cordoned"] == [node]
    pods = client.CoreV1Api(api_client).list_namespaced_pod(namespace).items
    assert [pod.metadata.name for pod in pods] == []
    assert not kube.node(node)["spec"].get("unschedulable")
    assert labels(kube.node(node))["nvidia.com/gpu.sharing-strategy"] == "none"


@pytest.mark.profiles("openshift")
def test_restore_drains_too(kube, run_module, api_client, namespace):
    node = kube.gpu_nodes()[0]
    run_module("gpu_timeslicing", {"replicas": 2, "nodes": {"names": [node]}})
    gpu_pod(api_client, node, namespace)
    refused = run_module("gpu_reset", {"restore": True})
    assert refused["failed"] and namespace + "/trainer" in refused["msg"], refused
    result = run_module("gpu_reset", {"restore": True, "drain": True})
    assert result["changed"] and result["evicted"] == {node: [namespace + "/trainer"]}, result["_stdout"]
    assert not kube.node(node)["spec"].get("unschedulable")


@pytest.mark.profiles("openshift")
def test_reset_returns_the_mig_part(kube, run_module):
    node = kube.mig_capable_nodes()[0]
    assert run_module("gpu_mig_config", {"strategy": "mixed", "config": "all-1g.5gb", "nodes": {"names": [node]}})[
        "changed"
    ]
    result = run_module("gpu_reset", {}, diff=True)
    assert result["changed"] and result["mig_disabled"] == [node], result["_stdout"]
    assert result["nodes"][node]["before"]["mig_config"] == "all-1g.5gb"
    assert result["nodes"][node]["after"]["mig_config"] == "all-disabled"
    assert result["nodes"][node]["after"]["mig_config_state"] == "success"
    assert result["diff"]["after"]["mig"]["nodes"][node] == {"nvidia.com/mig.config": "all-disabled"}
