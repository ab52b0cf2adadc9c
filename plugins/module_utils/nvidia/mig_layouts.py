# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every MIG layout one GPU of a model can hold, by NVIDIA's rules: the search space of the sharing planner (issue 22).

A layout is a sorted tuple of (GPU-instance profile, count), counts above zero; the empty layout (MIG on, nothing
partitioned) is one of them. Compute-instance splits (``1c.7g.80gb``) are left out: they divide a GPU instance the
layout already has and change nothing the scheduler counts per GPU instance. Each layout passes
``mig_parted.check_gpu_fits`` (most instances, one media extension, compute slices, placement on the memory slices).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import check_gpu_fits

_CACHE = {}


def _holds(counts, model):
    """Whether one GPU of ``model`` holds the GPU instances ``counts`` ({profile: count}) by NVIDIA's rules."""
    try:
        check_gpu_fits(counts, model, "layout")
    except GpuShareError:
        return False
    return True


def gpu_layouts(model):
    """Every layout one GPU of ``model`` holds (a tuple of layouts, smallest first); computed once per model.

    A layout that does not fit makes every layout that contains it not fit, so the search stops adding a profile at
    the first count that does not fit."""
    if model.name in _CACHE:
        return _CACHE[model.name]
    profiles = sorted(model.profiles, key=lambda profile: (-model.facts[profile]["memory_slices"], profile))
    found = []

    def extend(index, counts):
        if index == len(profiles):
            found.append(tuple(sorted(counts.items())))
            return
        profile = profiles[index]
        extend(index + 1, counts)
        for count in range(1, model.profiles[profile] + 1):
            trial = dict(counts)
            trial[profile] = count
            if not _holds(trial, model):
                break
            extend(index + 1, trial)

    extend(0, {})
    layouts = tuple(sorted(found, key=lambda layout: (sum(n for _p, n in layout), layout)))
    _CACHE[model.name] = layouts
    return layouts
