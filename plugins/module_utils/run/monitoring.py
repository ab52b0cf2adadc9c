# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_monitoring: read the policy, plan, write through the one writer."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.monitoring import plan_monitoring
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import write_replanning


def run_gpu_monitoring(module):
    kube = module.kube
    params = module.params

    def read_and_plan():
        operator = find_operator(kube, params["cluster_policy"], params["namespace"])
        return operator, plan_monitoring(operator.policy, params["dcgm_exporter"], params["service_monitor"])

    operator, plan = read_and_plan()
    for warning in plan.warnings:
        module.ansible.warn(warning)
    result = dict(
        changed=plan.changed,
        cluster_policy=operator.policy_name,
        namespace=operator.namespace,
        monitoring=dict(plan.after),
        diff=dict(before=plan.before, after=plan.after),
    )
    if plan.changed and not module.check_mode:
        write_replanning(kube, operator, plan, read_and_plan)  # the policy patch is conditional on the version read
    return result
