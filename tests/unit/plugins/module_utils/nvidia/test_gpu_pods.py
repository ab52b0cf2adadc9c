# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU pods (nvidia/gpu_pods.py): what the scheduler said of a pending pod, and a pod's name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import container, pod

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import (
    is_unschedulable,
    pod_name,
    pod_names,
    scheduler_reason,
)


def pending(name, resource, message=None):
    body = pod(name, [container(limits={resource: str(1)})], phase="Pending")
    if message:
        body["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        ]
    return body


def test_the_scheduler_reason_is_the_pod_scheduled_message():
    assert scheduler_reason(pending("p", "nvidia.com/gpu", message="0/3 nodes")) == "0/3 nodes"
    assert scheduler_reason(pending("p", "nvidia.com/gpu")) is None
    assert is_unschedulable(pending("p", "nvidia.com/gpu", message="0/3 nodes"))
    assert not is_unschedulable(pending("p", "nvidia.com/gpu"))


def test_a_pod_is_named_namespace_slash_name_from_the_api_or_a_summary():
    assert pod_name(pending("p", "nvidia.com/gpu")) == "ml/p"
    assert pod_names([dict(namespace="ml", name="p")]) == ["ml/p"]
