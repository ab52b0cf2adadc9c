# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_mig_config."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigRequest
from ansible_collections.gpushare.k8s.plugins.module_utils.run.mig_rollout import apply_mig_change
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names


def run_gpu_mig_config(module):
    """gpu_mig_config."""
    params = module.params
    kube = module.kube
    platform = find_operator(kube, params["cluster_policy"], params["namespace"])
    request = MigRequest(
        resolve_node_names(kube, params["nodes"]) or [],
        config=params["config"],
        layout=params["layout"],
        config_name=params["config_name"],
        config_map=params["config_map"],
        strategy=params["strategy"],
    )
    return apply_mig_change(
        module, kube, platform, request, params["drain"], False, params["wait"], params["wait_timeout"]
    )
