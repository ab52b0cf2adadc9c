# -*- coding: utf-8 -*-
"""gpu_autoscaling's planner on API-shaped objects: what it writes fixes what gpu_preflight finds, nothing else
changes, a second plan is empty, and bad input is refused before any read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import (
    cluster_autoscaler,
    cpu_node,
    machine_autoscaler,
    machineset,
    merge_patch,
    t4_machine,
    t4_node,
    t4_time_sliced,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan import preflight as pf
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    AutoscalingRequest,
    plan_node_autoscaling_labels,
    plan_openshift_autoscaling,
    suggested_accelerator,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.cloud import SCALEWAY, VKS
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet

NS = "openshift-machine-api"


def request(**params):
    return AutoscalingRequest(dict(dict(zone_label=True, create_cluster_autoscaler=False), **params))


def aws_machineset(name="gpu-t4", labels=None, annotations=None):
    ms = machineset(name, labels=labels, annotations=annotations)
    ms["spec"]["template"]["spec"]["providerSpec"] = {
        "value": {"instanceType": "g4dn.xlarge", "placement": {"availabilityZone": "us-east-1a"}}
    }
    return ms


def apply(plan, machinesets, cluster_autoscalers, machine_autoscalers):
    """The objects as the API server leaves them after the plan's writes."""
    objects = dict((("MachineSet", NS, ms["metadata"]["name"]), ms) for ms in machinesets)
    objects.update((("MachineAutoscaler", NS, ma["metadata"]["name"]), ma) for ma in machine_autoscalers)
    objects.update((("ClusterAutoscaler", None, ca["metadata"]["name"]), ca) for ca in cluster_autoscalers)
    for key, (action, body) in plan.object_writes.items():
        if action == "create":
            assert key not in objects
            objects[key] = body
        else:
            patch = dict(body)
            if "resourceVersion" in (patch.get("metadata") or {}):
                assert patch["metadata"]["resourceVersion"] == objects[key]["metadata"]["resourceVersion"]
            objects[key] = merge_patch(objects[key], patch)
    by_kind = dict((kind, [obj for key, obj in sorted(objects.items()) if key[0] == kind]) for kind, _n, _m in objects)
    return by_kind.get("MachineSet", []), by_kind.get("ClusterAutoscaler", []), by_kind.get("MachineAutoscaler", [])


def openshift_findings(machinesets, cluster_autoscalers, machine_autoscalers, nodes):
    return pf.check_openshift(machinesets, cluster_autoscalers, machine_autoscalers, nodes)


def test_a_bare_gpu_machineset_scaling_from_zero_is_made_whole_and_preflight_is_then_clean():
    machinesets, nodes = [aws_machineset()], [t4_machine()]
    assert len(openshift_findings(machinesets, [], [], nodes)) == 2  # no accelerator label, no MachineAutoscaler
    plan = plan_openshift_autoscaling(
        request(min_replicas=0, max_replicas=4, create_cluster_autoscaler=True), machinesets, [], [], nodes
    )
    assert sorted(plan.object_writes) == [
        ("ClusterAutoscaler", None, "default"),
        ("MachineAutoscaler", NS, "gpu-t4"),
        ("MachineSet", NS, "gpu-t4"),
    ]
    assert plan.object_writes[("MachineSet", NS, "gpu-t4")] == (
        "patch",
        {
            "metadata": {"annotations": {"machine.openshift.io/GPU": "1"}},
            "spec": {
                "template": {
                    "spec": {
                        "metadata": {
                            "labels": {
                                "cluster-api/accelerator": "tesla-t4",
                                "topology.kubernetes.io/zone": "us-east-1a",
                            }
                        }
                    }
                }
            },
        },
    )
    action, created = plan.object_writes[("ClusterAutoscaler", None, "default")]
    assert action == "create"
    assert created["spec"] == {
        "resourceLimits": {"gpus": [{"type": "tesla-t4", "min": 0, "max": 4}]},
        "scaleDown": {"enabled": True, "delayAfterAdd": "15m"},
    }
    after = apply(plan, machinesets, [], [])
    assert openshift_findings(*(after + (nodes,))) == []
    again = plan_openshift_autoscaling(request(min_replicas=0, max_replicas=4), *(after + (nodes,)))
    assert not again.changed and again.warnings == []


