# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pool's program (plan/sharing_planner/program.py): its size follows the kinds of nodes, not their number (what it
plans is test_search's)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    RESOURCE_GPU,
    mig_resource_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIG_GPU_MODELS
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import (
    WHOLE,
    GpuKind,
    states_supply,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import PoolNode
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.program import PoolProgram

H100 = dict((model.name, model) for model in MIG_GPU_MODELS)["H100 80GB HBM3"]


def whole_h100(name):
    current = (WHOLE,) * 8
    return PoolNode(
        name=name,
        pool="pool",
        model=H100,
        current=current,
        supply=states_supply(current),
        running={},
        mig_allowed=True,
        mps_max=48,
    )


def test_identical_nodes_are_one_class_so_the_program_does_not_grow_with_them():
    demand = {mig_resource_name("1g.10gb"): 100, mig_resource_name("3g.40gb"): 50, RESOURCE_GPU: 30}
    small = PoolProgram([whole_h100("n%d" % i) for i in range(2)], demand, True, GpuKind.TIME_SLICING, 48)
    large = PoolProgram([whole_h100("n%d" % i) for i in range(1000)], demand, True, GpuKind.TIME_SLICING, 48)
    assert len(large.program.names) == len(small.program.names)
    assert len(large.groups) == len(small.groups) == 1
