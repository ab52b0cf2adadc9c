# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/cluster_policy: choosing the ClusterPolicy, where its operands run, reading its device-plugin config."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import NAMESPACE, cluster_policy

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    device_plugin_config_of,
    operator_namespace,
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


# --- operator_namespace: where the operands run -----------------------------------------------------------------------


class DevicePluginIn(object):
    """The device plugin DaemonSet of each namespace that has one (a marker string stands for the object); records
    the namespaces asked for, in order."""

    def __init__(self, *namespaces):
        self.namespaces = namespaces
        self.asked = []

    def __call__(self, namespace):
        self.asked.append(namespace)
        return "device-plugin in %s" % namespace if namespace in self.namespaces else None


def policy_without_status():
    policy = cluster_policy()
    del policy["status"]
    return policy


def hami_policy(namespace=NAMESPACE):
    """The policy with NVIDIA's device plugin switched off (HAMi replaces it): the operator deleted its DaemonSet."""
    policy = cluster_policy(namespace=namespace)
    policy["spec"]["devicePlugin"]["enabled"] = False
    return policy


def test_status_namespace_with_the_device_plugin():
    daemonset_in = DevicePluginIn("nvidia-gpu-operator")
    found = operator_namespace(cluster_policy(namespace="nvidia-gpu-operator"), None, daemonset_in)
    assert found == ("nvidia-gpu-operator", "device-plugin in nvidia-gpu-operator")
    assert daemonset_in.asked == ["nvidia-gpu-operator"]


def test_status_namespace_without_the_device_plugin():
    assert operator_namespace(hami_policy(), None, DevicePluginIn()) == (NAMESPACE, None)


def test_status_namespace_is_preferred_to_a_known_namespace_holding_a_device_plugin():
    assert operator_namespace(hami_policy("ops-gpu"), None, DevicePluginIn("gpu-operator")) == ("ops-gpu", None)


def test_no_status_falls_back_to_the_known_namespaces():
    daemonset_in = DevicePluginIn("nvidia-gpu-operator")
    assert operator_namespace(policy_without_status(), None, daemonset_in)[0] == "nvidia-gpu-operator"
    assert daemonset_in.asked == ["gpu-operator", "nvidia-gpu-operator"]


def test_no_status_and_no_device_plugin_fails_with_the_fix():
    with pytest.raises(GpuShareError) as raised:
        operator_namespace(policy_without_status(), None, DevicePluginIn())
    message = str(raised.value)
    assert (
        "nvidia-device-plugin-daemonset was not found in namespace(s) gpu-operator, nvidia-gpu-operator, kube-system"
        in message
    )
    assert "set namespace to where the GPU Operator runs" in message
    assert "spec.devicePlugin.enabled of ClusterPolicy cluster-policy" in message


def test_user_namespace_is_the_status_namespace_without_the_device_plugin():
    assert operator_namespace(hami_policy("ops-gpu"), "ops-gpu", DevicePluginIn()) == ("ops-gpu", None)


def test_user_namespace_holding_the_device_plugin_wins_over_the_status():
    daemonset_in = DevicePluginIn("other")
    assert operator_namespace(cluster_policy(namespace="gpu-operator"), "other", daemonset_in)[0] == "other"
    assert daemonset_in.asked == ["other"]


def test_wrong_user_namespace_names_the_status_namespace():
    with pytest.raises(GpuShareError) as raised:
        operator_namespace(hami_policy("ops-gpu"), "gpu-operator", DevicePluginIn())
    message = str(raised.value)
    assert "ClusterPolicy cluster-policy reports namespace ops-gpu" in message
    assert "Leave namespace unset, or set it to ops-gpu" in message


def test_wrong_user_namespace_without_status():
    with pytest.raises(GpuShareError, match=r"not found in namespace\(s\) elsewhere"):
        operator_namespace(policy_without_status(), "elsewhere", DevicePluginIn(NAMESPACE))
