# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_monitoring: read the policy, plan, write through the one writer."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.monitoring import plan_monitoring
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import report_and_write
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned


def run_gpu_monitoring(module):
    kube = module.kube
    params = module.params

    def read_and_plan():
        operator = find_operator(kube, params["cluster_policy"], params["namespace"])
        return Planned(operator, plan_monitoring(operator.policy, params["dcgm_exporter"], params["service_monitor"]))

    planned = read_and_plan()
    # The policy patch is conditional on the version read.
    return report_and_write(module, planned, read_and_plan, monitoring=dict(planned.plan.after))
