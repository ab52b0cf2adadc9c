# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""client: kubernetes.core-compatible environment fallbacks and the configuration resolution order.

No cluster: only the environment (monkeypatch) and kubeconfig files written to tmp_path.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
import yaml
from ansible.module_utils.basic import AnsibleFallbackNotFound
from ansible.module_utils.common.parameters import set_fallbacks

from ansible_collections.gpushare.k8s.plugins.module_utils.args import (
    AUTH_ARG_SPEC,
    AUTH_ENV_FALLBACKS,
    gpu_demand_options,
    k8s_env_fallback,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.client import (
    CONFIGURATION_ATTRIBUTES,
    build_configuration,
)

pytestmark = pytest.mark.usefixtures("clean_k8s_env")


# --- k8s_env_fallback ---------------------------------------------------------------------------


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


# --- AUTH_ARG_SPEC fallbacks, called the way AnsibleModule calls them ---------------------------

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


# --- the gpu_demand event source's args (extensions/eda) --------------------------------------------


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


# --- build_configuration ------------------------------------------------------------------------


def kubeconfig_dict(current="dev"):
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "dev", "cluster": {"server": "https://dev.example.com:6443", "insecure-skip-tls-verify": True}},
            {"name": "prod", "cluster": {"server": "https://prod.example.com:6443", "insecure-skip-tls-verify": True}},
        ],
        "users": [
            {"name": "dev-admin", "user": {"token": "dev-token"}},
            {"name": "prod-admin", "user": {"token": "prod-token"}},
        ],
        "contexts": [
            {"name": "dev", "context": {"cluster": "dev", "user": "dev-admin", "namespace": "default"}},
            {"name": "prod", "context": {"cluster": "prod", "user": "prod-admin"}},
        ],
        "current-context": current,
        "preferences": {},
    }


def bearer(configuration):
    """The Authorization header the client sends (kubeconfig tokens and api_key are stored under different keys)."""
    return configuration.auth_settings()["BearerToken"]["value"]


def write_kubeconfig(path, content):
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return str(path)


def test_host_and_api_key_need_no_kubeconfig(clean_k8s_env):
    configuration = build_configuration({"host": "https://api.example.com:6443/", "api_key": "sha256~abc"})
    assert configuration.host == "https://api.example.com:6443"
    assert bearer(configuration) == "Bearer sha256~abc"


def test_host_and_basic_auth_need_no_kubeconfig(clean_k8s_env):
    configuration = build_configuration(
        {"host": "https://api.example.com:6443", "username": "ops", "password": "secret", "validate_certs": False}
    )
    assert (configuration.host, configuration.username, configuration.password) == (
        "https://api.example.com:6443",
        "ops",
        "secret",
    )
    assert configuration.verify_ssl is False


def test_host_and_credential_win_over_a_kubeconfig(clean_k8s_env):
    path = write_kubeconfig(clean_k8s_env / "kubeconfig", kubeconfig_dict())
    configuration = build_configuration({"kubeconfig": path, "host": "https://api.example.com:6443", "api_key": "mine"})
    assert configuration.host == "https://api.example.com:6443"
    assert bearer(configuration) == "Bearer mine"


def test_kubeconfig_file_with_its_current_context(clean_k8s_env):
    path = write_kubeconfig(clean_k8s_env / "kubeconfig", kubeconfig_dict(current="dev"))
    configuration = build_configuration({"kubeconfig": path})
    assert configuration.host == "https://dev.example.com:6443"
    assert bearer(configuration) == "Bearer dev-token"
    assert configuration.verify_ssl is False


def test_kubeconfig_file_with_a_named_context(clean_k8s_env):
    path = write_kubeconfig(clean_k8s_env / "kubeconfig", kubeconfig_dict(current="dev"))
    configuration = build_configuration({"kubeconfig": path, "context": "prod"})
    assert configuration.host == "https://prod.example.com:6443"
    assert bearer(configuration) == "Bearer prod-token"


def test_kubeconfig_as_a_dict(clean_k8s_env):
    configuration = build_configuration({"kubeconfig": kubeconfig_dict(current="prod")})
    assert configuration.host == "https://prod.example.com:6443"


def test_explicit_options_override_the_kubeconfig(clean_k8s_env):
    ca = clean_k8s_env / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    path = write_kubeconfig(clean_k8s_env / "kubeconfig", kubeconfig_dict())
    configuration = build_configuration(
        {
            "kubeconfig": path,
            "host": "https://override.example.com:6443/",
            "validate_certs": True,
            "ca_cert": str(ca),
            "proxy": "http://proxy:3128",
            "no_proxy": "localhost",
            "client_cert": None,
        }
    )
    assert configuration.host == "https://override.example.com:6443"
    assert configuration.verify_ssl is True
    assert configuration.ssl_ca_cert == str(ca)
    assert (configuration.proxy, configuration.no_proxy) == ("http://proxy:3128", "localhost")
    # From the kubeconfig (no credential given), under "BearerToken" (kubernetes >= 35) or "authorization" (before).
    assert list(configuration.api_key.values()) == ["Bearer dev-token"]


