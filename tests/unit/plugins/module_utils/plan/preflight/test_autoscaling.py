# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/autoscaling: sharing on nodes an autoscaler scales."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import h100_mig_mixed, t4_time_sliced
from preflight_objects import with_labels

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_sharing_on_autoscaled_nodes_warns_about_the_autoscaler():
    sliced = with_labels(t4_time_sliced("t4-0", 4), {"cluster-api/accelerator": "tesla-t4"})
    [found] = pf.check_shared_autoscaled([sliced, t4_time_sliced("t4-1", 4)])
    # cluster-autoscaler's GetNodeGpuTarget counts allocatable nvidia.com/gpu: 4 for one T4 sliced 4 ways.
    assert found["object"] == "Node/t4-0" and "#3427" in found["message"]
    assert "counts its 4 allocatable nvidia.com/gpu against the GPU limit of its type, not its 1 physical" in (
        found["message"]
    )
    assert "allocatable nvidia.com/gpu (4 for each node like this one)" in found["fix"]
    renamed = with_labels(t4_time_sliced("t4-3", 4), {"cluster-api/accelerator": "tesla-t4"})
    renamed["status"]["allocatable"] = renamed["status"]["capacity"] = {"nvidia.com/gpu.shared": "4"}
    [found] = pf.check_shared_autoscaled([renamed])
    assert "#8095" in found["message"]  # renamed: only the not-ready warning, nothing counts against the limit
    mixed = with_labels(h100_mig_mixed("h100-0"), {"cluster-api/accelerator": "h100"})
    [found] = pf.check_shared_autoscaled([mixed])
    assert "#8095" in found["message"] and "nvidia.com/mig-1g.10gb" in found["message"]
    in_machineset = t4_time_sliced("t4-2", 2)
    assert len(pf.check_shared_autoscaled([in_machineset], {"t4-2"})) == 1
    assert pf.check_shared_autoscaled([in_machineset]) == []
