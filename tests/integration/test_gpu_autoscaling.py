"""gpu_autoscaling against the local cluster (issue 10): the autoscaling problems gpu_preflight finds are seeded
as a user would leave them, gpu_autoscaling fixes them (check mode and diff first, then for real, then again
with no write), and gpu_preflight is then clean; other fields of the objects are kept."""

import pytest
from integration_helpers import CLUSTER_AUTOSCALERS, MACHINE_AUTOSCALERS, MACHINESETS, labels

from testbed import seed

MODULE = "gpu_autoscaling"
NAME, NAMESPACE = seed.OPENSHIFT_T4_MACHINESET, seed.MACHINE_API_NAMESPACE
MACHINESET_REF = "MachineSet/%s/%s" % (NAMESPACE, NAME)


def ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    return result


def autoscaling_problems(run_module):
    result = ok(run_module("gpu_preflight", {"checks": ["autoscaling"]}))
    return [f for f in result["findings"] if f["severity"] in ("error", "warning")]


@pytest.mark.profiles("openshift")
def test_a_machineset_stripped_of_what_the_autoscaler_needs_is_repaired(run_module, kube, audit_writes):
    # A user's MachineSet scaling from zero without the accelerator label or GPU annotation, no MachineAutoscaler,
    # and a ClusterAutoscaler whose GPU limits lost the T4 entry.
    kube.patch_custom(
        MACHINESETS,
        NAME,
        {
            "metadata": {"annotations": {"machine.openshift.io/GPU": None}},
            "spec": {"template": {"spec": {"metadata": {"labels": {"cluster-api/accelerator": None}}}}},
        },
        NAMESPACE,
    )
    kube.delete_custom(MACHINE_AUTOSCALERS, NAME, NAMESPACE)
    kube.patch_custom(CLUSTER_AUTOSCALERS, "default", {"spec": {"resourceLimits": {"gpus": []}}})
    found = autoscaling_problems(run_module)
    assert {f["fixed_by"].split(" ")[0] for f in found} == {"gpushare.k8s.gpu_autoscaling"}
    before = kube.custom_object(MACHINESETS, NAME, NAMESPACE)
    args = {"min_replicas": 0, "max_replicas": 3, "delay_after_add": "15m"}

    with audit_writes() as audit:
        checked = ok(run_module(MODULE, args, check=True, diff=True))
    assert checked["changed"] and audit.writes == []
    assert checked["diff"]["before"][MACHINESET_REF]["labels.cluster-api/accelerator"] is None
    assert checked["diff"]["after"][MACHINESET_REF]["labels.cluster-api/accelerator"] == "tesla-t4"

    with audit_writes() as audit:
        changed = ok(run_module(MODULE, args))
    assert changed["changed"] and changed["platform"] == "OpenShift"
    assert sorted(write.split(" (")[0] for write in audit.writes) == [
        "create machineautoscalers/%s/%s" % (NAMESPACE, NAME),
        "patch clusterautoscalers/default",
        "patch machinesets/%s/%s" % (NAMESPACE, NAME),
    ]
    machineset = kube.custom_object(MACHINESETS, NAME, NAMESPACE)
    node_labels = machineset["spec"]["template"]["spec"]["metadata"]["labels"]
    assert node_labels == dict(
        before["spec"]["template"]["spec"]["metadata"]["labels"],
        **{"cluster-api/accelerator": "tesla-t4", "topology.kubernetes.io/zone": "us-east-1a"},
    )
    assert machineset["metadata"]["annotations"] == dict(
        before["metadata"]["annotations"], **{"machine.openshift.io/GPU": "1"}
    )
    assert machineset["spec"]["template"]["spec"]["providerSpec"] == before["spec"]["template"]["spec"]["providerSpec"]
    autoscaler = kube.custom_object(MACHINE_AUTOSCALERS, NAME, NAMESPACE)
    assert autoscaler["spec"]["minReplicas"] == 0 and autoscaler["spec"]["maxReplicas"] == 3
    cluster_autoscaler = kube.custom_object(CLUSTER_AUTOSCALERS, "default")
    assert cluster_autoscaler["spec"]["resourceLimits"]["gpus"] == [{"type": "tesla-t4", "min": 0, "max": 3}]
    assert cluster_autoscaler["spec"]["resourceLimits"]["maxNodesTotal"] == 24  # the user's other fields
    assert autoscaling_problems(run_module) == []

    with audit_writes() as audit:
        again = ok(run_module(MODULE, args))
    assert again["changed"] is False and audit.writes == []


