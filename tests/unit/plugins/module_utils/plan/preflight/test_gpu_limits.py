# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/gpu_limits: the ClusterAutoscaler's ``resourceLimits.gpus`` entries against the GPU MachineSets, each
finding with its exact fix or its choices."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import cluster_autoscaler, machine_autoscaler, machineset, t4_pool

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf

T4_LABEL = {"cluster-api/accelerator": "tesla-t4"}
GPU_ANNOTATION = {"machine.openshift.io/GPU": "1"}


def limits(*entries):
    """A ClusterAutoscaler whose resourceLimits.gpus are ``(type, min, max)`` entries."""
    ca = cluster_autoscaler(types=())
    ca["spec"]["resourceLimits"]["gpus"] = [{"type": t, "min": low, "max": high} for t, low, high in entries]
    return ca


def limit_findings(machinesets, ca, machine_autoscalers=None, pool=None):
    found = pf.check_openshift(
        machinesets,
        [ca],
        [machine_autoscaler()] if machine_autoscalers is None else machine_autoscalers,
        *(t4_pool() if pool is None else pool),
    )
    return [f for f in found if f["object"] == "ClusterAutoscaler/default"], found


def test_a_limit_typed_with_the_resource_name_is_an_error_with_the_type_to_set():
    ms = machineset(labels=T4_LABEL, annotations=GPU_ANNOTATION)
    [found], everything = limit_findings([ms], limits(("nvidia.com/gpu", 0, 4)))
    assert found["severity"] == "error" and everything == [found]
    assert found["message"] == (
        "spec.resourceLimits.gpus[0] {type: nvidia.com/gpu, min: 0, max: 4} limits nothing: nvidia.com/gpu is not a "
        "label value (it cannot contain '/': the type is the cluster-api/accelerator value of a GPU MachineSet, such "
        "as tesla-t4, not a resource name), so no node can ever carry it, and there is no entry of type tesla-t4 "
        "(MachineSet gpu-t4)"
    )
    assert found["fix"] == (
        "set spec.resourceLimits.gpus[0].type: tesla-t4 (the cluster-api/accelerator value of MachineSet gpu-t4)"
    )
    assert found["fixed_by"] == "gpushare.k8s.gpu_autoscaling (gpu_limit)"


def test_a_limit_typed_with_the_resource_name_is_found_when_the_machineset_lacks_its_label_too():
    [found], everything = limit_findings([machineset(annotations=GPU_ANNOTATION)], limits(("nvidia.com/gpu", 0, 4)))
    assert found["severity"] == "error"
    assert found["fix"] == (
        "set spec.resourceLimits.gpus[0].type: tesla-t4, the cluster-api/accelerator value to give MachineSet gpu-t4"
    )
    [label] = [f for f in everything if f["object"] == "MachineSet/openshift-machine-api/gpu-t4"]
    assert label["fix"] == "set spec.template.spec.metadata.labels.cluster-api/accelerator: tesla-t4"
    # No GPU node to read the product from: the type is the user's to choose, in both fixes alike.
    [found], everything = limit_findings(
        [machineset(annotations=GPU_ANNOTATION)], limits(("nvidia.com/gpu", 0, 4)), pool=([], [])
    )
    assert "type: <gpu-type>, the cluster-api/accelerator value to give MachineSet gpu-t4" in found["fix"]


def test_a_valid_type_no_machineset_carries_names_the_unlabelled_machineset_to_label_with_it():
    [found], everything = limit_findings([machineset(annotations=GPU_ANNOTATION)], limits(("nvidia-t4", 0, 4)))
    assert found["severity"] == "error"
    assert found["fix"] == (
        "label MachineSet gpu-t4 with cluster-api/accelerator=nvidia-t4 (spec.template.spec.metadata.labels), keeping "
        "this entry"
    )
    assert found["fixed_by"] == "gpushare.k8s.gpu_autoscaling (machinesets: [gpu-t4], accelerator: nvidia-t4)"
    # The MachineSet's own finding asks for the same value, not the one its nodes' product suggests.
    [label] = [f for f in everything if f["object"].startswith("MachineSet/")]
    assert label["fix"] == "set spec.template.spec.metadata.labels.cluster-api/accelerator: nvidia-t4"


def test_surplus_limits_are_warnings_and_other_vendors_matching_types_are_kept():
    t4 = machineset(labels=T4_LABEL, annotations=GPU_ANNOTATION)
    amd = machineset("gpu-mi300x", labels={"cluster-api/accelerator": "amd-mi300x"})
    ca = limits(("tesla-t4", 0, 4), ("nvidia.com/gpu", 0, 8), ("amd-mi300x", 0, 16), ("nvidia-a100", 0, 8))
    found, _everything = limit_findings([t4, amd], ca, [machine_autoscaler(), machine_autoscaler("gpu-mi300x")])
    assert [(f["severity"], f["fix"]) for f in found] == [
        ("warning", "remove spec.resourceLimits.gpus[1]: every GPU MachineSet's type has its own entry"),
        (
            "warning",
            "remove spec.resourceLimits.gpus[3], unless a MachineSet labelled cluster-api/accelerator=nvidia-a100 is "
            "to be created",
        ),
    ]
    assert found[1]["fixed_by"] == "oc edit clusterautoscaler default"


def test_an_entry_a_later_one_of_the_same_type_overrides_is_a_warning_naming_the_limit_in_force():
    ms = machineset(labels=T4_LABEL, annotations=GPU_ANNOTATION)
    [found], everything = limit_findings([ms], limits(("tesla-t4", 0, 2), ("tesla-t4", 1, 4)))
    assert everything == [found] and found["severity"] == "warning"
    assert found["message"] == (
        "spec.resourceLimits.gpus[0] {type: tesla-t4, min: 0, max: 2} does nothing: gpus[1] has the same type, and "
        "the autoscaler applies only the last entry of a type"
    )
    assert found["fix"] == (
        "remove spec.resourceLimits.gpus[0], keeping gpus[1] {type: tesla-t4, min: 1, max: 4} (the limit in force)"
    )


def test_when_several_machinesets_could_be_meant_every_choice_is_named():
    a100 = machineset("gpu-a100", labels={"cluster-api/accelerator": "nvidia-a100"})
    t4 = machineset(labels=T4_LABEL, annotations=GPU_ANNOTATION)
    ca = limits(("nvidia.com/gpu", 0, 8))
    found, everything = limit_findings([a100, t4], ca, [machine_autoscaler(), machine_autoscaler("gpu-a100")])
    [entry] = found[-1:]
    assert entry["fix"] == (
        "one of: set spec.resourceLimits.gpus[0].type: nvidia-a100 (the cluster-api/accelerator value of MachineSet "
        "gpu-a100); set spec.resourceLimits.gpus[0].type: tesla-t4 (the cluster-api/accelerator value of MachineSet "
        "gpu-t4); remove it"
    )
    # Not exact, so each type keeps its own "no entry" error.
    assert sum("has no entry of type" in f["message"] for f in everything) == 2
