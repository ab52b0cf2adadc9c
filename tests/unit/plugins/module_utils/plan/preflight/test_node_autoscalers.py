# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/node_autoscalers: the autoscaler GPU node label on Scaleway and VKS, or the one given."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import cpu_node, t4_node, t4_time_sliced
from preflight_objects import with_labels

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_scaleway_and_vks_labels():
    labelled = with_labels(t4_node("a"), {"k8s.scaleway.com/pool-name": "gpu", "k8s.scw.cloud/gpu": "true"})
    assert pf.check_autoscaling(pf.SCALEWAY, [labelled], [], [], [], []) == []
    old = with_labels(t4_node("b"), {"k8s.scaleway.com/pool-name": "gpu", "k8s.scaleway.com/gpu": "true"})
    [found] = pf.check_autoscaling(pf.SCALEWAY, [old], [], [], [], [])
    assert "before September 2025" in found["message"]
    [found] = pf.check_autoscaling(
        pf.SCALEWAY, [with_labels(t4_node("c"), {"k8s.scw.cloud/gpu": "true"})], [], [], [], []
    )
    assert "k8s.scaleway.com/pool-name" in found["message"]
    [found] = pf.check_autoscaling("VNG Cloud VKS", [t4_node("d"), cpu_node("e")], [], [], [], [])
    assert found["severity"] == "info"
    assert "vks.vngcloud.vn/accelerator" in found["message"] and found["fixed_by"].endswith(
        "gpu_autoscaling for the nodes there now"
    )


def test_another_autoscaler_gpu_label_replaces_the_platforms_own():
    # VKS's label is unconfirmed (docs/PLATFORM_FACTS.md): the label given is the one looked for, and said so.
    vks_labelled = with_labels(t4_node("a"), {"vks.vngcloud.vn/accelerator": "t4"})
    [found] = pf.check_autoscaling(pf.VKS, [vks_labelled], [], [], [], gpu_label="example.com/gpu-type")
    assert found["severity"] == "info" and "without example.com/gpu-type" in found["message"]
    assert "VNG Cloud's public autoscaler fork reads vks.vngcloud.vn/accelerator" in found["message"]
    assert "example.com/gpu-type=<gpu type>" in found["fix"]
    assert "(autoscaler_gpu_label: example.com/gpu-type)" in found["fixed_by"]
    own = with_labels(t4_node("b"), {"example.com/gpu-type": "t4"})
    assert pf.check_autoscaling(pf.VKS, [own], [], [], [], gpu_label="example.com/gpu-type") == []
    # On Scaleway the old-name remark belongs to the platform's own label only.
    old = with_labels(t4_node("c"), {"k8s.scaleway.com/pool-name": "gpu", "k8s.scaleway.com/gpu": "true"})
    [found] = pf.check_autoscaling(pf.SCALEWAY, [old], [], [], [], gpu_label="example.com/gpu-type")
    assert "without the example.com/gpu-type label:" in found["message"]
    # Ignored on OpenShift, whose MachineSets carry cluster-api/accelerator.
    assert pf.check_autoscaling(pf.OPENSHIFT, [own], [], [], [], gpu_label="example.com/gpu-type") == []
    # A node carrying the label given counts as autoscaled.
    sliced = with_labels(t4_time_sliced("t4-0", 4), {"example.com/gpu-type": "t4"})
    [found] = pf.check_autoscaling(pf.VKS, [sliced], [], [], [], gpu_label="example.com/gpu-type")
    assert "#3427" in found["message"]
    assert pf.check_autoscaling(None, [sliced], [], [], []) == []
