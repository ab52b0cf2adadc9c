# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The apply arguments' parts (plan/sharing_planner/apply.py): a planned layout in mig-parted's entries, and its
name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.apply import (
    config_name_of,
    mig_parted_layout,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import WHOLE, mig_gpu


def test_a_layout_gets_one_entry_per_distinct_gpu_state_and_a_name_of_its_own():
    split = mig_gpu([("3g.40gb", 2)])
    layout = mig_parted_layout((split, WHOLE, split))
    assert layout == [
        {"devices": [0, 2], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
        {"devices": [1], "mig-enabled": False, "mig-devices": {}},
    ]
    assert config_name_of(layout) == config_name_of([dict(entry) for entry in layout])
    assert config_name_of(layout) != config_name_of(mig_parted_layout((split, split, split)))
    assert len(config_name_of(layout)) <= 63
