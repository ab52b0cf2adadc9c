# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layout planner's search space: every layout one GPU holds, and nothing else (issue 22)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIG_GPU_MODELS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_layouts import _holds, gpu_layouts

MODELS = [model for model in MIG_GPU_MODELS if model.mig_capable]


@pytest.mark.parametrize("model", MODELS, ids=[model.name for model in MODELS])
def test_every_layout_fits_and_every_one_instance_more_that_fits_is_there_too(model):
    layouts = gpu_layouts(model)
    known = set(layouts)
    assert () in known and len(known) == len(layouts)
    for layout in layouts:
        counts = dict(layout)
        assert _holds(counts, model), layout
        for profile in model.profiles:
            bigger = dict(counts, **{profile: counts.get(profile, 0) + 1})
            if _holds(bigger, model):
                assert tuple(sorted(bigger.items())) in known, (layout, profile)


@pytest.mark.parametrize("model", MODELS, ids=[model.name for model in MODELS])
def test_every_single_profile_layout_nvidia_ships_is_in_the_space(model):
    """all-<profile> of NVIDIA's shipped config: that profile, as many as one GPU holds."""
    known = set(gpu_layouts(model))
    for profile, most in model.profiles.items():
        assert ((profile, most),) in known
        assert ((profile, most + 1),) not in known


def test_the_a100_40gb_space_is_small_enough_to_search_exhaustively():
    [a100] = [model for model in MODELS if model.name == "A100 40GB"]
    layouts = gpu_layouts(a100)
    assert 20 < len(layouts) < 2000
    assert (("1g.5gb", 7),) in layouts and (("3g.20gb", 1), ("4g.20gb", 1)) in layouts
