# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
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
    t4_node,
    t4_pool,
    t4_time_sliced,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    AutoscalingRequest,
    never_matching_reason,
    plan_node_autoscaling_labels,
    plan_openshift_autoscaling,
    suggested_accelerator,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import SCALEWAY, VKS
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf

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


def openshift_findings(machinesets, cluster_autoscalers, machine_autoscalers, machines, nodes):
    return pf.check_openshift(machinesets, cluster_autoscalers, machine_autoscalers, machines, nodes)


def test_a_bare_gpu_machineset_scaling_from_zero_is_made_whole_and_preflight_is_then_clean():
    machinesets, pool = [aws_machineset()], t4_pool()
    assert len(openshift_findings(machinesets, [], [], *pool)) == 2  # no accelerator label, no MachineAutoscaler
    plan = plan_openshift_autoscaling(
        request(min_replicas=0, max_replicas=4, create_cluster_autoscaler=True), machinesets, [], [], *pool
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
    assert openshift_findings(*(after + pool)) == []
    again = plan_openshift_autoscaling(request(min_replicas=0, max_replicas=4), *(after + pool))
    assert not again.changed and again.warnings == []


def test_other_fields_and_other_limit_entries_are_kept():
    ms = aws_machineset(labels={"team": "ml"}, annotations={"machine.openshift.io/vCPU": "4"})
    ca = cluster_autoscaler(types=("nvidia-a100",), delay="20m")
    ca["spec"]["maxNodesTotal"] = 24
    ma = machine_autoscaler(minimum=1)
    plan = plan_openshift_autoscaling(request(gpu_limit={"min": 1, "max": 8}), [ms], [ca], [ma], *t4_pool())
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
        request(delay_after_add="15m"), [ms], [cluster_autoscaler(delay="5m")], [machine_autoscaler()], *t4_pool()
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
        *t4_pool(),
    )
    assert plan.object_writes == {("MachineAutoscaler", NS, "gpu-t4"): ("patch", {"spec": {"maxReplicas": 6}})}


def test_a_limit_list_replaced_whole_carries_the_resource_version():
    ca = cluster_autoscaler(types=())
    plan = plan_openshift_autoscaling(request(), [aws_machineset()], [ca], [machine_autoscaler()], *t4_pool())
    action, patch = plan.object_writes[("ClusterAutoscaler", None, "default")]
    assert action == "patch" and patch["metadata"] == {"resourceVersion": ca["metadata"]["resourceVersion"]}


def test_time_sliced_pools_are_limited_in_what_their_nodes_advertise_with_a_note():
    """cluster-autoscaler's GetNodeGpuTarget (cluster-autoscaler-1.36.1, processors/customresources/gpu_processor.go)
    counts a node as its allocatable nvidia.com/gpu: 4 for one T4 time-sliced 4 ways, so three machines count 12."""
    machines, nodes = t4_pool("gpu-t4-0")
    sliced = t4_time_sliced("x", 4)
    nodes[0]["metadata"]["labels"].update(sliced["metadata"]["labels"])
    nodes[0]["status"] = sliced["status"]
    plan = plan_openshift_autoscaling(
        request(min_replicas=1, max_replicas=3), [aws_machineset()], [cluster_autoscaler(types=())], [], machines, nodes
    )
    assert plan.after["ClusterAutoscaler/default"]["resourceLimits.gpus"] == [{"type": "tesla-t4", "min": 0, "max": 12}]
    [note] = [warning for warning in plan.warnings if "shared 4 ways" in warning]
    assert "allocatable nvidia.com/gpu (4 here)" in note and "its 1 physical GPU(s)" in note and "AKS #3427" in note


def test_renamed_or_all_mig_nodes_count_as_the_annotations_physical_gpus():
    """A node advertising no nvidia.com/gpu counts as its group's template: the GPU annotation (GetNodeGpuTarget)."""
    machines, nodes = t4_pool("gpu-t4-0")
    nodes[0]["status"]["allocatable"] = {"nvidia.com/gpu.shared": "4"}
    nodes[0]["status"]["capacity"] = {"nvidia.com/gpu.shared": "4"}
    plan = plan_openshift_autoscaling(
        request(min_replicas=1, max_replicas=3),
        [aws_machineset(annotations={"machine.openshift.io/GPU": "1"})],
        [cluster_autoscaler(types=())],
        [],
        machines,
        nodes,
    )
    assert plan.after["ClusterAutoscaler/default"]["resourceLimits.gpus"] == [{"type": "tesla-t4", "min": 0, "max": 3}]