def test_other_fields_and_other_limit_entries_are_kept():
    ms = aws_machineset(labels={"team": "ml"}, annotations={"machine.openshift.io/vCPU": "4"})
    ca = cluster_autoscaler(types=("nvidia-a100",), delay="20m")
    ca["spec"]["maxNodesTotal"] = 24
    ma = machine_autoscaler(minimum=1)
    plan = plan_openshift_autoscaling(request(gpu_limit={"min": 1, "max": 8}), [ms], [ca], [ma], [t4_machine()])
    [ms_after], [ca_after], [ma_after] = apply(plan, [ms], [ca], [ma])
    assert ms_after["metadata"]["annotations"] == {"machine.openshift.io/vCPU": "4", "machine.openshift.io/GPU": "1"}
    assert ms_after["spec"]["template"]["spec"]["metadata"]["labels"] == {
        "team": "ml",
        "cluster-api/accelerator": "tesla-t4",
    }  # no zone label: this MachineSet does not scale from zero
    assert ca_after["spec"]["maxNodesTotal"] == 24 and ca_after["spec"]["scaleDown"] == {"delayAfterAdd": "20m"}
    assert ca_after["spec"]["resourceLimits"]["gpus"] == [
        {"type": "nvidia-a100", "min": 0, "max": 4},
        {"type": "tesla-t4", "min": 1, "max": 8},
    ]
    assert ma_after == ma  # the MachineAutoscaler already said what is wanted


def test_the_diff_shows_each_owned_field_before_and_after():
    ms = aws_machineset(labels={"cluster-api/accelerator": "nvidia.com/gpu"})
    plan = plan_openshift_autoscaling(
        request(delay_after_add="15m"), [ms], [cluster_autoscaler(delay="5m")], [machine_autoscaler()], [t4_machine()]
    )
    assert plan.before["MachineSet/%s/gpu-t4" % NS] == {
        "labels.cluster-api/accelerator": "nvidia.com/gpu",
        "annotations.machine.openshift.io/GPU": None,
    }
    assert plan.after["MachineSet/%s/gpu-t4" % NS] == {
        "labels.cluster-api/accelerator": "tesla-t4",
        "annotations.machine.openshift.io/GPU": "1",
    }
    assert plan.before["ClusterAutoscaler/default"]["scaleDown.delayAfterAdd"] == "5m"
    assert plan.after["ClusterAutoscaler/default"]["scaleDown.delayAfterAdd"] == "15m"
    assert plan.after["MachineAutoscaler/%s/gpu-t4" % NS] == {"minReplicas": 1, "maxReplicas": 4}


def test_an_existing_machine_autoscaler_is_patched_with_only_what_changes():
    plan = plan_openshift_autoscaling(
        request(max_replicas=6),
        [aws_machineset(labels={"cluster-api/accelerator": "tesla-t4"}, annotations={"machine.openshift.io/GPU": "1"})],
        [cluster_autoscaler()],
        [machine_autoscaler()],
        [t4_machine()],
    )
    assert plan.object_writes == {("MachineAutoscaler", NS, "gpu-t4"): ("patch", {"spec": {"maxReplicas": 6}})}


def test_a_limit_list_replaced_whole_carries_the_resource_version():
    ca = cluster_autoscaler(types=())
    plan = plan_openshift_autoscaling(request(), [aws_machineset()], [ca], [machine_autoscaler()], [t4_machine()])
    action, patch = plan.object_writes[("ClusterAutoscaler", None, "default")]
    assert action == "patch" and patch["metadata"] == {"resourceVersion": ca["metadata"]["resourceVersion"]}


def test_time_sliced_pools_are_limited_in_physical_gpus_with_a_note():
    nodes = [t4_machine("gpu-t4-0")]
    nodes[0]["metadata"]["labels"].update(t4_time_sliced("x", 4)["metadata"]["labels"])
    plan = plan_openshift_autoscaling(
        request(min_replicas=1, max_replicas=3), [aws_machineset()], [cluster_autoscaler(types=())], [], nodes
    )
    assert plan.after["ClusterAutoscaler/default"]["resourceLimits.gpus"] == [{"type": "tesla-t4", "min": 0, "max": 3}]
    assert any("shared 4 ways" in warning and "#8129" in warning for warning in plan.warnings)


def test_machinesets_without_gpus_are_left_alone_and_a_missing_cluster_autoscaler_is_a_warning():
    cpu = machineset("workers")
    plan = plan_openshift_autoscaling(
        request(min_replicas=1, max_replicas=2), [cpu, aws_machineset()], [], [], [t4_machine()]
    )
    assert [key[2] for key in plan.object_writes] == ["gpu-t4", "gpu-t4"]
    assert any("no ClusterAutoscaler default" in warning for warning in plan.warnings)


