# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/smoke_test: gpu_smoke_test's workload, when a replica has settled, and the report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import GPU_TOLERATION, container, pod

from ansible_collections.gpushare.k8s.plugins.module_utils.args import SMOKE_TEST_IMAGE
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan import smoke_test as st

REASON = "0/8 nodes are available: 2 Insufficient nvidia.com/gpu, 6 node(s) didn't match node selector."


def params(**overrides):
    base = dict(
        name="gpushare-smoke-test",
        workload_namespace="default",
        kind="deployment",
        replicas=11,
        resource="nvidia.com/gpu",
        amount=1,
        image=SMOKE_TEST_IMAGE,
        command=None,
        node_selector=None,
        tolerations=None,
    )
    base.update(overrides)
    return base


def replica(name, node=None, phase="Pending", unschedulable=False, restarts=0):
    result = pod(name, [container(limits={"nvidia.com/gpu": "1"})], node_name=node, phase=phase)
    if unschedulable:
        result["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": REASON}
        ]
    if restarts:
        result["status"]["containerStatuses"] = [{"name": "main", "restartCount": restarts}]
    return result


def test_a_deployment_as_the_guides_run_it():
    kind, [body] = st.build_workload(params(node_selector={"cluster-api/accelerator": "tesla-t4"}))
    assert kind == "deployment" and body["spec"]["replicas"] == 11
    spec = body["spec"]["template"]["spec"]
    resources = spec["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"nvidia.com/gpu": "1"}
    assert spec["tolerations"] == [GPU_TOLERATION] and spec["nodeSelector"] == {"cluster-api/accelerator": "tesla-t4"}
    assert spec["containers"][0]["image"] == SMOKE_TEST_IMAGE and "command" not in spec["containers"][0]


def test_pinned_to_nodes_by_name_one_term_each():
    """The API server takes one value for metadata.name per matchFields requirement; terms are ORed."""
    _kind, [body] = st.build_workload(params(), ["ip-10-0-1-7.ec2.internal", "gpu-t4-0"])
    terms = body["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["ip-10-0-1-7.ec2.internal"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-t4-0"]}]},
    ]
    _kind, [unpinned] = st.build_workload(params())
    assert "affinity" not in unpinned["spec"]["template"]["spec"]


def test_bare_pods_are_named_by_index_and_take_the_command():
    kind, bodies = st.build_workload(params(kind="pod", replicas=3, command=["sh", "-c", "nvidia-smi -L"]))
    assert kind == "pod" and [b["metadata"]["name"] for b in bodies] == st.pod_names("gpushare-smoke-test", 3)
    assert bodies[0]["spec"]["restartPolicy"] == "Never"
    assert bodies[0]["spec"]["containers"][0]["command"] == ["sh", "-c", "nvidia-smi -L"]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(replicas=0), "replicas must be at least 1"),
        (dict(amount=0), "amount must be at least 1"),
        (dict(resource="cpu"), "NVIDIA resource"),
        (dict(name="Smoke_Test"), "DNS label"),
    ],
)
def test_bad_input_is_refused(overrides, message):
    with pytest.raises(GpuShareError, match=message):
        st.build_workload(params(**overrides))


def test_settled_and_report():
    pods = [replica("r-%d" % i, node="gpu-t4-%d" % (i % 2), phase="Running") for i in range(8)]
    pods += [replica("p-%d" % i, unschedulable=True) for i in range(3)]
    assert all(st.settled(p) is None for p in pods)
    assert st.settled(replica("waiting")) == "Pending, not scheduled yet"
    assert st.settled(replica("bound", node="gpu-t4-0")) == "Pending, on gpu-t4-0"
    assert st.settled(replica("restarted", node="gpu-t4-0", restarts=2)) is None
    result = st.report(pods, 11)
    assert (result["running"], result["pending"], result["failed_replicas"]) == (8, 3, 0)
    assert result["pending_reasons"] == {REASON: 3}
    assert [p["outcome"] for p in result["pods"]].count("got a slice") == 8
