# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is refused before a module makes any request: option values Kubernetes would refuse half way through a change
(names, keys, label values), timeouts that end a change at once; and the connection hints of failed requests."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import connection_hint
from ansible_collections.gpushare.k8s.plugins.module_utils.args import option_problems


@pytest.mark.parametrize(
    "params",
    [
        dict(namespace="gpu-operator", config_map="time-slicing-config", config_key="team-a.v2_1"),
        dict(cluster_policy="cluster-policy.nvidia.com", config_name="Half_And_Whole"),
        dict(config_key="k" * 63, nodes=dict(names=["ip-10-0-0-1.ec2.internal"], selector=None)),
        dict(wait=True, wait_timeout=1, exec_timeout=30),
        dict(nodes=None, namespace=None, wait_timeout=None),
        dict(autoscaler_gpu_label="vks.vngcloud.vn/accelerator"),
        dict(autoscaler_gpu_label="Accelerator_Type"),
    ],
)
def test_valid_options_pass(params):
    assert option_problems(params) == []


@pytest.mark.parametrize(
    "params, expected",
    [
        (dict(config_key="team/a"), "config_key 'team/a' is not valid: it becomes a node label value"),
        (dict(config_key="k" * 64), "config_key '%s' is 64 characters long" % ("k" * 64)),
        (dict(config_key="-a"), "config_key '-a' is not valid"),
        (dict(config_name="my layout"), "config_name 'my layout' is not valid"),
        (dict(config_map="My_Config"), "config_map 'My_Config' is not valid: an object name"),
        (dict(cluster_policy="a" * 254), "cluster_policy '%s' is 254 characters long; an object name" % ("a" * 254)),
        (dict(namespace="gpu.operator"), "namespace 'gpu.operator' is not valid: a namespace name"),
        (dict(quota_namespace="Team"), "quota_namespace 'Team' is not valid"),
        (dict(nodes=dict(names=["ok", "Not OK"])), "nodes.names 'Not OK' is not valid"),
        (dict(wait=True, wait_timeout=0), "wait_timeout is 0; give a number of seconds above 0 (to not wait at all"),
        (dict(wait_timeout=-30), "wait_timeout is -30; give a number of seconds above 0"),
        (dict(exec_timeout=0), "exec_timeout is 0"),
        (dict(autoscaler_gpu_label="vks.vngcloud.vn/"), "autoscaler_gpu_label 'vks.vngcloud.vn/' is not valid: a node"),
        (dict(autoscaler_gpu_label="VKS.example/gpu"), "autoscaler_gpu_label 'VKS.example/gpu' is not valid"),
        (dict(autoscaler_gpu_label="a/b/c"), "autoscaler_gpu_label 'a/b/c' is not valid"),
    ],
)
def test_invalid_options_named_with_the_rule(params, expected):
    problems = option_problems(params)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_every_problem_reported_at_once():
    assert len(option_problems(dict(config_key="a/b", namespace="A", wait_timeout=0))) == 3


class _Configuration(object):
    host = "https://api.example.com:6443"


class _Kube(object):
    class api_client(object):
        configuration = _Configuration()


@pytest.mark.parametrize(
    "msg, expected",
    [
        ("Failed to list nodes: cannot reach the Kubernetes API: connection refused", "Check the API server's address"),
        ("Failed to list nodes: cannot reach the Kubernetes API: [SSL: CERTIFICATE_VERIFY_FAILED]", "give that CA"),
        ("Failed to list nodes: Unauthorized (HTTP 401)", "check the credentials"),
    ],
)
def test_connection_failures_name_the_server_and_the_fix(msg, expected):
    hint = connection_hint(msg, _Kube())
    assert "Server: https://api.example.com:6443." in hint and expected in hint


def test_other_failures_get_no_connection_hint():
    assert connection_hint("Failed to patch node x: conflict (HTTP 409)", _Kube()) == ""
