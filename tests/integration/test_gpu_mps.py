"""gpu_mps against the local cluster: MPS on and off, its refusals, check mode, idempotence."""

import pytest
from integration_helpers import ONE_PROFILE, allocatable, labels

pytestmark = pytest.mark.profiles("openshift", "scaleway", "vks")


def first_gpu_node(kube):
    return [name for name in kube.first_of_each_pool() if name in kube.gpu_nodes()][0]


def test_mps_on_then_off(kube, run_module):
    node = first_gpu_node(kube)
    count = int(labels(kube.node(node))["nvidia.com/gpu.count"])
    memory = int(labels(kube.node(node))["nvidia.com/gpu.memory"])

    first = run_module("gpu_mps", {"replicas": 4, "nodes": {"names": [node]}})
    assert first["changed"], first["_stdout"]
    shown = labels(kube.node(node))
    assert shown["nvidia.com/gpu.sharing-strategy"] == "mps"
    assert shown["nvidia.com/mps.capable"] == "true"
    assert shown["nvidia.com/gpu.replicas"] == "4"
    assert allocatable(kube.node(node)) == count * 4
    assert first["nodes"][node]["mps_limits"] == {
        "active_thread_percentage": 25,
        "pinned_device_memory_limit_mib": memory // 4,
    }

    again = run_module("gpu_mps", {"replicas": 4, "nodes": {"names": [node]}})
    assert not again["changed"], again["_stdout"]

    off = run_module("gpu_mps", {"state": "absent"})
    assert off["changed"], off["_stdout"]
    shown = labels(kube.node(node))
    assert shown["nvidia.com/gpu.sharing-strategy"] == "none"
    assert shown.get("nvidia.com/mps.capable") != "true"
    assert allocatable(kube.node(node)) == count
    assert not run_module("gpu_mps", {"state": "absent"})["changed"]


@ONE_PROFILE
def test_check_mode_makes_no_write(kube, run_module, audit_writes):
    node = first_gpu_node(kube)
    with audit_writes() as audit:
        result = run_module("gpu_mps", {"replicas": 2, "nodes": {"names": [node]}}, check=True, diff=True)
    assert result["changed"]
    assert audit.writes == []


@pytest.mark.parametrize(
    "args, message",
    [
        ({"replicas": 1}, "replicas"),
        # The MPS control daemon's limit (48 clients per GPU); the parser would take it, the node would fail.
        ({"replicas": 49}, "at most 48 clients per GPU"),
        ({"replicas": 4, "config_key": "already-time-slicing"}, "already holds a time-slicing profile"),
    ],
)
@ONE_PROFILE
def test_refusals_make_no_write(kube, run_module, audit_writes, profile, args, message):
    node = first_gpu_node(kube)
    kube.put_config_map(
        "time-slicing-config",
        {
            "already-time-slicing": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            "    - name: nvidia.com/gpu\n      replicas: 2\n"
        },
    )
    kube.patch_policy({"devicePlugin": {"config": {"name": "time-slicing-config"}}})
    with audit_writes() as audit:
        result = run_module("gpu_mps", dict(args, nodes={"names": [node]}))
    assert result["failed"]
    assert message in result["msg"]
    assert audit.writes == []


@pytest.mark.profiles("openshift")
def test_refuses_nodes_with_mig_enabled(kube, run_module, audit_writes):
    node = kube.mig_capable_nodes()[0]
    kube.label_node(node, {"nvidia.com/mig.config": "all-1g.5gb"})
    # The state label says success for the seeded all-disabled too: wait for the GPUs in MIG mode as well.
    kube.wait_for_node(
        node,
        lambda n: labels(n).get("nvidia.com/mig.config.state") == "success"
        and "-MIG-" in labels(n)["nvidia.com/gpu.product"],
    )
    with audit_writes() as audit:
        result = run_module("gpu_mps", {"replicas": 2, "nodes": {"names": [node]}})
    assert result["failed"]
    assert "MIG enabled" in result["msg"]
    assert audit.writes == []
