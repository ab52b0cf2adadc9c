# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/cluster_policy: choosing the ClusterPolicy, reading its device-plugin config."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import cluster_policy

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    device_plugin_config_of,
    select_cluster_policy,
)

HELM = cluster_policy("cluster-policy")
OPENSHIFT = cluster_policy("gpu-cluster-policy", namespace="nvidia-gpu-operator")
CUSTOM = cluster_policy("my-policy")
OTHER = cluster_policy("staging-policy")


def test_named_policy():
    assert select_cluster_policy([HELM, CUSTOM], "my-policy") is CUSTOM
    assert select_cluster_policy([HELM], "cluster-policy") is HELM


@pytest.mark.parametrize(
    "policies, message",
    [
        (
            [HELM, CUSTOM],
            "ClusterPolicy 'gpu-cluster-policy' not found; the cluster has: cluster-policy, my-policy. Set",
        ),
        ([], "ClusterPolicy 'gpu-cluster-policy' not found; the cluster has: none. Set"),
    ],
)
def test_named_policy_missing(policies, message):
    with pytest.raises(GpuShareError) as error:
        select_cluster_policy(policies, "gpu-cluster-policy")
    assert error.value.msg.startswith("cluster_policy: " + message)


def test_no_policy():
    with pytest.raises(
        GpuShareError,
        match=r"No NVIDIA GPU Operator ClusterPolicy \(nvidia.com/v1\) found: install the GPU Operator first",
    ):
        select_cluster_policy([])


@pytest.mark.parametrize("only", [HELM, OPENSHIFT, CUSTOM])
def test_single_policy_whatever_its_name(only):
    assert select_cluster_policy([only]) is only


@pytest.mark.parametrize(
    "policies, expected",
    [
        ([CUSTOM, HELM], HELM),
        ([OPENSHIFT, CUSTOM, OTHER], OPENSHIFT),
    ],
)
def test_known_name_among_several(policies, expected):
    assert select_cluster_policy(policies) is expected


@pytest.mark.parametrize(
    "policies, names",
    [
        ([CUSTOM, OTHER], "my-policy, staging-policy"),
        ([HELM, OPENSHIFT], "cluster-policy, gpu-cluster-policy"),
        ([OTHER, HELM, OPENSHIFT], "cluster-policy, gpu-cluster-policy, staging-policy"),
    ],
)
def test_ambiguous(policies, names):
    with pytest.raises(GpuShareError) as error:
        select_cluster_policy(policies)
    assert error.value.msg == "Several ClusterPolicies found (%s): name one with cluster_policy." % names


@pytest.mark.parametrize(
    "policy, expected",
    [
        (cluster_policy(), (None, None)),
        (cluster_policy(config_name="time-slicing-config"), ("time-slicing-config", None)),
        (cluster_policy(config_name="time-slicing-config", default="any"), ("time-slicing-config", "any")),
        (cluster_policy(config_name="", default=""), (None, None)),
        ({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "bare"}}, (None, None)),
        ({"metadata": {"name": "nulls"}, "spec": {"devicePlugin": None}}, (None, None)),
        ({"metadata": {"name": "nulls"}, "spec": {"devicePlugin": {"config": None}}}, (None, None)),
    ],
)
def test_device_plugin_config_of(policy, expected):
    assert device_plugin_config_of(policy) == expected
