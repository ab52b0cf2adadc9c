# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The demand (plan/sharing_planner/demand.py): a given request's resource, a size as the smallest MIG profile that
holds it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIG_GPU_MODELS
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.demand import (
    request_resource,
    smallest_profile,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.settings import given_request

MODELS = dict((model.name, model) for model in MIG_GPU_MODELS)


def test_memory_and_compute_become_the_smallest_profile_that_holds_them():
    a100 = MODELS["A100 80GB"]
    assert smallest_profile(a100, 10, 0.1) == "1g.10gb"
    assert smallest_profile(a100, 15, 0) == "1g.20gb"
    assert smallest_profile(a100, 30, 0.4) == "3g.40gb"
    assert smallest_profile(a100, 100, 0) is None
    assert request_resource(given_request(dict(memory_gib=30, compute_share=0.4)), [a100], 81920) == (
        "nvidia.com/mig-3g.40gb",
        None,
    )
    assert request_resource(given_request(dict(memory_gib=8, compute_share=0.2)), [], 15360) == ("nvidia.com/gpu", None)
    assert request_resource(given_request(dict(profile="1g.10gb+me")), [a100], 81920) == (
        "nvidia.com/mig-1g.10gb.me",
        None,
    )
