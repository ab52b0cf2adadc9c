# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/node_mig_layout: a node's MIG layout GPU by GPU. ``physical_gpu_count`` is tested with gpu_mig_config's
refusal in plan/test_mig.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_mig_layout import layout_per_gpu


def test_a_layout_per_gpu_gives_each_gpu_its_gpu_layout_or_none_where_mig_is_off():
    layout = [
        {"devices": [0], "mig-enabled": True, "mig-devices": {"3g.40gb": 1, "1g.10gb": 2, "2g.20gb": 0}},
        {"devices": [1], "mig-enabled": True, "mig-devices": {}},
        {"devices": [2], "mig-enabled": False, "mig-devices": {}},
    ]
    assert layout_per_gpu(layout, 3) == {0: (("1g.10gb", 2), ("3g.40gb", 1)), 1: (), 2: None}
    assert layout_per_gpu([{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.80gb": 1}}], 2) == {
        0: (("7g.80gb", 1),),
        1: (("7g.80gb", 1),),
    }