def test_a_machineset_without_autoscaler_or_replicas_is_labelled_with_a_warning():
    plan = plan_openshift_autoscaling(request(), [aws_machineset()], [], [], [t4_machine()])
    assert list(plan.object_writes) == [("MachineSet", NS, "gpu-t4")]
    assert any("does not scale" in warning for warning in plan.warnings)


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(accelerator="nvidia.com/gpu"), "letters, digits and dashes"),
        (dict(accelerator="-t4"), "letters, digits and dashes"),
        (dict(gpus_per_machine=0), "gpus_per_machine must be 1 or more"),
        (dict(min_replicas=-1), "min_replicas must be 0 or more"),
        (dict(max_replicas=0), "max_replicas must be 1 or more"),
        (dict(min_replicas=3, max_replicas=2), "min_replicas (3) is above max_replicas (2)"),
        (dict(gpu_limit={"min": 4, "max": 2}), "0 <= min <= max"),
        (dict(delay_after_add="15 minutes"), "Go's form"),
    ],
)
def test_bad_input_is_refused_before_anything_is_read(params, message):
    with pytest.raises(GpuShareError) as refused:
        request(**params)
    assert message in refused.value.msg


def test_refusals_that_need_the_cluster():
    with pytest.raises(GpuShareError, match="MachineSet.s. not found: nope"):
        plan_openshift_autoscaling(request(machinesets=["nope"]), [aws_machineset()], [], [], [])
    with pytest.raises(GpuShareError, match="No GPU MachineSet found"):
        plan_openshift_autoscaling(request(), [machineset("workers")], [], [], [])
    # A GPU MachineSet (annotated) with no node to read the product from needs the type.
    gpu_annotated = aws_machineset(annotations={"machine.openshift.io/GPU": "1"})
    with pytest.raises(GpuShareError, match="set accelerator"):
        plan_openshift_autoscaling(request(), [gpu_annotated], [], [], [])
    # Scaling from zero with neither the annotation nor a node to count GPUs on.
    labelled = aws_machineset(labels={"cluster-api/accelerator": "tesla-t4"})
    with pytest.raises(GpuShareError, match="set gpus_per_machine"):
        plan_openshift_autoscaling(request(min_replicas=0, max_replicas=2), [labelled], [], [], [])
    with pytest.raises(GpuShareError, match="above its MachineAutoscaler's maxReplicas 4"):
        plan_openshift_autoscaling(request(min_replicas=5), [labelled], [], [machine_autoscaler()], [t4_machine()])


def test_suggested_accelerator_from_the_product_label():
    assert suggested_accelerator(Fleet([t4_node("a")]).states.values()) == "tesla-t4"
    assert suggested_accelerator([]) is None


@pytest.mark.parametrize("platform, label", [(SCALEWAY, "k8s.scw.cloud/gpu"), (VKS, "vks.vngcloud.vn/accelerator")])
def test_other_platforms_get_the_node_label_their_autoscaler_reads(platform, label):
    fleet = Fleet([t4_node("a"), t4_node("b")])
    plan = plan_node_autoscaling_labels(request(accelerator="t4"), platform, fleet, ["a"])
    assert list(plan.node_patches) == ["a"]
    assert plan.node_patches["a"]["metadata"]["labels"] == {label: "t4"}
    assert any("pool's (node group's) labels" in warning for warning in plan.warnings)
    fleet = Fleet([merge_patch(fleet.nodes["a"], plan.node_patches["a"]), fleet.nodes["b"]])
    assert not plan_node_autoscaling_labels(request(accelerator="t4"), platform, fleet, ["a"]).changed


def test_another_autoscaler_gpu_label_is_written_even_on_an_unrecognised_platform():
    fleet = Fleet([t4_node("a")])
    for platform in (VKS, None):
        plan = plan_node_autoscaling_labels(request(autoscaler_gpu_label="example.com/gpu-type"), platform, fleet, None)
        assert plan.node_patches["a"]["metadata"]["labels"] == {"example.com/gpu-type": "tesla-t4"}
        assert any("set example.com/gpu-type in the pool's" in warning for warning in plan.warnings)


def test_node_labels_refuse_unknown_platforms_and_non_gpu_nodes():
    fleet = Fleet([t4_node("a")])
    with pytest.raises(GpuShareError, match="platform was not recognised.*Name the label in autoscaler_gpu_label"):
        plan_node_autoscaling_labels(request(), None, fleet, None)
    with pytest.raises(GpuShareError, match="Not GPU nodes.*cpu"):
        plan_node_autoscaling_labels(request(), SCALEWAY, Fleet([t4_node("a"), cpu_node("cpu")]), ["cpu"])
