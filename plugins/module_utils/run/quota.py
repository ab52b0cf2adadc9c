# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_quota: read the namespace and its ResourceQuota, plan, write through the one writer."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.quota import plan_quota
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import report_and_write
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned


def run_gpu_quota(module):
    kube = module.kube
    params = module.params
    namespace, name = params["quota_namespace"], params["name"]
    if kube.get_namespace(namespace) is None:
        raise GpuShareError("Namespace %s does not exist. Nothing was changed." % namespace)

    def read_and_plan():
        return Planned(
            None,
            plan_quota(kube.get_resource_quota(namespace, name), namespace, name, params["limits"], params["state"]),
        )

    planned = read_and_plan()
    # Another run may create the quota first (409): read again and patch it instead.
    return report_and_write(
        module, planned, read_and_plan, namespace=namespace, name=name, hard=planned.plan.after["hard"]
    )
