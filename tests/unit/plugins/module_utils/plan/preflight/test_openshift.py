# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/openshift: GPU MachineSets, their Machines' nodes and the autoscalers on OpenShift."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import cluster_autoscaler, cpu_node, machine, machine_autoscaler, machineset, t4_pool
from preflight_objects import with_labels

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_a_well_configured_openshift_gpu_machineset_is_clean():
    ms = machineset(labels={"cluster-api/accelerator": "tesla-t4"}, annotations={"machine.openshift.io/GPU": "1"})
    assert pf.check_openshift([ms], [cluster_autoscaler()], [machine_autoscaler()], *t4_pool()) == []


def test_openshift_machineset_problems_each_with_its_fix():
    ms = machineset()
    findings = pf.check_openshift([ms], [cluster_autoscaler(delay="5m")], [machine_autoscaler(minimum=0)], *t4_pool())
    messages = [f["message"] for f in findings]
    assert any("no cluster-api/accelerator node label" in m for m in messages)
    assert any("machine.openshift.io/GPU annotation" in m for m in messages)
    assert any("topology.kubernetes.io/zone" in m for m in messages)
    assert any("delayAfterAdd is 5m" in m for m in messages)
    label = next(f for f in findings if "accelerator node label" in f["message"])
    assert label["fix"] == "set spec.template.spec.metadata.labels.cluster-api/accelerator: tesla-t4"
    # The ClusterAutoscaler's tesla-t4 entry matches no MachineSet until the MachineSet carries that label.
    [entry] = [f for f in findings if f["object"] == "ClusterAutoscaler/default" and "limits nothing" in f["message"]]
    assert entry["fix"].startswith("label MachineSet gpu-t4 with cluster-api/accelerator=tesla-t4")
    assert len(findings) == 5


def test_a_machinesets_nodes_are_found_through_its_machines_never_through_a_node_label():
    """OpenShift labels Machines with their MachineSet, not nodes: a node carrying that label but no Machine naming it
    is no node of the MachineSet (its GPU type cannot be read from it), and a Machine still provisioning brings none."""
    ms = machineset(annotations={"machine.openshift.io/GPU": "1"})
    machines, nodes = t4_pool("gpu-t4-0")
    labelled_only = with_labels(t4_pool("gpu-t4-9")[1][0], {"machine.openshift.io/cluster-api-machineset": "gpu-t4"})
    provisioning = machine("gpu-t4-m9", "gpu-t4")
    for seen_machines, seen_nodes, fix in (
        (machines, nodes, "tesla-t4"),
        ([provisioning], [labelled_only], "<gpu-type>"),
    ):
        # No limit entry either: the GPU type can only come from the MachineSet's nodes.
        findings = pf.check_openshift(
            [ms], [cluster_autoscaler(types=())], [machine_autoscaler()], seen_machines, seen_nodes
        )
        label = next(f for f in findings if "accelerator node label" in f["message"])
        assert label["fix"] == "set spec.template.spec.metadata.labels.cluster-api/accelerator: " + fix


def test_openshift_invalid_accelerator_missing_limit_and_no_autoscalers():
    invalid = machineset(labels={"cluster-api/accelerator": "nvidia.com/gpu"})
    found = pf.check_openshift([invalid], [cluster_autoscaler()], [machine_autoscaler()], *t4_pool())
    [label] = [f for f in found if f["object"].startswith("MachineSet/")]
    assert "not a valid GPU type" in label["message"] and label["fix"].endswith(
        "tesla-t4 and use the same type in the ClusterAutoscaler"
    )
    assert [f["fix"] for f in found if f["object"] == "ClusterAutoscaler/default"] == [
        "label MachineSet gpu-t4 with cluster-api/accelerator=tesla-t4 (spec.template.spec.metadata.labels), "
        "keeping this entry"
    ]
    other = machineset(labels={"cluster-api/accelerator": "nvidia-t4"})
    # The tesla-t4 entry is the one nvidia-t4 lacks: one problem, one finding.
    [found] = pf.check_openshift([other], [cluster_autoscaler()], [machine_autoscaler()], *t4_pool())
    assert found["object"] == "ClusterAutoscaler/default" and "no entry of type nvidia-t4" in found["message"]
    assert (
        found["fix"] == "set spec.resourceLimits.gpus[0].type: nvidia-t4 (the cluster-api/accelerator value of "
        "MachineSet gpu-t4)"
    )
    assert pf.check_openshift([other], [cluster_autoscaler(types=())], [machine_autoscaler()], *t4_pool())[0][
        "message"
    ].startswith("spec.resourceLimits.gpus has no entry of type nvidia-t4")
    found = pf.check_openshift([other], [cluster_autoscaler()], [], *t4_pool())
    assert [(f["severity"], f["message"]) for f in found] == [
        ("warning", "no MachineAutoscaler targets this GPU MachineSet: it never scales"),
        (
            "warning",
            "spec.resourceLimits.gpus[0] {type: tesla-t4, min: 0, max: 4} limits nothing: no GPU MachineSet carries "
            "cluster-api/accelerator=tesla-t4, and there is no entry of type nvidia-t4 (MachineSet gpu-t4)",
        ),
    ]  # a warning: the MachineSet does not scale, so its missing limit breaks nothing yet
    [found] = pf.check_openshift([other], [], [machine_autoscaler()], *t4_pool())
    assert "no ClusterAutoscaler default" in found["message"]
    cpu = machineset("workers")
    assert pf.check_openshift([cpu], [], [], [machine("w-m0", "workers", "w-0")], [cpu_node("w-0")]) == []
