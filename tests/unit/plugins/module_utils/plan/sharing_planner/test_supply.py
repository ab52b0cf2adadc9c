# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The supply (plan/sharing_planner/supply.py): each GPU's current state from a node's labels and MIG config."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import h100_mig_mixed, t4_node, t4_time_sliced

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import (
    WHOLE,
    GpuKind,
    mig_gpu,
    shared_gpu,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.supply import current_states


def test_current_states_are_read_from_the_labels_and_the_mig_config_the_node_names():
    assert current_states(NodeGpuState.from_node(t4_node("t4", count=2)), {}) == (WHOLE, WHOLE)
    assert current_states(NodeGpuState.from_node(t4_time_sliced("ts", 4)), {}) == (shared_gpu(GpuKind.TIME_SLICING, 4),)
    balanced = mig_gpu([("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)])
    assert current_states(NodeGpuState.from_node(h100_mig_mixed("h100")), {}) == (balanced, balanced)
