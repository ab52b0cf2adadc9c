# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""args.py: the connection options' environment fallbacks (kubernetes.core's ``K8S_AUTH_*``), the gpu_demand event
source's arguments checked as a module's, and ``option_problems``: bad option values refused with their rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.module_utils.basic import AnsibleFallbackNotFound
from ansible.module_utils.common.parameters import set_fallbacks

from ansible_collections.gpushare.k8s.plugins.module_utils.args import (
    AUTH_ARG_SPEC,
    gpu_demand_options,
    k8s_env_fallback,
    option_problems,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError

pytestmark = pytest.mark.usefixtures("clean_k8s_env")


def test_first_set_name_wins(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "second")
    assert k8s_env_fallback("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL") == "second"
    monkeypatch.setenv("K8S_AUTH_VALIDATE_CERTS", "first")
    assert k8s_env_fallback("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL") == "first"


def test_nothing_set_raises_fallback_not_found():
    with pytest.raises(AnsibleFallbackNotFound):
        k8s_env_fallback("K8S_AUTH_HOST")


@pytest.mark.parametrize(
    "value, expected",
    [
        ("0", False),
        ("false", False),
        ("False", False),
        ("FALSE", False),
        ("no", False),
        ("No", False),
        ("1", True),
        ("true", True),
        ("yes", True),
        ("on", True),
        ("off", True),
        ("anything", True),
        ("", True),
    ],
)
def test_booleans_read_like_kubernetes_core(monkeypatch, value, expected):
    # kubernetes.core: env_value.lower() not in ["0", "false", "no"]
    monkeypatch.setenv("K8S_AUTH_VALIDATE_CERTS", value)
    assert k8s_env_fallback("K8S_AUTH_VALIDATE_CERTS", boolean=True) is expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("system:masters", ["system:masters"]),
        ("system:masters,gpu-admins", ["system:masters", "gpu-admins"]),
        (" a , b ,, c ,", ["a", "b", "c"]),
        ("", []),
    ],
)
def test_comma_lists(monkeypatch, value, expected):
    monkeypatch.setenv("K8S_AUTH_IMPERSONATE_GROUPS", value)
    assert k8s_env_fallback("K8S_AUTH_IMPERSONATE_GROUPS", comma_list=True) == expected


ENVIRONMENT = {
    "K8S_AUTH_KUBECONFIG": "/home/ops/.kube/prod",
    "K8S_AUTH_CONTEXT": "prod-admin",
    "K8S_AUTH_HOST": "https://api.prod.example.com:6443",
    "K8S_AUTH_API_KEY": "sha256~token",
    "K8S_AUTH_USERNAME": "ops",
    "K8S_AUTH_PASSWORD": "secret",
    "K8S_AUTH_VERIFY_SSL": "no",
    "K8S_AUTH_SSL_CA_CERT": "/etc/pki/ca.pem",
    "K8S_AUTH_CERT_FILE": "/etc/pki/client.pem",
    "K8S_AUTH_KEY_FILE": "/etc/pki/client-key.pem",
    "K8S_AUTH_PROXY": "http://proxy:3128",
    "K8S_AUTH_NO_PROXY": "localhost,.svc",
    "K8S_AUTH_PERSIST_CONFIG": "false",
    "K8S_AUTH_IMPERSONATE_USER": "gpu-bot",
    "K8S_AUTH_IMPERSONATE_GROUPS": "system:masters, gpu-admins",
}
EXPECTED = {
    "kubeconfig": "/home/ops/.kube/prod",
    "context": "prod-admin",
    "host": "https://api.prod.example.com:6443",
    "api_key": "sha256~token",
    "username": "ops",
    "password": "secret",
    "validate_certs": False,
    "ca_cert": "/etc/pki/ca.pem",
    "client_cert": "/etc/pki/client.pem",
    "client_key": "/etc/pki/client-key.pem",
    "proxy": "http://proxy:3128",
    "no_proxy": "localhost,.svc",
    "persist_config": False,
    "impersonate_user": "gpu-bot",
    "impersonate_groups": ["system:masters", "gpu-admins"],
}


