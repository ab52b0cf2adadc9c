# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run/writer.py's safe order and the rights it asks, read from ``plan_steps`` without making a call (a step's call
is a closure over the client, never run here), and the message of a wait that failed after every write."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import OperatorInstall
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import (
    Planned,
    Written,
    after_writes,
    plan_access,
    plan_steps,
)

OPERATOR = OperatorInstall({"metadata": {"name": "cluster-policy"}}, "gpu-operator", None)


def every_kind_of_write():
    plan = ObjectWrites("profiles")
    plan.config_map_creates["made"] = {"k": "v"}
    plan.config_map_patches["profiles"] = {"data": {"t4": "..."}}
    plan.config_map_deletes.append("old")
    plan.policy_patch = {"spec": {}}
    plan.daemon_set_patches[("node-feature-discovery", "nfd-worker")] = {"spec": {}}
    plan.object_writes[("Secret", "gpu-operator", "licensing")] = ("create", {})
    plan.object_writes[("Secret", "gpu-operator", "stale")] = ("delete", None)
    plan.object_writes[("MachineAutoscaler", "openshift-machine-api", "gpu")] = ("create", {})
    plan.object_writes[("MachineSet", "openshift-machine-api", "gpu")] = ("patch", {})
    plan.object_writes[("ClusterAutoscaler", None, "default")] = ("patch", {})
    plan.object_writes[("ResourceQuota", "team", "gpus")] = ("patch", {})
    plan.node_patches["n1"] = {"metadata": {"labels": {}}}
    plan.restart = True
    return plan


def test_configmaps_and_secrets_first_the_policy_then_objects_and_nodes_deletes_last_restart_at_the_end():
    assert [step.what for step in plan_steps(None, OPERATOR, every_kind_of_write())] == [
        "create ConfigMap gpu-operator/made",
        "patch ConfigMap gpu-operator/profiles",
        "create Secret gpu-operator/licensing",
        "patch ClusterPolicy cluster-policy",
        "patch DaemonSet node-feature-discovery/nfd-worker",
        "patch ResourceQuota team/gpus",
        "patch MachineSet openshift-machine-api/gpu",  # before the autoscalers that act on it
        "create MachineAutoscaler openshift-machine-api/gpu",
        "patch ClusterAutoscaler default",
        "label 1 node(s)",
        "delete ConfigMap gpu-operator/old",
        "delete Secret gpu-operator/stale",
        "restart the device plugin",
    ]


def test_each_write_asks_for_its_own_verb_group_resource_and_namespace():
    accesses = plan_access(None, OPERATOR, every_kind_of_write())
    assert ("create", "", "configmaps", "gpu-operator") in accesses
    assert ("patch", "nvidia.com", "clusterpolicies", None) in accesses
    assert ("patch", "apps", "daemonsets", "node-feature-discovery") in accesses
    assert ("patch", "", "nodes", None) in accesses
    assert ("delete", "", "secrets", "gpu-operator") in accesses
    assert ("patch", "autoscaling.openshift.io", "clusterautoscalers", None) in accesses
    assert ("create", "autoscaling.openshift.io", "machineautoscalers", "openshift-machine-api") in accesses
    assert ("patch", "apps", "daemonsets", "gpu-operator") == accesses[-1]  # the restart


def test_a_plan_of_no_operator_object_needs_no_operator():
    plan = ObjectWrites()
    plan.object_writes[("ResourceQuota", "team", "gpus")] = ("create", {})
    assert plan_access(None, None, plan) == [("create", "", "resourcequotas", "team")]
    assert plan_access(None, None, ObjectWrites()) == []


def test_a_wait_that_fails_after_the_writes_says_all_were_made_and_keeps_the_details():
    planned = Planned(OPERATOR, ObjectWrites())
    written = Written(planned, ["patch ConfigMap gpu-operator/profiles", "label 2 node(s)"], {}, {}, 0)
    exc = GpuShareError("Timed out.", status=None, reason="Timeout", details={"cordoned": ["n1"]})
    error = after_writes(exc, written, "the profile")
    assert error.msg.startswith("Timed out. Every write was made before waiting for the profile (patch ConfigMap")
    assert error.details == {"cordoned": ["n1"]} and error.reason == "Timeout"
    assert "nothing was left to write" in after_writes(exc, Written(planned, [], {}, {}, 0), "the profile").msg
