# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight: gpu_preflight's checks on API-shaped objects."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest
from k8s_objects import (
    GPU_TAINT,
    GPU_TOLERATION,
    NAMESPACE,
    a100_node,
    cluster_autoscaler,
    cluster_policy,
    config_map,
    container,
    cpu_node,
    h100_mig_mixed,
    machine,
    machine_autoscaler,
    machineset,
    node,
    pod,
    t4_node,
    t4_pool,
    t4_time_sliced,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf

NFD_PCI = {"feature.node.kubernetes.io/pci-10de.present": "true"}
VALIDATOR = "nvidia-operator-validator"


def tainted(obj, *taints):
    obj = copy.deepcopy(obj)
    obj["spec"]["taints"] = list(taints)
    return obj


def daemonset(name, namespace=NAMESPACE, tolerations=None, labels=None, annotations=None):
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {"app": name},
            "annotations": annotations or {},
            "generation": 1,
        },
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"spec": {"tolerations": tolerations or [], "containers": [{"name": "c", "image": "i"}]}},
        },
    }


def helm_nfd(tolerations):
    return daemonset(
        "gpu-operator-node-feature-discovery-worker",
        tolerations=tolerations,
        labels={"app.kubernetes.io/managed-by": "Helm"},
        annotations={"meta.helm.sh/release-name": "gpu-operator"},
    )


