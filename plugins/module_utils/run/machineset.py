# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_machineset: read the MachineSet, the machine API's and autoscaler's objects, the nodes, the
workload pods and the sharing configuration; plan the configuration (with no node to label) and the MachineSet's
writes into one plan; write it through the one writer (the configuration first); wait for the MachineSet's replicas,
for its new nodes to join in the planned sharing and for the removed ones to go."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import (
    wait_for_custom_objects,
    wait_for_node_expectations,
    wait_for_nodes,
    wait_for_nodes_gone,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    CUSTOM_MIG_CONFIG_MAP,
    DEFAULT_DEVICE_PLUGIN_CONFIG_MAP,
    device_plugin_config_of,
    mig_strategy_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import MIG_STRATEGY_MIXED
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import workload_pods_selector
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.inventory import node_summary
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.machineset import (
    DELETE_MACHINE_ANNOTATION,
    MODE_MIG,
    MODE_WHOLE,
    MachineSetRequest,
    new_node_sharing,
    plan_machineset,
    sharing_config,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigRequest, plan_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    MACHINE,
    MACHINESET,
    machineset_node_names,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import SharingRequest, plan_profile
from ansible_collections.gpushare.k8s.plugins.module_utils.run.machine_api import read_openshift_autoscaling
from ansible_collections.gpushare.k8s.plugins.module_utils.run.mig_rollout import read_mig_config_maps
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import plan_result
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned, after_writes, write_replanning


def run_gpu_machineset(module):
    """gpu_machineset."""
    params, kube = module.params, module.kube
    request = MachineSetRequest(
        params["machine_api_namespace"], params["name"], params["replicas"], new_node_sharing(params["sharing"])
    )
    latest = {}

    def read_and_plan():
        latest["read"] = read = _read_and_plan(kube, params, request)
        return read.planned

    planned = read_and_plan()
    change = latest["read"].machineset
    for warning in planned.plan.warnings:
        module.ansible.warn(warning)
    result = plan_result(
        planned, machineset="%s/%s" % (request.namespace, request.name), new_nodes={}, **_change_fields(change)
    )
    if module.check_mode or not planned.plan.changed:
        return result
    written = write_replanning(kube, planned, read_and_plan)
    # A 409 made the writer read and plan again: the change written is the last plan's.
    result.update(changed=True, **_change_fields(latest["read"].machineset))
    if params["wait"]:
        try:
            result["new_nodes"] = _wait(kube, latest["read"], params["wait_timeout"])
        except GpuShareError as exc:
            raise after_writes(exc, written, "the MachineSet %s/%s" % (request.namespace, request.name))
    return result


def _change_fields(change):
    """The result's fields of a MachineSetChange."""
    return dict(
        replicas=dict(before=change.replicas_before, after=change.replicas_after), removed_machines=change.removed
    )


# One read and plan: the ``Planned`` writes, what they do to the MachineSet (plan/machineset.MachineSetChange) and
# the nodes the MachineSet had when read.
_ReadAndPlanned = namedtuple("_ReadAndPlanned", "planned machineset nodes_before")


def _read_and_plan(kube, params, request):
    autoscaling = read_openshift_autoscaling(kube)
    machineset = _find_machineset(autoscaling["machinesets"], request)
    sharing = request.sharing
    operator = None
    if sharing is not None and sharing.mode != MODE_WHOLE:
        operator = find_operator(kube, params["cluster_policy"], params["namespace"])
    listed = kube.list_nodes()
    pods = kube.list_pods(field_selector=workload_pods_selector(operator.namespace if operator else None))
    plan = _configuration_plan(kube, operator, sharing, listed.items)
    change = plan_machineset(request, plan, machineset, autoscaling, listed.items, pods, int(time.time()))
    nodes_before = set(machineset_node_names(autoscaling["machines"]).get((request.namespace, request.name), []))
    return _ReadAndPlanned(Planned(operator, plan, listed=listed), change, nodes_before)


def _find_machineset(machinesets, request):
    for machineset in machinesets:
        meta = machineset.get("metadata") or {}
        if (meta.get("namespace"), meta.get("name")) == (request.namespace, request.name):
            return machineset
    others = sorted("%s/%s" % (m["metadata"].get("namespace"), m["metadata"].get("name")) for m in machinesets)
    raise GpuShareError(
        "MachineSet %s/%s not found; the cluster's MachineSets are: %s"
        % (request.namespace, request.name, ", ".join(others) or "none (is this OpenShift?)")
    )


def _configuration_plan(kube, operator, sharing, nodes):
    """The writes of the configuration the new nodes boot into, with no node labelled: the mig-parted layout (and the
    mixed strategy), or the device-plugin profile; nothing for whole GPUs or when no sharing is given."""
    if sharing is None or sharing.mode == MODE_WHOLE:
        return ObjectWrites()
    if sharing.mode == MODE_MIG:
        request = MigRequest(
            [],
            layout=sharing.layout,
            config_name=sharing.config_name,
            config_map=CUSTOM_MIG_CONFIG_MAP,
            strategy=MIG_STRATEGY_MIXED,
            for_new_nodes=True,
        )
        config_maps = read_mig_config_maps(kube, operator, request)
        return plan_mig(request, operator.policy, config_maps.active, config_maps.target, nodes, operator.namespace)
    config_map_name = device_plugin_config_of(operator.policy)[0] or DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    config = sharing_config(sharing, mig_strategy_of(operator.policy))
    request = SharingRequest("present", sharing.config_key, config_map_name, config=config, node_names=[])
    config_map = kube.get_config_map(namespace=operator.namespace, name=config_map_name)
    return plan_profile(request, operator.namespace, operator.policy, config_map, nodes)


def _machineset_ready(wanted):
    def problem(machineset):
        meta, status = machineset["metadata"], machineset.get("status") or {}
        if status.get("observedGeneration", 0) < meta.get("generation", 0):
            return "its controller has not seen replicas %d yet" % wanted
        if status.get("replicas") != wanted or status.get("readyReplicas", 0) != wanted:
            return "%s of %d replicas, %s ready" % (status.get("replicas", 0), wanted, status.get("readyReplicas", 0))
        return None

    return problem


def _refuse_other_machines_removed(machines, namespace, removed):
    """The MachineSet deletes the Machines marked for deletion first, but its controller reads them from a cache: if
    it acted on the new replicas before it saw a mark, it deleted another Machine (the cluster autoscaler's
    scale-down shares this race, docs/PLATFORM_FACTS.md). Say so at once rather than wait for nodes that stay."""
    kept = sorted(
        machine["metadata"]["name"]
        for machine in machines
        if machine["metadata"].get("namespace") == namespace
        and machine["metadata"]["name"] in removed
        and not machine["metadata"].get("deletionTimestamp")
    )
    if kept:
        raise GpuShareError(
            "The MachineSet reached its replicas without deleting Machine(s) %s, marked %s: its controller acted "
            "before it saw the mark and deleted other Machines. The marked ones stay marked and go first at the next "
            "scale-in; check which nodes went (kubectl get machines)" % (", ".join(kept), DELETE_MACHINE_ANNOTATION)
        )


def _wait(kube, read, timeout):
    """Wait for the nodes the configuration change reaches, the MachineSet's replicas, its new nodes in the planned
    sharing and the removed nodes gone (``read``: the last _ReadAndPlanned written); returns {new node: its
    summary}."""
    deadline = time.monotonic() + timeout
    plan, change = read.planned.plan, read.machineset

    def left():
        return max(1, int(deadline - time.monotonic()))

    if plan.expectations:
        wait_for_node_expectations(kube, plan.expectations, left(), "the nodes already on the changed profile")
    if change.replicas_before == change.replicas_after:
        return {}
    meta = change.machineset["metadata"]
    what = "MachineSet %s/%s to have %d ready replicas" % (meta["namespace"], meta["name"], change.replicas_after)
    wait_for_custom_objects(
        kube, MACHINESET, meta["namespace"], {meta["name"]: _machineset_ready(change.replicas_after)}, left(), what
    )
    machines = kube.list_custom_objects(*MACHINE)
    if change.removed:
        _refuse_other_machines_removed(machines, meta["namespace"], change.removed)
        gone = [node for node in change.removed.values() if node]
        wait_for_nodes_gone(kube, gone, left(), "the nodes of the removed Machines to go")
        return {}
    now = set(machineset_node_names(machines).get((meta["namespace"], meta["name"]), []))
    joined = sorted(now - read.nodes_before)
    if change.expectation is None:
        return dict((name, {}) for name in joined)
    final = wait_for_nodes(
        kube,
        dict((name, change.expectation.problem) for name in joined),
        left(),
        "the new nodes of MachineSet %s/%s to %s" % (meta["namespace"], meta["name"], "boot into the planned sharing"),
    )
    return dict((name, node_summary(node)) for name, node in final.items())