def test_every_option_falls_back_to_its_environment_variable(monkeypatch):
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    parameters = {}
    no_log_values = set_fallbacks(AUTH_ARG_SPEC, parameters)
    assert parameters == EXPECTED
    assert {"sha256~token", "secret"} <= no_log_values


def test_fallbacks_leave_given_options_alone(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_HOST", "https://from-env:6443")
    monkeypatch.setenv("K8S_AUTH_VALIDATE_CERTS", "true")
    parameters = {"host": "https://given:6443"}
    set_fallbacks(AUTH_ARG_SPEC, parameters)
    assert parameters == {"host": "https://given:6443", "validate_certs": True}


def test_no_environment_no_fallback_values():
    parameters = {}
    set_fallbacks(AUTH_ARG_SPEC, parameters)
    assert parameters == {}


def test_the_event_sources_connection_options_fall_back_to_the_environment_as_a_modules_do(monkeypatch):
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    options = gpu_demand_options({"pool_label": "k8s.scaleway.com/pool-name", "settle_seconds": "5"})
    assert dict((name, options[name]) for name in EXPECTED) == EXPECTED
    assert (
        options["pool_label"],
        options["settle_seconds"],
        options["cool_down_seconds"],
        options["handoff_timeout_seconds"],
    ) == ("k8s.scaleway.com/pool-name", 5.0, 60.0, 300.0)


def test_the_event_sources_args_take_the_modules_aliases_and_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_HOST", "https://from-env:6443")
    options = gpu_demand_options({"host": "https://given:6443", "verify_ssl": "no", "ssl_ca_cert": "/ca.pem"})
    assert (options["host"], options["validate_certs"], options["ca_cert"]) == ("https://given:6443", False, "/ca.pem")


@pytest.mark.parametrize(
    "args, problem",
    [
        ({"settle": 5}, "settle"),
        ({"settle_seconds": "soon"}, "settle_seconds"),
        ({"cool_down_seconds": -1}, "cool_down_seconds is -1.0"),
        ({"settle_seconds": 90}, "longest_settle_seconds is shorter than settle_seconds"),
        ({"handoff_timeout_seconds": 0}, "handoff_timeout_seconds is 0.0; give a number of seconds above 0"),
    ],
)
def test_the_event_sources_wrong_args_are_refused_by_name(args, problem):
    with pytest.raises(GpuShareError, match="gpushare.k8s.gpu_demand: .*" + problem):
        gpu_demand_options(args)


def call_fallback(spec):
    """What AnsibleModule does with ``fallback=(callable, [args], {kwargs})``."""
    fallback = spec["fallback"]
    args, kwargs = [], {}
    for item in fallback[1:]:
        if isinstance(item, dict):
            kwargs = item
        else:
            args = item
    return fallback[0](*args, **kwargs)


@pytest.mark.parametrize(
    "option, env, value, expected",
    [
        ("validate_certs", "K8S_AUTH_VALIDATE_CERTS", "0", False),
        ("validate_certs", "K8S_AUTH_VERIFY_SSL", "yes", True),
        ("persist_config", "K8S_AUTH_PERSIST_CONFIG", "No", False),
        ("impersonate_groups", "K8S_AUTH_IMPERSONATE_GROUPS", "a,b", ["a", "b"]),
        ("ca_cert", "K8S_AUTH_CA_CERT", "/ca.pem", "/ca.pem"),
        ("client_key", "K8S_AUTH_KEY_FILE", "/key.pem", "/key.pem"),
    ],
)
def test_single_fallback(monkeypatch, option, env, value, expected):
    monkeypatch.setenv(env, value)
    assert call_fallback(AUTH_ARG_SPEC[option]) == expected


def test_proxy_header_fallbacks(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_PROXY_HEADERS_USER_AGENT", "gpushare/1.0")
    monkeypatch.setenv("K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH", "user:pass")
    parameters = {}
    set_fallbacks(AUTH_ARG_SPEC["proxy_headers"]["options"], parameters)
    assert parameters == {"user_agent": "gpushare/1.0", "proxy_basic_auth": "user:pass"}


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
