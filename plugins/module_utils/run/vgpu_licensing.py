# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_vgpu_licensing: read the policy and the licence object, plan, write through the one
writer. Nothing it returns or raises carries the token."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.vgpu_licensing import SECRET, plan_vgpu_licensing
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import report_and_write
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned


def run_gpu_vgpu_licensing(module):
    kube = module.kube
    params = module.params
    read = kube.get_secret if params["storage"] == SECRET else kube.get_config_map

    def read_and_plan():
        operator = find_operator(kube, params["cluster_policy"], params["namespace"])
        existing = read(namespace=operator.namespace, name=params["name"])
        return Planned(operator, plan_vgpu_licensing(operator.policy, operator.namespace, existing, params))

    planned = read_and_plan()
    # The policy patch is conditional on the version read.
    return report_and_write(module, planned, read_and_plan, licensing_config=planned.plan.after["licensingConfig"])
