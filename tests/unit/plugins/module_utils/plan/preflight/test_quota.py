# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/quota: namespaces running GPU pods without a quota on each resource."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import container, pod

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_namespaces_running_gpu_pods_without_a_quota_on_each_resource():
    pods = [
        pod("a", [container(limits={"nvidia.com/gpu": "1"})], namespace="ml", node_name="t4-0"),
        pod("b", [container(limits={"nvidia.com/mig-1g.10gb": "1"})], namespace="ml", node_name="h100-0"),
        pod("c", [container(limits={"nvidia.com/gpu": "1"})], namespace="done", node_name="t4-0", phase="Succeeded"),
        pod("d", [container(limits={"nvidia.com/gpu": "1"})], namespace="capped"),
        pod("e", [container()], namespace="cpu"),
    ]
    quotas = [
        {"metadata": {"name": "q", "namespace": "ml"}, "spec": {"hard": {"requests.nvidia.com/gpu": "2"}}},
        {"metadata": {"name": "q", "namespace": "capped"}, "spec": {"hard": {"requests.nvidia.com/gpu": "1"}}},
    ]
    [found] = pf.check_quotas(pods, quotas)
    assert found["object"] == "Namespace/ml" and "nvidia.com/mig-1g.10gb" in found["message"]
    assert '"requests.nvidia.com/mig-1g.10gb": <n>' in found["fix"]