@pytest.mark.profiles("openshift")
def test_a_time_sliced_pools_limit_counts_what_its_nodes_advertise_and_its_annotation_is_kept(run_module, kube):
    # cluster-autoscaler counts a node as its allocatable nvidia.com/gpu (GetNodeGpuTarget): one T4 sliced 4 ways
    # counts 4, so three machines reach 12; the MachineSet's GPU annotation (the Machine API's on AWS) stays 1.
    sliced = run_module("gpu_timeslicing", {"replicas": 4, "nodes": {"selector": "cluster-api/accelerator=tesla-t4"}})
    assert not sliced.get("failed"), sliced.get("msg")
    kube.patch_custom(CLUSTER_AUTOSCALERS, "default", {"spec": {"resourceLimits": {"gpus": []}}})
    before = kube.custom_object(MACHINESETS, NAME, NAMESPACE)["metadata"]["annotations"]["machine.openshift.io/GPU"]
    result = ok(
        run_module(MODULE, {"machinesets": [NAME], "max_replicas": 3, "min_replicas": 0, "gpus_per_machine": 2})
    )
    gpus = kube.custom_object(CLUSTER_AUTOSCALERS, "default")["spec"]["resourceLimits"]["gpus"]
    assert gpus == [{"type": "tesla-t4", "min": 0, "max": 12}]
    assert kube.custom_object(MACHINESETS, NAME, NAMESPACE)["metadata"]["annotations"]["machine.openshift.io/GPU"] == (
        before
    )
    assert any("gpus_per_machine 2 is not written" in warning for warning in result["warnings"])
    assert any("shared 4 ways" in warning and "(4 here)" in warning for warning in result["warnings"])


@pytest.mark.profiles("openshift")
def test_a_limit_entry_is_updated_in_place_keeping_the_others(run_module, kube):
    kube.patch_custom(
        CLUSTER_AUTOSCALERS,
        "default",
        {"spec": {"resourceLimits": {"gpus": [{"type": "nvidia-a100", "min": 0, "max": 8}, {"type": "tesla-t4"}]}}},
    )
    ok(run_module(MODULE, {"machinesets": [NAME], "gpu_limit": {"min": 1, "max": 6}}))
    assert kube.custom_object(CLUSTER_AUTOSCALERS, "default")["spec"]["resourceLimits"]["gpus"] == [
        {"type": "nvidia-a100", "min": 0, "max": 8},
        {"type": "tesla-t4", "min": 1, "max": 6},
    ]