def test_a_gpu_annotation_present_is_never_rewritten():
    """On AWS the MachineSet controller sets machine.openshift.io/GPU from the instance type on every reconcile
    (openshift/machine-api-provider-aws, pkg/actuators/machineset/controller.go): writing another value would fight
    it, so a different gpus_per_machine is reported, not written, and the annotation's value is what counts."""
    ms = aws_machineset(annotations={"machine.openshift.io/GPU": "1"})
    plan = plan_openshift_autoscaling(
        request(accelerator="tesla-t4", gpus_per_machine=4, min_replicas=0, max_replicas=2),
        [ms],
        [cluster_autoscaler(types=())],
        [],
        [],
        [],
    )
    assert plan.after["MachineSet/%s/gpu-t4" % NS] == {
        "labels.cluster-api/accelerator": "tesla-t4",
        "labels.topology.kubernetes.io/zone": "us-east-1a",
    }
    assert "gpus_per_machine 4 is not written, its machine.openshift.io/GPU annotation already says 1" in " ".join(
        plan.warnings
    )
    assert plan.after["ClusterAutoscaler/default"]["resourceLimits.gpus"][0]["max"] == 2


def test_machinesets_without_gpus_are_left_alone_and_a_missing_cluster_autoscaler_is_a_warning():
    cpu = machineset("workers")
    plan = plan_openshift_autoscaling(
        request(min_replicas=1, max_replicas=2), [cpu, aws_machineset()], [], [], *t4_pool()
    )
    assert [key[2] for key in plan.object_writes] == ["gpu-t4", "gpu-t4"]
    assert any("no ClusterAutoscaler default" in warning for warning in plan.warnings)


def test_a_machineset_without_autoscaler_or_replicas_is_labelled_with_a_warning():
    plan = plan_openshift_autoscaling(request(), [aws_machineset()], [], [], *t4_pool())
    assert list(plan.object_writes) == [("MachineSet", NS, "gpu-t4")]
    assert any("does not scale" in warning for warning in plan.warnings)


def gpu_limits(*entries):
    """A ClusterAutoscaler whose resourceLimits.gpus are ``(type, min, max)`` entries."""
    ca = cluster_autoscaler(types=())
    ca["spec"]["resourceLimits"]["gpus"] = [{"type": t, "min": low, "max": high} for t, low, high in entries]
    return ca


def limit_warnings(plan):
    return [warning for warning in plan.warnings if warning.startswith("ClusterAutoscaler default: ")]


@pytest.mark.parametrize(
    "gpu_type, reason",
    [
        ("tesla-t4", None),
        ("nvidia_t4.x", None),  # a label value: some node could carry it
        ("nvidia.com/gpu", "it cannot contain '/'"),
        ("t" * 64, "63 characters or less"),
        ("-t4", "letters, digits"),
        ("", "it has no type"),
        (None, "it has no type"),
    ],
)
def test_a_limit_type_no_node_label_can_carry(gpu_type, reason):
    entry = {"min": 0, "max": 1} if gpu_type is None else {"type": gpu_type, "min": 0, "max": 1}
    found = never_matching_reason(entry)
    assert found is None if reason is None else reason in found


def test_limits_no_node_can_match_and_overridden_duplicates_are_dropped_and_other_vendors_kept():
    t4 = aws_machineset(labels={"cluster-api/accelerator": "tesla-t4"}, annotations={"machine.openshift.io/GPU": "1"})
    amd = machineset("gpu-mi300x", labels={"cluster-api/accelerator": "amd-mi300x"})
    ca = gpu_limits(
        ("nvidia.com/gpu", 0, 8), ("tesla-t4", 0, 2), ("amd-mi300x", 0, 16), ("tesla-t4", 1, 4), ("nvidia-a100", 0, 4)
    )
    ma = [machine_autoscaler(), machine_autoscaler("gpu-mi300x")]
    ask = request(machinesets=["gpu-t4"], gpu_limit={"min": 0, "max": 6})
    plan = plan_openshift_autoscaling(ask, [t4, amd], [ca], ma, *t4_pool())
    assert plan.after["ClusterAutoscaler/default"]["resourceLimits.gpus"] == [
        {"type": "amd-mi300x", "min": 0, "max": 16},
        {"type": "tesla-t4", "min": 0, "max": 6},
        {"type": "nvidia-a100", "min": 0, "max": 4},
    ]
    assert limit_warnings(plan) == [
        "ClusterAutoscaler default: dropping spec.resourceLimits.gpus[0] {type: nvidia.com/gpu, min: 0, max: 8}: "
        "nvidia.com/gpu is not a label value (it cannot contain '/': the type is the cluster-api/accelerator value of "
        "a GPU MachineSet, such as tesla-t4, not a resource name), so no node can ever carry it.",
        "ClusterAutoscaler default: dropping spec.resourceLimits.gpus[1] {type: tesla-t4, min: 0, max: 2}: gpus[3] has "
        "the same type, and the autoscaler applies only the last entry of a type.",
        "ClusterAutoscaler default: the spec.resourceLimits.gpus entry {type: nvidia-a100, min: 0, max: 4} matches no "
        "MachineSet's cluster-api/accelerator label, so it limits nothing now; it is kept for a MachineSet of that "
        "type to come (remove it if none will).",
    ]
    machinesets, cas, mas = apply(plan, [t4, amd], [ca], ma)
    # What preflight still says of the limits is the entry kept on purpose.
    assert [f["severity"] for f in openshift_findings(machinesets, cas, mas, *t4_pool())] == ["warning"]
    again = plan_openshift_autoscaling(ask, machinesets, cas, mas, *t4_pool())
    assert not again.changed and len(limit_warnings(again)) == 1


