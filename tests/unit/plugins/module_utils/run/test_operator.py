# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run/operator (find_operator): the operands' namespace from the ClusterPolicy's status, else the device plugin."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from k8s_objects import NAMESPACE, cluster_policy

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator

DEVICE_PLUGIN = "nvidia-device-plugin-daemonset"


def daemonset(namespace, name=DEVICE_PLUGIN):
    """A DaemonSet as ``GET /apis/apps/v1/namespaces/<namespace>/daemonsets/<name>`` returns it."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"selector": {"matchLabels": {"app": name}}},
        "status": {"desiredNumberScheduled": 2, "numberReady": 2},
    }


class FakeKube(object):
    """The two calls find_operator makes, on the given objects; records the DaemonSet reads."""

    def __init__(self, policies, daemonsets=()):
        self.policies = policies
        self.daemonsets = {(ds["metadata"]["namespace"], ds["metadata"]["name"]): ds for ds in daemonsets}
        self.reads = []

    def list_cluster_policies(self):
        return self.policies

    def get_daemon_set(self, namespace, name):
        self.reads.append(namespace)
        return self.daemonsets.get((namespace, name))


def policy_without_status(**kwargs):
    policy = cluster_policy(**kwargs)
    del policy["status"]
    return policy


def hami_policy(namespace=NAMESPACE):
    """The policy with NVIDIA's device plugin switched off (HAMi replaces it): the operator deleted its DaemonSet."""
    policy = cluster_policy(namespace=namespace)
    policy["spec"]["devicePlugin"]["enabled"] = False
    return policy


def test_status_namespace_with_the_device_plugin():
    kube = FakeKube([cluster_policy(namespace="nvidia-gpu-operator")], [daemonset("nvidia-gpu-operator")])
    operator = find_operator(kube)
    assert (operator.policy_name, operator.namespace) == ("cluster-policy", "nvidia-gpu-operator")
    assert operator.device_plugin_daemonset["metadata"]["namespace"] == "nvidia-gpu-operator"
    assert kube.reads == ["nvidia-gpu-operator"]


def test_status_namespace_without_the_device_plugin():
    operator = find_operator(FakeKube([hami_policy()]))
    assert operator.namespace == NAMESPACE
    assert operator.device_plugin_daemonset is None


def test_status_namespace_is_preferred_to_a_known_namespace_holding_a_device_plugin():
    kube = FakeKube([hami_policy("ops-gpu")], [daemonset("gpu-operator")])
    operator = find_operator(kube)
    assert operator.namespace == "ops-gpu"
    assert operator.device_plugin_daemonset is None


def test_no_status_falls_back_to_the_known_namespaces():
    kube = FakeKube([policy_without_status()], [daemonset("nvidia-gpu-operator")])
    operator = find_operator(kube)
    assert operator.namespace == "nvidia-gpu-operator"
    assert kube.reads == ["gpu-operator", "nvidia-gpu-operator"]


def test_no_status_and_no_device_plugin_fails_with_the_fix():
    with pytest.raises(GpuShareError) as raised:
        find_operator(FakeKube([policy_without_status()]))
    message = str(raised.value)
    assert (
        "nvidia-device-plugin-daemonset was not found in namespace(s) gpu-operator, nvidia-gpu-operator, kube-system"
        in (message)
    )
    assert "set namespace to where the GPU Operator runs" in message
    assert "spec.devicePlugin.enabled of ClusterPolicy cluster-policy" in message


def test_user_namespace_is_the_status_namespace_without_the_device_plugin():
    operator = find_operator(FakeKube([hami_policy("ops-gpu")]), namespace="ops-gpu")
    assert operator.namespace == "ops-gpu"
    assert operator.device_plugin_daemonset is None


def test_user_namespace_holding_the_device_plugin_wins_over_the_status():
    kube = FakeKube([cluster_policy(namespace="gpu-operator")], [daemonset("other")])
    assert find_operator(kube, namespace="other").namespace == "other"


def test_wrong_user_namespace_names_the_status_namespace():
    with pytest.raises(GpuShareError) as raised:
        find_operator(FakeKube([hami_policy("ops-gpu")]), namespace="gpu-operator")
    message = str(raised.value)
    assert "ClusterPolicy cluster-policy reports namespace ops-gpu" in message
    assert "Leave namespace unset, or set it to ops-gpu" in message


def test_wrong_user_namespace_without_status():
    with pytest.raises(GpuShareError, match=r"not found in namespace\(s\) elsewhere"):
        find_operator(FakeKube([policy_without_status()], [daemonset(NAMESPACE)]), namespace="elsewhere")


def test_listed_policies_are_used_and_the_named_one_chosen():
    kube = FakeKube(None, [daemonset("b-ns")])
    policies = [cluster_policy(name="a", namespace="a-ns"), cluster_policy(name="b", namespace="b-ns")]
    operator = find_operator(kube, cluster_policy="b", policies=policies)
    assert (operator.policy_name, operator.namespace) == ("b", "b-ns")