@pytest.mark.profiles("openshift")
def test_limits_that_can_never_match_and_duplicates_are_dropped_and_other_vendors_kept(run_module, kube, audit_writes):
    # The resource name where the GPU type belongs, on a MachineSet that lost its label; a duplicate T4 entry;
    # another vendor's GPU MachineSet and entry; an entry for a type no MachineSet carries yet.
    kube.add_gpu_machineset("gpushare-ocp-gpu-mi300x-us-east-1a", "amd-mi300x", 8)
    kube.patch_custom(
        MACHINESETS,
        NAME,
        {"spec": {"template": {"spec": {"metadata": {"labels": {"cluster-api/accelerator": None}}}}}},
        NAMESPACE,
    )
    gpus = [
        {"type": "nvidia.com/gpu", "min": 0, "max": 8},
        {"type": "tesla-t4", "min": 0, "max": 2},
        {"type": "amd-mi300x", "min": 0, "max": 16},
        {"type": "tesla-t4", "min": 1, "max": 4},
        {"type": "nvidia-a100", "min": 0, "max": 8},
    ]
    kube.patch_custom(CLUSTER_AUTOSCALERS, "default", {"spec": {"resourceLimits": {"gpus": gpus}}})
    wanted = [
        {"type": "amd-mi300x", "min": 0, "max": 16},
        {"type": "tesla-t4", "min": 0, "max": 6},
        {"type": "nvidia-a100", "min": 0, "max": 8},
    ]
    args = {"machinesets": [NAME], "gpu_limit": {"min": 0, "max": 6}}

    with audit_writes() as audit:
        checked = ok(run_module(MODULE, args, check=True, diff=True))
    assert checked["changed"] and audit.writes == []
    assert checked["diff"]["before"]["ClusterAutoscaler/default"]["resourceLimits.gpus"] == gpus
    assert checked["diff"]["after"]["ClusterAutoscaler/default"]["resourceLimits.gpus"] == wanted

    with audit_writes() as audit:
        changed = ok(run_module(MODULE, args))
    assert sorted(write.split(" (")[0] for write in audit.writes) == [
        "patch clusterautoscalers/default",
        "patch machinesets/%s/%s" % (NAMESPACE, NAME),
    ]
    cluster_autoscaler = kube.custom_object(CLUSTER_AUTOSCALERS, "default")
    assert cluster_autoscaler["spec"]["resourceLimits"]["gpus"] == wanted
    assert cluster_autoscaler["spec"]["resourceLimits"]["maxNodesTotal"] == 24
    dropped = [warning for warning in changed["warnings"] if "dropping" in warning]
    assert len(dropped) == 2
    assert "gpus[0] {type: nvidia.com/gpu, min: 0, max: 8}" in dropped[0] and "not a label value" in dropped[0]
    assert "gpus[1] {type: tesla-t4, min: 0, max: 2}" in dropped[1] and "only the last entry" in dropped[1]
    assert any("{type: nvidia-a100, min: 0, max: 8} matches no MachineSet" in w for w in changed["warnings"])
    # What gpu_preflight says of the limits now is the entry kept for a MachineSet to come.
    limits = [f for f in autoscaling_problems(run_module) if f["object"] == "ClusterAutoscaler/default"]
    assert [f["fix"] for f in limits] == [
        "remove spec.resourceLimits.gpus[2], unless a MachineSet labelled cluster-api/accelerator=nvidia-a100 is to be "
        "created"
    ]

    with audit_writes() as audit:
        again = ok(run_module(MODULE, args))
    assert again["changed"] is False and audit.writes == []


@pytest.mark.profiles("openshift")
def test_bad_input_is_refused_before_any_write(run_module, audit_writes):
    for args, message in (
        ({"accelerator": "nvidia.com/gpu"}, "it must be a label value"),
        ({"machinesets": ["nope"]}, "MachineSet(s) not found: nope"),
        ({"nodes": {"names": ["x"]}}, "on OpenShift choose the GPU pools with machinesets"),
        ({"min_replicas": 3, "max_replicas": 1}, "min_replicas (3) is above max_replicas (1)"),
    ):
        with audit_writes() as audit:
            result = run_module(MODULE, args)
        assert result["failed"] and message in result["msg"], result["msg"]
        assert audit.writes == []


@pytest.mark.profiles("scaleway", "vks")
def test_gpu_nodes_get_the_label_their_platforms_autoscaler_reads(run_module, kube, profile, audit_writes):
    label = {"scaleway": "k8s.scw.cloud/gpu", "vks": "vks.vngcloud.vn/accelerator"}[profile.name]
    first = kube.gpu_nodes()[0]
    kube.label_node(first, {label: None})
    with audit_writes() as audit:
        checked = ok(run_module(MODULE, {"nodes": {"names": [first]}, "accelerator": "gpu-x"}, check=True))
    assert checked["changed"] and audit.writes == []
    result = ok(run_module(MODULE, {"nodes": {"names": [first]}, "accelerator": "gpu-x"}))
    assert result["changed"] and labels(kube.node(first))[label] == "gpu-x"
    assert any("pool's (node group's) labels" in warning for warning in result.get("warnings", []))
    with audit_writes() as audit:
        again = ok(run_module(MODULE, {"nodes": {"names": [first]}, "accelerator": "gpu-x"}))
    assert again["changed"] is False and audit.writes == []
    refused = run_module(MODULE, {"machinesets": ["gpu"]})
    assert refused["failed"] and "no MachineSets" in refused["msg"]
