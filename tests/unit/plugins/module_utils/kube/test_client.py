# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kube/client.py: the configuration resolution order (kubernetes.core's), kubeconfig files and dicts, TLS files and
proxy headers, each failure naming what to set.

No cluster: only the environment (monkeypatch) and kubeconfig files written to tmp_path.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
import yaml

from ansible_collections.gpushare.k8s.plugins.module_utils.args import AUTH_ARG_SPEC, AUTH_ENV_FALLBACKS
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.client import (
    CONFIGURATION_ATTRIBUTES,
    build_configuration,
)

pytestmark = pytest.mark.usefixtures("clean_k8s_env")


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
