# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_mig_config: read, plan (validating every node), refuse or drain while GPU pods
run, write, wait for mig-manager, uncordon, report per node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigRequest, plan_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet
from ansible_collections.gpushare.k8s.plugins.module_utils.run.drain import GpuPodGuard
from ansible_collections.gpushare.k8s.plugins.module_utils.run.mig_rollout import (
    read_mig_config_maps,
    wait_for_mig_plan,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import new_result, record_after
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned, plan_access, write_replanning


def run_gpu_mig_config(module):
    """gpu_mig_config."""
    params = module.params
    kube = module.kube
    operator = find_operator(kube, params["cluster_policy"], params["namespace"])
    request = MigRequest(
        resolve_node_names(kube, params["nodes"]) or [],
        config=params["config"],
        layout=params["layout"],
        config_name=params["config_name"],
        config_map=params["config_map"],
        strategy=params["strategy"],
    )

    def read_and_plan(operator=None):
        return _read_and_plan(
            kube, operator or find_operator(kube, params["cluster_policy"], params["namespace"]), request
        )

    planned = read_and_plan(operator)
    plan = planned.plan
    fleet = Fleet(planned.listed.items)
    for warning in plan.warnings:
        module.ansible.warn(warning)

    guard = GpuPodGuard(
        kube,
        fleet,
        sorted(plan.node_patches),
        params["drain"],
        change="reconfigure MIG on (mig-manager fails under them)",
    )
    result = new_result(
        operator,
        plan,
        fleet,
        plan.expectations,
        mig_config=request.target_config,
        config_map=plan.config_map,
        strategy=plan.strategy,
        skipped_nodes=plan.skipped,
        **guard.fields(),
    )
    if module.check_mode:
        return result

    # A re-plan after a conflict finds this task's own labels: the nodes this plan checked keep that check.
    request.checked_nodes = frozenset(plan.layouts)

    def change():
        written = write_replanning(kube, planned, read_and_plan)
        return wait_for_mig_plan(kube, written, params["wait_timeout"]) if params["wait"] else {}

    final = guard.run(
        module, change, params["wait_timeout"], "the MIG change", params["wait"], plan_access(kube, operator, plan)
    )
    result.update(guard.fields())
    record_after(result, fleet, final)
    return result


def _read_and_plan(kube, operator, request):
    """The nodes and the mig-parted ConfigMaps read, and ``request`` planned against them (validating every node)."""
    listed = kube.list_nodes()
    config_maps = read_mig_config_maps(kube, operator, request)
    plan = plan_mig(request, operator.policy, config_maps.active, config_maps.target, listed.items, operator.namespace)
    return Planned(operator, plan, listed=listed)