def ds_pod(ds, node_name, ready=True, deleting=False):
    result = pod("%s-%s" % (ds["metadata"]["name"], node_name), [container()], namespace=ds["metadata"]["namespace"])
    result["spec"]["nodeName"] = node_name
    result["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": ds["metadata"]["name"]}]
    result["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    if deleting:
        result["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return result


OPERAND_NAMES = [
    "gpu-feature-discovery",
    "nvidia-device-plugin-daemonset",
    "nvidia-dcgm-exporter",
    "nvidia-mig-manager",
    "nvidia-device-plugin-mps-control-daemon",
    VALIDATOR,
]


def healthy_operator(nodes, names=OPERAND_NAMES):
    """Every operand DaemonSet and NFD's worker, with a ready pod on every node that needs it."""
    daemonsets = [daemonset(name) for name in names]
    nfd = helm_nfd([GPU_TOLERATION])
    pods = []
    for gpu_node in nodes:
        labels = gpu_node["metadata"]["labels"]
        for ds in daemonsets + [nfd]:
            name = ds["metadata"]["name"]
            if name == "nvidia-mig-manager" and labels.get("nvidia.com/mig.capable") != "true":
                continue
            if name.endswith("mps-control-daemon") and labels.get("nvidia.com/mps.capable") != "true":
                continue
            pods.append(ds_pod(ds, gpu_node["metadata"]["name"]))
    return daemonsets, nfd, pods


def only(findings, check=None, obj=None):
    return [f for f in findings if (check is None or f["check"] == check) and (obj is None or f["object"] == obj)]


# --- taints --------------------------------------------------------------------------------------


def test_an_unset_or_empty_toleration_list_means_only_the_built_in_gpu_toleration():
    nodes = [tainted(t4_node("t4-0"), dict(GPU_TAINT))]
    for tolerations in (None, []):
        assert pf.check_taints(cluster_policy(tolerations=tolerations), nodes, []) == []
    custom = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    [found] = pf.check_taints(cluster_policy(tolerations=None), [tainted(t4_node("t4-0"), dict(GPU_TAINT), custom)], [])
    assert found["severity"] == "error" and found["object"] == "ClusterPolicy/cluster-policy"
    assert "dedicated=ml:NoSchedule" in found["message"] and "t4-0" in found["message"]
    wanted = [GPU_TOLERATION, {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    assert json.dumps(wanted, sort_keys=True) in found["fix"]


def test_a_list_without_the_gpu_toleration_replaces_it_and_loses_gpu_tainted_nodes():
    policy = cluster_policy(tolerations=[{"key": "dedicated", "operator": "Exists"}])
    nodes = [tainted(t4_node("t4-0"), dict(GPU_TAINT)), tainted(a100_node("a100-0"), dict(GPU_TAINT))]
    [found] = pf.check_taints(policy, nodes, [])
    assert "nvidia.com/gpu=present:NoSchedule" in found["message"] and "t4-0, a100-0" in found["message"]
    # With no GPU-tainted node yet: a warning that one would lose its operands.
    [warning] = pf.check_taints(policy, [t4_node("t4-0")], [])
    assert warning["severity"] == "warning" and "replaces the built-in one" in warning["message"]


def test_prefer_no_schedule_taints_and_cpu_nodes_are_ignored():
    soft = {"key": "spot", "effect": "PreferNoSchedule"}
    hard = {"key": "dedicated", "effect": "NoSchedule"}
    assert (
        pf.check_taints(cluster_policy(), [tainted(t4_node("t4-0"), soft), tainted(cpu_node("cpu-0"), hard)], []) == []
    )


def test_a_node_only_nfd_labelled_is_a_gpu_node():
    bare = tainted(node("new-gpu", NFD_PCI), {"key": "dedicated", "effect": "NoExecute"})
    [found] = pf.check_taints(cluster_policy(), [bare], [])
    assert "new-gpu" in found["message"] and '"operator": "Exists"' in found["fix"]


def test_nfd_workers_fix_names_the_helm_value_or_openshifts_nfd_operator():
    taint = {"key": "dedicated", "effect": "NoExecute"}
    nodes = [tainted(t4_node("t4-0"), dict(GPU_TAINT), taint)]
    policy = cluster_policy(tolerations=[GPU_TOLERATION, {"key": "dedicated", "operator": "Exists"}])
    [helm] = pf.check_taints(policy, nodes, [helm_nfd([GPU_TOLERATION])])
    assert helm["object"] == "DaemonSet/%s/gpu-operator-node-feature-discovery-worker" % NAMESPACE
    assert "node-feature-discovery.worker.tolerations of release gpu-operator" in helm["fixed_by"]
    openshift = daemonset("nfd-worker", "openshift-nfd", tolerations=[{"operator": "Exists", "effect": "NoSchedule"}])
    [nfd] = pf.check_taints(policy, nodes, [openshift])
    assert "NodeFeatureDiscovery" in nfd["fixed_by"]
    # NoSchedule taints are tolerated by OpenShift's worker.
    soft = [tainted(t4_node("t4-0"), dict(GPU_TAINT), {"key": "dedicated", "effect": "NoSchedule"})]
    assert pf.check_taints(policy, soft, [openshift]) == []


# --- operator components -------------------------------------------------------------------------


def test_a_healthy_operator_has_no_findings():
    nodes = [t4_node("t4-0"), a100_node("a100-0"), cpu_node("cpu-0")]
    daemonsets, nfd, pods = healthy_operator(nodes[:2])
    assert pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [nfd], nodes, pods) == []


def test_missing_unready_switched_off_and_absent_operands():
    nodes = [t4_node("t4-0"), a100_node("a100-0")]
    nodes[0]["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"] = "false"
    daemonsets, nfd, pods = healthy_operator(nodes, [n for n in OPERAND_NAMES if n != VALIDATOR])
    pods = [p for p in pods if p["metadata"]["name"] != "nvidia-mig-manager-a100-0"]
    pods = [p for p in pods if p["metadata"]["name"] != "gpu-feature-discovery-t4-0"]
    pods.append(ds_pod(daemonsets[0], "t4-0", deleting=True))  # terminating: not there
    for p in pods:
        if p["metadata"]["name"] == "nvidia-device-plugin-daemonset-a100-0":
            p["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    findings = pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [nfd], nodes, pods)
    by = dict(((f["object"], f["message"].split(" ")[1]), f) for f in findings)
    assert by[("Node/t4-0", "DCGM")]["severity"] == "warning"
    assert "nvidia.com/gpu.deploy.dcgm-exporter=true" in by[("Node/t4-0", "DCGM")]["fix"]
    assert "no pod on GPU node(s) a100-0" in by[("DaemonSet/%s/nvidia-mig-manager" % NAMESPACE, "MIG")]["message"]
    assert "no pod on GPU node(s) t4-0" in by[("DaemonSet/%s/gpu-feature-discovery" % NAMESPACE, "GPU")]["message"]
    unready = by[("DaemonSet/%s/nvidia-device-plugin-daemonset" % NAMESPACE, "device")]
    assert "not ready on GPU node(s) a100-0" in unready["message"]
    absent = by[("DaemonSet/%s/%s" % (NAMESPACE, VALIDATOR), "operator")]
    assert "does not exist" in absent["message"] and "t4-0, a100-0" in absent["message"]
    assert len(findings) == 5


def test_operands_the_policy_disables_are_not_required_and_mps_only_where_mps_is_on():
    nodes = [t4_node("t4-0")]
    policy = cluster_policy()
    policy["spec"]["dcgmExporter"]["enabled"] = False
    daemonsets, nfd, pods = healthy_operator(nodes)
    pods = [p for p in pods if "dcgm" not in p["metadata"]["name"]]
    assert pf.check_operator(policy, NAMESPACE, daemonsets, [nfd], nodes, pods) == []
    nodes[0]["metadata"]["labels"]["nvidia.com/mps.capable"] = "true"
    [mps] = pf.check_operator(policy, NAMESPACE, daemonsets, [nfd], nodes, pods)
    assert "MPS control daemon has no pod on GPU node(s) t4-0" in mps["message"]


def test_paused_operands_are_information_while_a_mig_change_is_pending_and_left_to_sharing_otherwise():
    nodes = [a100_node("a100-0")]
    labels = nodes[0]["metadata"]["labels"]
    labels["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-mig-change"
    daemonsets, nfd, pods = healthy_operator(nodes)
    pods = [p for p in pods if "device-plugin-daemonset" not in p["metadata"]["name"]]
    assert pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [nfd], nodes, pods) == []
    [left] = [f for f in pf.check_sharing(cluster_policy(), None, nodes) if "left behind" in f["message"]]
    assert left["fix"] == "kubectl label node a100-0 nvidia.com/gpu.deploy.device-plugin=true --overwrite"
    labels.update({"nvidia.com/mig.config.state": "pending", "nvidia.com/mig.config": "all-1g.5gb"})
    [info] = pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [nfd], nodes, pods)
    assert info["severity"] == "info" and "all-1g.5gb" in info["message"]


def test_no_nfd_worker_is_a_warning():
    nodes = [t4_node("t4-0")]
    daemonsets, _nfd, pods = healthy_operator(nodes)
    [found] = pf.check_operator(cluster_policy(), NAMESPACE, daemonsets, [], nodes, pods)
    assert found["severity"] == "warning" and found["object"] == "Node Feature Discovery"


# --- sharing -------------------------------------------------------------------------------------


def test_sharing_findings_reuse_the_inventory_with_a_fix_each():
    policy = cluster_policy(config_name="time-slicing-config")
    cm = config_map(
        {
            "ts-4": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            "    - name: nvidia.com/gpu\n      replicas: 4\n"
        }
    )
    wrong_key = t4_node("t4-0", config="ts-8")
    stale = t4_time_sliced("t4-1", 4, config="ts-4")
    stale["status"]["capacity"]["nvidia.com/gpu"] = "1"
    failed = a100_node("a100-0")
    failed["metadata"]["labels"]["nvidia.com/mig.config.state"] = "failed"
    pending = a100_node("a100-1")
    pending["metadata"]["labels"]["nvidia.com/mig.config.state"] = "pending"
    findings = pf.check_sharing(policy, cm, [wrong_key, stale, failed, pending, cpu_node("cpu-0")])
    by = dict((f["object"], f) for f in findings)
    assert "set nvidia.com/device-plugin.config on t4-0" in by["Node/t4-0"]["fix"]
    assert "restart_device_plugin: true" in by["Node/t4-1"]["fixed_by"]
    assert by["Node/a100-0"]["severity"] == "error" and "gpu_mig_config" in by["Node/a100-0"]["fixed_by"]
    assert by["Node/a100-1"]["severity"] == "warning" and "drain: true" in by["Node/a100-1"]["fixed_by"]
    assert len(findings) == 4


def test_a_policy_naming_a_missing_config_map_and_labels_with_no_config_map():
    policy = cluster_policy(config_name="gone")
    findings = pf.check_sharing(policy, None, [t4_node("t4-0", config="ts-4")])
    assert [f["object"] for f in findings] == ["ClusterPolicy/cluster-policy", "Node/t4-0"]
    assert "gone" in findings[0]["message"] and "ignores the label" in findings[1]["message"]


# --- autoscaling ---------------------------------------------------------------------------------


def _labelled(obj, labels):
    obj["metadata"]["labels"].update(labels)
    return obj


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
    labelled_only = _labelled(t4_pool("gpu-t4-9")[1][0], {"machine.openshift.io/cluster-api-machineset": "gpu-t4"})
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


@pytest.mark.parametrize(
    "text, seconds",
    [("15m", 900), ("10m0s", 600), ("1h", 3600), ("600s", 600), ("1h30m", 5400), ("soon", None), ("10", None)],
)
def test_parse_duration(text, seconds):
    assert pf.parse_duration(text) == seconds


def test_platforms_are_told_apart():
    assert pf.detect_platform([t4_node("a")], [machineset()]) == pf.OPENSHIFT
    assert pf.detect_platform([t4_node("a")], [], cluster_policy(name="gpu-cluster-policy")) == pf.OPENSHIFT
    assert pf.detect_platform([_labelled(t4_node("a"), {"k8s.scaleway.com/pool-name": "gpu"})], []) == pf.SCALEWAY
    assert (
        pf.detect_platform([_labelled(t4_node("a"), {"topology.kubernetes.io/zone": "HCM03-1A"})], [])
        == "VNG Cloud VKS"
    )
    assert pf.detect_platform([t4_node("a")], []) is None


def test_scaleway_and_vks_labels():
    labelled = _labelled(t4_node("a"), {"k8s.scaleway.com/pool-name": "gpu", "k8s.scw.cloud/gpu": "true"})
    assert pf.check_autoscaling(pf.SCALEWAY, [labelled], [], [], [], []) == []
    old = _labelled(t4_node("b"), {"k8s.scaleway.com/pool-name": "gpu", "k8s.scaleway.com/gpu": "true"})
    [found] = pf.check_autoscaling(pf.SCALEWAY, [old], [], [], [], [])
    assert "before September 2025" in found["message"]
    [found] = pf.check_autoscaling(
        pf.SCALEWAY, [_labelled(t4_node("c"), {"k8s.scw.cloud/gpu": "true"})], [], [], [], []
    )
    assert "k8s.scaleway.com/pool-name" in found["message"]
    [found] = pf.check_autoscaling("VNG Cloud VKS", [t4_node("d"), cpu_node("e")], [], [], [], [])
    assert found["severity"] == "info"
    assert "vks.vngcloud.vn/accelerator" in found["message"] and found["fixed_by"].endswith(
        "gpu_autoscaling for the nodes there now"
    )


def test_another_autoscaler_gpu_label_replaces_the_platforms_own():
    # VKS's label is unconfirmed (docs/PLATFORM_FACTS.md): the label given is the one looked for, and said so.
    vks_labelled = _labelled(t4_node("a"), {"vks.vngcloud.vn/accelerator": "t4"})
    [found] = pf.check_autoscaling(pf.VKS, [vks_labelled], [], [], [], gpu_label="example.com/gpu-type")
    assert found["severity"] == "info" and "without example.com/gpu-type" in found["message"]
    assert "VNG Cloud's public autoscaler fork reads vks.vngcloud.vn/accelerator" in found["message"]
    assert "example.com/gpu-type=<gpu type>" in found["fix"]
    assert "(autoscaler_gpu_label: example.com/gpu-type)" in found["fixed_by"]
    own = _labelled(t4_node("b"), {"example.com/gpu-type": "t4"})
    assert pf.check_autoscaling(pf.VKS, [own], [], [], [], gpu_label="example.com/gpu-type") == []
    # On Scaleway the old-name remark belongs to the platform's own label only.
    old = _labelled(t4_node("c"), {"k8s.scaleway.com/pool-name": "gpu", "k8s.scaleway.com/gpu": "true"})
    [found] = pf.check_autoscaling(pf.SCALEWAY, [old], [], [], [], gpu_label="example.com/gpu-type")
    assert "without the example.com/gpu-type label:" in found["message"]
    # Ignored on OpenShift, whose MachineSets carry cluster-api/accelerator.
    assert pf.check_autoscaling(pf.OPENSHIFT, [own], [], [], [], gpu_label="example.com/gpu-type") == []
    # A node carrying the label given counts as autoscaled.
    sliced = _labelled(t4_time_sliced("t4-0", 4), {"example.com/gpu-type": "t4"})
    [found] = pf.check_autoscaling(pf.VKS, [sliced], [], [], [], gpu_label="example.com/gpu-type")
    assert "#8129" in found["message"]
    assert pf.check_autoscaling(None, [sliced], [], [], []) == []


def test_sharing_on_autoscaled_nodes_warns_about_the_autoscaler():
    sliced = _labelled(t4_time_sliced("t4-0", 4), {"cluster-api/accelerator": "tesla-t4"})
    [found] = pf.check_shared_autoscaled([sliced, t4_time_sliced("t4-1", 4)])
    assert "#8129" in found["message"] and found["object"] == "Node/t4-0"
    mixed = _labelled(h100_mig_mixed("h100-0"), {"cluster-api/accelerator": "h100"})
    [found] = pf.check_shared_autoscaled([mixed])
    assert "#8095" in found["message"] and "nvidia.com/mig-1g.10gb" in found["message"]
    in_machineset = t4_time_sliced("t4-2", 2)
    assert len(pf.check_shared_autoscaled([in_machineset], {"t4-2"})) == 1
    assert pf.check_shared_autoscaled([in_machineset]) == []


# --- quotas, ordering and fail_on ----------------------------------------------------------------


def test_namespaces_running_gpu_pods_without_a_quota_on_each_resource():
    pods = [
        pod("a", [container(limits={"nvidia.com/gpu": "1"})], namespace="ml", node_name="t4-0"),
        pod("b", [container(limits={"nvidia.com/mig-1g.10gb": "1"})], namespace="ml", node_name="h100-0"),
        pod("c", [container(limits={"nvidia.com/gpu": "1"})], namespace="done", node_name="t4-0", phase="Succeeded"),
        pod("d", [container(limits={"nvidia.com/gpu": "1"})], namespace="capped"),
        pod("e", [container()], namespace="cpu"),
    ]
    quotas = [
        {"metadata": {"name": "q", "namespace": "ml"}, "spec": {"hard": {"requests.nvidia.com/gpu": "2"}}},
        {"metadata": {"name": "q", "namespace": "capped"}, "spec": {"hard": {"requests.nvidia.com/gpu": "1"}}},
    ]
    [found] = pf.check_quotas(pods, quotas)
    assert found["object"] == "Namespace/ml" and "nvidia.com/mig-1g.10gb" in found["message"]
    assert '"requests.nvidia.com/mig-1g.10gb": <n>' in found["fix"]


def test_findings_are_ordered_by_severity_and_fail_on():
    nodes = [tainted(t4_node("t4-0"), {"key": "x", "effect": "NoSchedule"}), t4_node("t4-1", config="nope")]
    nodes[1]["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"] = "false"
    daemonsets, nfd, pods = healthy_operator(nodes)
    findings = pf.preflight(cluster_policy(), NAMESPACE, None, nodes, pods, daemonsets, [nfd, daemonset("other")])
    severities = [f["severity"] for f in findings]
    assert severities == sorted(severities, key=pf.SEVERITIES.index) and "warning" in severities
    assert pf.summarize(findings)["error"] == severities.count("error")
    assert pf.should_fail(findings, "error") and pf.should_fail(findings, "warning")
    assert not pf.should_fail(findings, "never")
    warnings_only = [f for f in findings if f["severity"] != "error"]
    assert not pf.should_fail(warnings_only, "error") and pf.should_fail(warnings_only, "warning")
    assert pf.preflight(cluster_policy(), NAMESPACE, None, nodes, pods, daemonsets, [nfd], checks=["quota"]) == []


def test_without_the_operators_namespace_the_policys_config_map_is_not_judged():
    policy = cluster_policy(config_name="time-slicing-config")
    nodes = [t4_node("t4-0")]
    assert pf.preflight(policy, None, None, nodes, [], checks=["sharing"]) == []
    [found] = pf.preflight(policy, NAMESPACE, None, nodes, [], checks=["sharing"])
    assert "time-slicing-config" in found["message"]