def test_of_duplicates_the_limit_in_force_is_kept_when_no_gpu_limit_is_given():
    t4 = aws_machineset(labels={"cluster-api/accelerator": "tesla-t4"}, annotations={"machine.openshift.io/GPU": "1"})
    ca = gpu_limits(("tesla-t4", 0, 2), ("tesla-t4", 1, 4))
    plan = plan_openshift_autoscaling(request(), [t4], [ca], [machine_autoscaler()], *t4_pool())
    assert plan.after["ClusterAutoscaler/default"]["resourceLimits.gpus"] == [{"type": "tesla-t4", "min": 1, "max": 4}]
    action, patch = plan.object_writes[("ClusterAutoscaler", None, "default")]
    assert action == "patch" and patch["metadata"] == {"resourceVersion": ca["metadata"]["resourceVersion"]}


def test_a_resource_name_limit_and_an_unlabelled_machineset_are_both_made_right():
    ms = aws_machineset(annotations={"machine.openshift.io/GPU": "1"})
    ca = gpu_limits(("nvidia.com/gpu", 0, 8))
    assert len([f for f in openshift_findings([ms], [ca], [machine_autoscaler()], *t4_pool())]) == 2
    plan = plan_openshift_autoscaling(request(), [ms], [ca], [machine_autoscaler()], *t4_pool())
    after = apply(plan, [ms], [ca], [machine_autoscaler()])
    assert after[1][0]["spec"]["resourceLimits"]["gpus"] == [{"type": "tesla-t4", "min": 0, "max": 4}]
    assert openshift_findings(*(after + t4_pool())) == []
    assert not plan_openshift_autoscaling(request(), *(after + t4_pool())).changed


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(accelerator="nvidia.com/gpu"), "it must be a label value"),
        (dict(accelerator="-t4"), "it must be a label value"),
        (dict(accelerator="t4." * 22), "63 characters or less"),
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


@pytest.mark.parametrize("accelerator", ["nvidia_a100", "nvidia.h100-80gb", "T4"])
def test_gpu_types_openshift_accepts_are_accepted(accelerator):
    """OpenShift's GPULimit.type has no pattern but must equal a label value, which may hold '_' and '.'
    (openshift/cluster-autoscaler-operator, clusterautoscaler_types.go)."""
    assert request(accelerator=accelerator).accelerator == accelerator


def test_refusals_that_need_the_cluster():
    with pytest.raises(GpuShareError, match="MachineSet.s. not found: nope"):
        plan_openshift_autoscaling(request(machinesets=["nope"]), [aws_machineset()], [], [], [], [])
    with pytest.raises(GpuShareError, match="No GPU MachineSet found"):
        plan_openshift_autoscaling(request(), [machineset("workers")], [], [], [], [])
    # A GPU MachineSet (annotated) with no node to read the product from needs the type.
    gpu_annotated = aws_machineset(annotations={"machine.openshift.io/GPU": "1"})
    with pytest.raises(GpuShareError, match="set accelerator"):
        plan_openshift_autoscaling(request(), [gpu_annotated], [], [], [], [])
    # Scaling from zero with neither the annotation nor a node to count GPUs on.
    labelled = aws_machineset(labels={"cluster-api/accelerator": "tesla-t4"})
    with pytest.raises(GpuShareError, match="set gpus_per_machine"):
        plan_openshift_autoscaling(request(min_replicas=0, max_replicas=2), [labelled], [], [], [], [])
    with pytest.raises(GpuShareError, match="above its MachineAutoscaler's maxReplicas 4"):
        plan_openshift_autoscaling(request(min_replicas=5), [labelled], [], [machine_autoscaler()], *t4_pool())


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
