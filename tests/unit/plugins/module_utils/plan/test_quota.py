# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/quota: gpu_quota's ResourceQuota writes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import merge_patch

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.quota import plan_quota
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import created_record

KEY = ("ResourceQuota", "ml", "gpu-quota")


def quota(hard, created=False):
    metadata = {"name": "gpu-quota", "namespace": "ml"}
    if created:
        metadata["annotations"] = created_record()
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": metadata, "spec": {"hard": hard}}


def test_created_with_requests_keys_then_unchanged():
    plan = plan_quota(None, "ml", "gpu-quota", {"nvidia.com/gpu": 2, "requests.nvidia.com/mig-1g.10gb": 4})
    action, body = plan.object_writes[KEY]
    assert action == "create"
    assert body["spec"]["hard"] == {"requests.nvidia.com/gpu": "2", "requests.nvidia.com/mig-1g.10gb": "4"}
    assert not plan_quota(quota(body["spec"]["hard"]), "ml", "gpu-quota", {"nvidia.com/gpu": "2"}).changed


def test_only_the_keys_given_are_patched():
    existing = quota({"requests.nvidia.com/gpu": "2", "pods": "10"})
    plan = plan_quota(existing, "ml", "gpu-quota", {"nvidia.com/gpu.shared": 8})
    action, patch = plan.object_writes[KEY]
    assert action == "patch"
    assert merge_patch(existing, patch)["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "2",
        "requests.nvidia.com/gpu.shared": "8",
        "pods": "10",
    }
    assert plan.before == {"hard": {"requests.nvidia.com/gpu.shared": None}}


def test_absent_removes_the_keys_and_deletes_what_it_created_once_empty():
    existing = quota({"requests.nvidia.com/gpu": "2", "pods": "10"}, created=True)
    action, patch = plan_quota(existing, "ml", "gpu-quota", {"nvidia.com/gpu": None}, "absent").object_writes[KEY]
    assert action == "patch" and merge_patch(existing, patch)["spec"]["hard"] == {"pods": "10"}
    only = quota({"requests.nvidia.com/gpu": "2"}, created=True)
    assert plan_quota(only, "ml", "gpu-quota", {"nvidia.com/gpu": 0}, "absent").object_writes[KEY] == ("delete", None)
    assert not plan_quota(None, "ml", "gpu-quota", {"nvidia.com/gpu": 0}, "absent").changed


@pytest.mark.parametrize(
    "limits, message",
    [({"cpu": 2}, "not an NVIDIA resource"), ({"nvidia.com/gpu": -1}, "whole number"), ({}, "at least one")],
)
def test_bad_limits_are_refused(limits, message):
    with pytest.raises(GpuShareError, match=message):
        plan_quota(None, "ml", "gpu-quota", limits)
