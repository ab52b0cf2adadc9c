# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_tolerations: read the policy and NFD's workers, plan, write through the one writer."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.operands import is_nfd_worker
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.tolerations import plan_tolerations
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import report_and_write
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned


def run_gpu_tolerations(module):
    kube = module.kube
    params = module.params

    def read_and_plan():
        operator = find_operator(kube, params["cluster_policy"], params["namespace"])
        nfd_workers = [ds for ds in kube.list_all_daemon_sets() if is_nfd_worker(ds)] if params["nfd"] else []
        return Planned(
            operator,
            plan_tolerations(
                operator.policy,
                nfd_workers,
                params["tolerations"],
                state=params["state"],
                keep_gpu_toleration=params["keep_gpu_toleration"],
                nfd=params["nfd"],
            ),
        )

    planned = read_and_plan()
    # The DaemonSet patch is conditional on the version read, and the operator or the DaemonSet controller may
    # change the DaemonSet in between (its status, or the operator's answer to the policy patch): read again.
    return report_and_write(
        module,
        planned,
        read_and_plan,
        tolerations=planned.plan.after["cluster_policy"]["daemonsets"]["tolerations"],
        nfd_workers=planned.plan.after.get("nfd_workers", {}),
    )
