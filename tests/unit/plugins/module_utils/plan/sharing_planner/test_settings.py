# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_sharing_plan's settings (plan/sharing_planner/settings.py): read once from the module's parameters, with
args.py's defaults, and refused before anything is read when they cannot be planned."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.args import SHARING_PLAN_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.settings import (
    DEFAULT_MAX_REPLICAS,
    DEFAULT_METHOD,
    DEFAULT_TIME_LIMIT,
    GivenRequest,
    plan_settings,
)


@pytest.mark.parametrize(
    "request_, problem",
    [
        (dict(count=1), "exactly one of resource, profile, or memory_gib/compute_share"),
        (dict(resource="nvidia.com/gpu", profile="1g.10gb", count=1), "exactly one of"),
        (dict(resource="amd.com/gpu", count=1), "not one the planner places"),
        (dict(profile="big", count=1), "not a MIG profile name"),
        (dict(profile="1g.10gb", count=0), "count must be 1 or more"),
        (dict(memory_gib=10, compute_share=1.5, count=1), "compute_share is a fraction"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_read(request_, problem):
    with pytest.raises(GpuShareError, match=problem):
        plan_settings(dict(requests=[request_]))


@pytest.mark.parametrize(
    "options, problem",
    [
        (dict(max_replicas=1), "max_replicas is 1; give 2 "),
        (dict(max_replicas=70091), "max_replicas is 70091; give 2 .* to 70090 .*4 MiB"),
        (dict(time_limit=0), "time_limit is 0; give the seconds"),
    ],
)
def test_bad_limits_are_refused_before_anything_is_read(options, problem):
    with pytest.raises(GpuShareError, match=problem):
        plan_settings(options)
    plan_settings(dict(max_replicas=2, time_limit=0.1))
    plan_settings(dict(max_replicas=70090))


def test_the_modules_defaults_are_the_planners():
    assert SHARING_PLAN_ARG_SPEC["max_replicas"]["default"] == DEFAULT_MAX_REPLICAS == 48
    assert SHARING_PLAN_ARG_SPEC["time_limit"]["default"] == DEFAULT_TIME_LIMIT == 10.0
    assert SHARING_PLAN_ARG_SPEC["sharing_method"]["default"] == DEFAULT_METHOD
    defaults = plan_settings({})
    assert defaults.read_pods is SHARING_PLAN_ARG_SPEC["read_pods"]["default"] is True
    assert defaults.allow_moves is SHARING_PLAN_ARG_SPEC["allow_moves"]["default"] is False
    assert (defaults.max_replicas, defaults.time_limit, defaults.method) == (48, 10.0, DEFAULT_METHOD)


def test_given_requests_are_read_once_with_every_field():
    settings = plan_settings(dict(requests=[dict(profile="1g.10gb", count=2, pool="a")], pool_label=""))
    assert settings.requests == (GivenRequest(None, "1g.10gb", None, None, 2, "a"),)
    assert settings.pool_label is None


@pytest.mark.parametrize(
    "params, problem",
    [
        (dict(node_pools=[dict(pool="gpu", size=1, gpus=1)]), "node_pools are reported on only with capacity: true"),
        (dict(capacity=True, node_pools=[dict(pool="gpu", size=-1, gpus=1)]), r"node_pools\[1\]: size and min_size"),
        (dict(capacity=True, node_pools=[dict(pool="gpu", size=1, gpus=0)]), r"node_pools\[1\]: gpus is the GPUs"),
        (
            dict(capacity=True, node_pools=[dict(pool="gpu", size=1, gpus=1, min_size=3, max_size=2)]),
            r"node_pools\[1\]: max_size is below min_size",
        ),
        (
            dict(capacity=True, node_pools=[dict(pool="gpu", size=1, gpus=1), dict(pool="gpu", size=2, gpus=1)]),
            r"node_pools\[2\]: gpu is given twice",
        ),
    ],
)
def test_bad_node_pools_are_refused_before_anything_is_read(params, problem):
    with pytest.raises(GpuShareError, match=problem):
        plan_settings(params)


def test_capacity_is_off_by_default_and_node_pools_are_kept_as_given():
    assert plan_settings({}).capacity is False and plan_settings({}).node_pools == ()
    given = dict(pool="gpu", size=1, gpus=8, max_size=4)
    settings = plan_settings(dict(capacity=True, node_pools=[given]))
    assert settings.capacity is True and settings.node_pools == (given,)


@pytest.mark.parametrize(
    "params, problem",
    [
        (dict(capacity=True, max_new_nodes=-1), "max_new_nodes is -1; give 0"),
        (dict(max_new_nodes=2), "max_new_nodes and node_costs need capacity: true"),
        (dict(node_costs={"gpu-h100": 2}), "max_new_nodes and node_costs need capacity: true"),
        (dict(capacity=True, node_costs={"gpu-h100": -1}), "node_costs: gpu-h100's cost is -1"),
        (dict(capacity=True, node_costs={"gpu-h100": "cheap"}), "node_costs: gpu-h100's cost is 'cheap'"),
    ],
)
def test_bad_growth_settings_are_refused_before_anything_is_read(params, problem):
    with pytest.raises(GpuShareError, match=problem):
        plan_settings(params)


def test_no_node_is_added_by_default():
    assert plan_settings({}).max_new_nodes == 0 and plan_settings({}).node_costs == {}
