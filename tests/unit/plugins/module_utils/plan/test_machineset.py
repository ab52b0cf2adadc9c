# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_machineset's planner (plan/machineset.py) and the records it keeps (plan/capacity_records.py), without a
cluster: what it writes to a MachineSet and its Machines, and what it refuses before writing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from k8s_objects import (
    a100_node,
    cluster_autoscaler,
    container,
    machine,
    machine_autoscaler,
    machineset,
    pod,
    t4_pool,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.capacity_records import (
    added_nodes,
    nodes_added_within_the_hour,
    parse_time,
    recent_scale_ups,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.machineset import (
    DELETE_MACHINE_ANNOTATION,
    MachineSetRequest,
    new_node_sharing,
    plan_machineset,
    sharing_config,
    template_labels,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites

NAMESPACE = "openshift-machine-api"
NOW = parse_time("2026-11-29T08:00:00Z")
TS2 = dict(mode="time-slicing", config_key="t4-ts-2", replicas=2, rename_by_default=False)


def t4_set(replicas=2, annotations=None):
    body = machineset(
        "gpu-t4",
        labels={"cluster-api/accelerator": "tesla-t4"},
        annotations=dict({"machine.openshift.io/GPU": "1"}, **(annotations or {})),
    )
    body["spec"]["replicas"] = replicas
    return body


def autoscaling(machines, machine_autoscalers=(), cluster_autoscalers=()):
    return dict(
        machinesets=[],
        machines=list(machines),
        machine_autoscalers=list(machine_autoscalers),
        cluster_autoscalers=list(cluster_autoscalers),
    )


def labelled_t4_pool(*names):
    """A T4 MachineSet's Machines and nodes, the nodes carrying its template's accelerator label."""
    machines, nodes = t4_pool(*names)
    for body in nodes:
        body["metadata"]["labels"]["cluster-api/accelerator"] = "tesla-t4"
    return machines, nodes


def plan(replicas=None, sharing=None, machineset_body=None, objects=None, nodes=None, pods=(), now=NOW):
    machines, pool_nodes = labelled_t4_pool("gpu-t4-0", "gpu-t4-1")
    writes = ObjectWrites()
    change = plan_machineset(
        MachineSetRequest(NAMESPACE, "gpu-t4", replicas, new_node_sharing(sharing)),
        writes,
        machineset_body or t4_set(),
        objects or autoscaling(machines),
        pool_nodes if nodes is None else nodes,
        list(pods),
        now,
    )
    return change, writes


def machineset_patch(writes):
    action, patch = writes.object_writes[("MachineSet", NAMESPACE, "gpu-t4")]
    assert action == "patch" and patch["metadata"]["resourceVersion"]  # written on the version read
    return patch


def gpu_pod(name, node_name):
    return pod(name, [container(limits={"nvidia.com/gpu": "1"})], node_name=node_name)


def test_each_mode_takes_its_own_fields_and_names_its_labels():
    with pytest.raises(GpuShareError, match="sharing.mode=mig needs sharing.layout and sharing.config_name"):
        new_node_sharing(dict(mode="mig"))
    with pytest.raises(GpuShareError, match="sharing.mode=whole does not take sharing.config_key"):
        new_node_sharing(dict(mode="whole", config_key="x"))
    assert template_labels(new_node_sharing(TS2)) == {
        "nvidia.com/mig.config": None,
        "nvidia.com/device-plugin.config": "t4-ts-2",
    }
    layout = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    assert template_labels(new_node_sharing(dict(mode="mig", config_name="h", layout=layout))) == {
        "nvidia.com/mig.config": "h",
        "nvidia.com/device-plugin.config": None,
    }
    assert template_labels(new_node_sharing(dict(mode="whole"))) == {
        "nvidia.com/mig.config": None,
        "nvidia.com/device-plugin.config": None,
    }


def test_a_scale_up_sets_the_template_and_the_replicas_and_records_what_it_added():
    old = {"gpushare.k8s/scale-ups": json.dumps([{"at": "2026-11-29T06:00:00Z", "nodes": 3}])}
    change, writes = plan(replicas=3, sharing=TS2, machineset_body=t4_set(annotations=old))
    patch = machineset_patch(writes)
    assert patch["spec"]["replicas"] == 3
    assert patch["spec"]["template"]["spec"]["metadata"]["labels"] == {"nvidia.com/device-plugin.config": "t4-ts-2"}
    annotations = patch["metadata"]["annotations"]
    assert annotations["gpushare.k8s/added-nodes"] == "1"
    # The entry of two hours ago is dropped; this one is kept for the hourly cap.
    assert json.loads(annotations["gpushare.k8s/scale-ups"]) == [{"at": "2026-11-29T08:00:00Z", "nodes": 1}]
    assert (change.replicas_before, change.replicas_after, change.removed) == (2, 3, {})
    assert change.expectation.describe() == "time-slicing nvidia.com/gpu x2"
    assert writes.after["machineset"]["labels"] == {"nvidia.com/device-plugin.config": "t4-ts-2"}


def test_the_same_template_and_replicas_write_nothing():
    body = t4_set()
    body["spec"]["template"]["spec"]["metadata"]["labels"]["nvidia.com/device-plugin.config"] = "t4-ts-2"
    _change, writes = plan(replicas=2, sharing=TS2, machineset_body=body)
    assert not writes.changed


def test_the_replicas_a_machineautoscaler_owns_are_refused_naming_it_and_the_template_alone_is_planned():
    machines, _nodes = t4_pool("gpu-t4-0", "gpu-t4-1")
    owned = autoscaling(machines, machine_autoscalers=[machine_autoscaler("gpu-t4")])
    with pytest.raises(GpuShareError, match="MachineAutoscaler openshift-machine-api/gpu-t4 targets it, minReplicas 1"):
        plan(replicas=3, objects=owned)
    _change, writes = plan(sharing=TS2, objects=owned)
    assert "replicas" not in machineset_patch(writes)["spec"]


def test_a_scale_up_past_the_gpu_limit_counts_time_sliced_replicas_as_the_autoscaler_does():
    """The limit of 4 tesla-t4 GPUs: the two T4s count 1 each; a new T4 time-sliced 2 ways counts 2. One fits, two do
    not; two whole ones would."""
    machines, _nodes = t4_pool("gpu-t4-0", "gpu-t4-1")
    limited = autoscaling(machines, cluster_autoscalers=[cluster_autoscaler()])
    plan(replicas=3, sharing=TS2, objects=limited)
    with pytest.raises(GpuShareError, match=r"exceed the ClusterAutoscaler's gpus\[tesla-t4\] \(at most 1 more fit"):
        plan(replicas=4, sharing=TS2, objects=limited)
    plan(replicas=4, sharing=dict(mode="whole"), objects=limited)


def test_a_scale_in_marks_idle_machines_first_those_marked_then_those_without_a_node_then_the_newest():
    machines, nodes = t4_pool("gpu-t4-0", "gpu-t4-1", "gpu-t4-2")
    for number, body in enumerate(machines):
        body["metadata"]["creationTimestamp"] = "2026-11-29T07:0%d:00Z" % number
    machines.append(machine("gpu-t4-m3", "gpu-t4"))  # still provisioning: no node
    busy = [gpu_pod("trainer", "gpu-t4-2")]
    change, writes = plan(replicas=2, machineset_body=t4_set(4), objects=autoscaling(machines), nodes=nodes, pods=busy)
    # The one without a node, then the newest idle (gpu-t4-1): never gpu-t4-2, which runs a GPU pod.
    assert change.removed == {"gpu-t4-m3": None, "gpu-t4-m1": "gpu-t4-1"}
    marked = sorted(key[2] for key in writes.object_writes if key[0] == "Machine")
    assert marked == ["gpu-t4-m1", "gpu-t4-m3"]
    action, patch = writes.object_writes[("Machine", NAMESPACE, "gpu-t4-m1")]
    assert patch["metadata"]["annotations"] == {DELETE_MACHINE_ANNOTATION: "true"}
    assert machineset_patch(writes)["spec"]["replicas"] == 2

    machines[0]["metadata"]["annotations"] = {DELETE_MACHINE_ANNOTATION: "true"}
    change, writes = plan(replicas=3, machineset_body=t4_set(4), objects=autoscaling(machines), nodes=nodes, pods=busy)
    assert change.removed == {"gpu-t4-m0": "gpu-t4-0"}
    assert not [key for key in writes.object_writes if key[0] == "Machine"]  # marked already


def test_a_scale_in_never_removes_a_node_with_gpu_pods_and_says_which_pods_hold_them():
    machines, nodes = t4_pool("gpu-t4-0", "gpu-t4-1")
    pods = [gpu_pod("a", "gpu-t4-0"), gpu_pod("b", "gpu-t4-1")]
    with pytest.raises(GpuShareError) as refused:
        plan(replicas=1, objects=autoscaling(machines), nodes=nodes, pods=pods)
    assert "only 0 of its nodes run no GPU pod" in refused.value.msg and "gpu-t4-0: ml/a" in refused.value.msg
    machines[0]["metadata"]["annotations"] = {DELETE_MACHINE_ANNOTATION: "true"}
    with pytest.raises(GpuShareError, match="gpu-t4-m0 carry machine.openshift.io/delete-machine"):
        plan(replicas=1, objects=autoscaling(machines), nodes=nodes, pods=pods[:1])


def test_a_mig_layout_is_checked_on_the_new_nodes_model_before_anything_is_written():
    """A MachineSet of two-GPU A100 machines (one made): 2 x 3g.20gb fits a GPU, 3 does not."""
    a100 = a100_node("a100-0")
    a100["metadata"].setdefault("annotations", {})["machine.openshift.io/machine"] = NAMESPACE + "/gpu-t4-m0"
    objects = autoscaling([machine("gpu-t4-m0", "gpu-t4", "a100-0")])
    a100_set = t4_set(replicas=1, annotations={"machine.openshift.io/GPU": "2"})

    def plan_layout(layout, objects=objects, nodes=(a100,)):
        sharing = dict(mode="mig", config_name="a", layout=layout)
        return plan(replicas=2, sharing=sharing, machineset_body=a100_set, objects=objects, nodes=list(nodes))

    fits = [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]
    change, _writes = plan_layout(fits)
    assert change.expectation.devices == {"3g.20gb": 4}
    with pytest.raises(GpuShareError, match="3g.20gb"):
        plan_layout([{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 3}}])
    with pytest.raises(GpuShareError, match="cannot tell the GPU model of its new nodes"):
        plan_layout(fits, objects=autoscaling([]), nodes=())
    with pytest.raises(GpuShareError, match="do not support MIG"):
        plan(replicas=3, sharing=dict(mode="mig", config_name="a", layout=fits))


def test_a_machineset_without_gpus_is_refused():
    with pytest.raises(GpuShareError, match="is not a GPU MachineSet"):
        plan(replicas=3, machineset_body=machineset("gpu-t4"), objects=autoscaling([]), nodes=[])


def test_the_records_read_back_what_was_written_and_count_the_last_hour_only():
    body = t4_set(
        annotations={
            "gpushare.k8s/added-nodes": "2",
            "gpushare.k8s/scale-ups": json.dumps(
                [
                    {"at": "2026-11-29T06:59:00Z", "nodes": 5},  # more than an hour before NOW
                    {"at": "2026-11-29T07:30:00Z", "nodes": 1},
                    {"at": "2026-11-29T08:00:30Z", "nodes": 1},  # another machine's clock, a little ahead
                ]
            ),
        }
    )
    assert added_nodes(body) == 2 and len(recent_scale_ups(body, NOW)) == 2
    assert nodes_added_within_the_hour([body, t4_set()], NOW) == 2
    unreadable = t4_set(annotations={"gpushare.k8s/scale-ups": "not json", "gpushare.k8s/added-nodes": "many"})
    assert recent_scale_ups(unreadable, NOW) == [] and added_nodes(unreadable) == 0


def test_mps_for_new_nodes_is_refused_under_the_mixed_strategy_as_the_device_plugin_refuses_it():
    mps = new_node_sharing(dict(mode="mps", config_key="mps-2", replicas=2))
    assert sharing_config(mps, "none")["sharing"]["mps"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}]
    with pytest.raises(GpuShareError, match="MPS is not supported with the mixed MIG strategy"):
        sharing_config(mps, "mixed")
