# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/gpu_pods: which pods hold GPUs and what they request, what the scheduler said of a pending pod, and a
pod's name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import GPU_CONTAINER, container, pod

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import (
    gpu_pods_by_node,
    gpu_requests,
    is_active_gpu_pod,
    is_unschedulable,
    pod_name,
    pod_names,
    scheduler_reason,
    workload_pods_selector,
)


@pytest.mark.parametrize(
    "containers, init_containers, expected",
    [
        pytest.param([container(limits={"nvidia.com/gpu": "1"})], None, {"nvidia.com/gpu": 1}, id="limits-only"),
        pytest.param(
            [
                container(
                    requests={"nvidia.com/gpu": "2", "cpu": "500m"}, limits={"nvidia.com/gpu": "2", "memory": "4Gi"}
                )
            ],
            None,
            {"nvidia.com/gpu": 2},
            id="requests-and-limits",
        ),
        pytest.param(
            [container("a", limits={"nvidia.com/gpu": "1"}), container("b", limits={"nvidia.com/gpu": "2"})],
            None,
            {"nvidia.com/gpu": 3},
            id="summed-over-containers",
        ),
        pytest.param(
            [container(limits={"nvidia.com/gpu.shared": "1"}), container("b", limits={"nvidia.com/mig-1g.10gb": "1"})],
            None,
            {"nvidia.com/gpu.shared": 1, "nvidia.com/mig-1g.10gb": 1},
            id="shared-and-mig",
        ),
        pytest.param(
            [container(limits={"cpu": "1"})],
            [container("init", limits={"nvidia.com/gpu": "1"})],
            {},
            id="init-containers-ignored",
        ),
        pytest.param(
            [container(requests={"cpu": "1", "memory": "1Gi"}, limits={"amd.com/gpu": "1", "example.com/fpga": "1"})],
            None,
            {},
            id="non-nvidia-ignored",
        ),
        pytest.param([container()], None, {}, id="no-resources"),
        pytest.param([container(limits={"nvidia.com/gpu": "1k"})], None, {}, id="unparsable-quantity-skipped"),
    ],
)
def test_gpu_requests(containers, init_containers, expected):
    assert gpu_requests(pod("job", containers, node_name="t4-a", init_containers=init_containers)) == expected


def test_gpu_requests_of_pod_without_spec():
    assert gpu_requests({"metadata": {"name": "x"}}) == {}


@pytest.mark.parametrize(
    "node_name, phase, containers, expected",
    [
        ("t4-a", "Running", GPU_CONTAINER, True),
        ("t4-a", "Pending", GPU_CONTAINER, True),
        ("t4-a", "Unknown", GPU_CONTAINER, True),
        (None, "Pending", GPU_CONTAINER, False),
        ("t4-a", "Succeeded", GPU_CONTAINER, False),
        ("t4-a", "Failed", GPU_CONTAINER, False),
        ("t4-a", "Running", [container(limits={"cpu": "1"})], False),
    ],
)
def test_is_active_gpu_pod(node_name, phase, containers, expected):
    assert is_active_gpu_pod(pod("job", containers, node_name=node_name, phase=phase)) is expected


def test_workload_pods_leave_out_finished_pods_and_the_operators_namespace():
    assert workload_pods_selector("gpu-operator") == (
        "metadata.namespace!=gpu-operator,status.phase!=Succeeded,status.phase!=Failed"
    )
    assert workload_pods_selector(None) == "status.phase!=Succeeded,status.phase!=Failed"


def test_gpu_pods_by_node():
    pods = [
        pod("train", GPU_CONTAINER, namespace="ml", node_name="t4-a"),
        pod("done", GPU_CONTAINER, namespace="ml", node_name="t4-a", phase="Succeeded"),
        pod("web", [container(limits={"cpu": "1"})], namespace="web", node_name="t4-a"),
        pod(
            "infer", [container(limits={"nvidia.com/gpu": "2"})], namespace="serving", node_name="t4-b", phase="Pending"
        ),
    ]
    assert gpu_pods_by_node(pods) == {
        "t4-a": [{"namespace": "ml", "name": "train", "phase": "Running", "requests": {"nvidia.com/gpu": 1}}],
        "t4-b": [{"namespace": "serving", "name": "infer", "phase": "Pending", "requests": {"nvidia.com/gpu": 2}}],
    }


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