def test_explicit_options_still_override_the_kubeconfig_after_a_request(clean_k8s_env):
    path = write_kubeconfig(clean_k8s_env / "kubeconfig", kubeconfig_dict())
    configuration = build_configuration(
        {"kubeconfig": path, "host": "https://override.example.com:6443", "validate_certs": True}
    )
    bearer(configuration)  # what ApiClient does before sending each request
    assert (configuration.host, configuration.verify_ssl) == ("https://override.example.com:6443", True)
    # Without host, api_key is applied over the loaded kubeconfig, and must be the token sent.
    assert bearer(build_configuration({"kubeconfig": path, "api_key": "explicit-token"})) == "Bearer explicit-token"


@pytest.mark.parametrize("validate_certs, expected", [(False, False), (True, True)])
def test_validate_certs_sets_verify_ssl(clean_k8s_env, validate_certs, expected):
    configuration = build_configuration(
        {"host": "https://api.example.com:6443", "api_key": "t", "validate_certs": validate_certs}
    )
    assert configuration.verify_ssl is expected


def test_proxy_headers(clean_k8s_env):
    configuration = build_configuration(
        {
            "host": "https://api.example.com:6443",
            "api_key": "t",
            "proxy_headers": {"user_agent": "gpushare", "proxy_basic_auth": "u:p", "basic_auth": None},
        }
    )
    assert configuration.proxy_headers["user-agent"] == "gpushare"
    assert configuration.proxy_headers["proxy-authorization"].startswith("Basic ")


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("", id="empty"),
        pytest.param("apiVersion: v1\nkind: Config\n", id="no-contexts"),
        pytest.param("apiVersion: v1\nkind: Config\nclusters: [\n", id="invalid-yaml"),
        pytest.param("- just\n- a list\n", id="not-a-mapping"),
        pytest.param(None, id="missing-file"),
    ],
)
def test_broken_kubeconfig_names_what_to_set(clean_k8s_env, content):
    path = clean_k8s_env / "kubeconfig"
    if content is not None:
        write_kubeconfig(path, content)
    with pytest.raises(GpuShareError) as error:
        build_configuration({"kubeconfig": str(path)})
    # The message names the file and what to set instead.
    assert str(path) in error.value.msg
    if content is None:
        assert error.value.msg.startswith("kubeconfig: %s is not a file" % path)
    else:
        assert error.value.msg.startswith("Could not load the Kubernetes client configuration from kubeconfig ")
        assert "Set kubeconfig (or K8S_AUTH_KUBECONFIG) and context, or host with api_key" in error.value.msg
    if content == "- just\n- a list\n":
        assert "it is not a kubeconfig" in error.value.msg


@pytest.mark.parametrize("option", ["ca_cert", "client_cert", "client_key"])
def test_missing_tls_file_named_with_its_option(clean_k8s_env, option):
    path = str(clean_k8s_env / "missing.pem")
    with pytest.raises(GpuShareError) as error:
        build_configuration({"host": "https://api.example.com:6443", "api_key": "t", option: path})
    assert error.value.msg.startswith("%s: %s is not a file" % (option, path))


def test_unknown_context_names_what_to_set(clean_k8s_env):
    path = write_kubeconfig(clean_k8s_env / "kubeconfig", kubeconfig_dict())
    with pytest.raises(GpuShareError, match="Set kubeconfig"):
        build_configuration({"kubeconfig": path, "context": "staging"})


def test_host_without_credential_still_needs_a_kubeconfig(clean_k8s_env, monkeypatch):
    # Outside a cluster, with no kubeconfig at the default location (kubernetes reads KUBECONFIG at import).
    import kubernetes

    monkeypatch.setattr(
        kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(clean_k8s_env / "no-such-kubeconfig")
    )
    with pytest.raises(GpuShareError, match="Set kubeconfig"):
        build_configuration({"host": "https://api.example.com:6443"})


def test_every_connection_option_of_kubernetes_core_reads_its_environment_and_reaches_the_client():
    """The options are kubernetes.core's own spec: one it adds (a newer kubernetes.core in the pins) fails here until
    the client handles it and its environment variables are known."""
    assert set(AUTH_ARG_SPEC) == set(AUTH_ENV_FALLBACKS) | {"proxy_headers"}
    handled_apart = {
        "kubeconfig",
        "context",
        "proxy_headers",
        "persist_config",
        "impersonate_user",
        "impersonate_groups",
    }
    assert set(AUTH_ARG_SPEC) == set(CONFIGURATION_ATTRIBUTES) | handled_apart
    assert all("fallback" in option for option in AUTH_ARG_SPEC["proxy_headers"]["options"].values())
