# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection options and the one cached Kubernetes API client factory.

The options, their aliases, their ``K8S_AUTH_*`` environment variables and the order in which
credentials are resolved are those of ``kubernetes.core``, so the same inventory variables, AWX
credentials and execution environments work for both collections."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError

try:
    import kubernetes
    import urllib3
    import yaml  # a dependency of kubernetes; a kubeconfig that is not YAML raises its errors

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError as exc:  # reported by GpuShareModule with install instructions
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = exc

# The oldest kubernetes library known to work: both client generations kube/api.py speaks (before and after 35) were
# checked with 31.0.0 (by hand against a cluster, session 4; tests/unit/.../kube/test_api.py against a local
# stand-in, issue 29). The k8s_auth fragment's requirement and requirements.txt's floor say the same
# (tests/unit/test_versions.py); the tests run the pin of requirements-dev.txt.
KUBERNETES_MIN_VERSION = "31.0.0"

# Ansible option -> attribute of kubernetes.client.Configuration.
CONFIGURATION_ATTRIBUTES = dict(
    host="host",
    api_key="api_key",
    username="username",
    password="password",
    validate_certs="verify_ssl",
    ca_cert="ssl_ca_cert",
    client_cert="cert_file",
    client_key="key_file",
    proxy="proxy",
    no_proxy="no_proxy",
)

_client_pool = {}


def _load_kubeconfig(params):
    _check_files(params, ("kubeconfig",))
    options = dict(context=params.get("context"), persist_config=params.get("persist_config"))
    kubeconfig = params.get("kubeconfig")
    if isinstance(kubeconfig, dict):
        kubernetes.config.load_kube_config_from_dict(config_dict=kubeconfig, **options)
    else:
        kubernetes.config.load_kube_config(config_file=kubeconfig, **options)


# The options that name files; a missing file would otherwise surface as an unexplained TLS or loader error.
FILE_OPTIONS = ("ca_cert", "client_cert", "client_key")


def _check_files(params, options):
    for option in options:
        path = params.get(option)
        if isinstance(path, str) and not os.path.isfile(path):
            raise GpuShareError(
                "%s: %s is not a file on the host that runs the module; give the path of an existing file (or leave "
                "%s unset)." % (option, path, option)
            )


def _kubeconfig_source(params):
    """Which kubeconfig a loading failure is about, for the message."""
    kubeconfig = params.get("kubeconfig")
    if isinstance(kubeconfig, dict):
        return "the kubeconfig given as a dict"
    return "kubeconfig %s" % (kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config")


def build_configuration(params):
    """A ``kubernetes.client.Configuration`` from the connection options.

    Resolution order (kubernetes.core's): host plus a credential needs nothing else; otherwise a
    kubeconfig or context loads that kubeconfig; otherwise in-cluster, else the default kubeconfig.
    Explicit options then override what was loaded.
    """
    if params.get("host"):
        params = dict(params, host=params["host"].rstrip("/"))
    has_credential = params.get("api_key") or (params.get("username") and params.get("password"))
    _check_files(params, FILE_OPTIONS)
    try:
        if params.get("host") and has_credential:
            pass
        elif params.get("kubeconfig") or params.get("context"):
            _load_kubeconfig(params)
        else:
            try:
                kubernetes.config.load_incluster_config()
            except kubernetes.config.ConfigException:
                _load_kubeconfig(params)
    except (kubernetes.config.ConfigException, yaml.YAMLError, IOError, ValueError, TypeError) as exc:
        # A file that is YAML but not a mapping (any text file) fails inside the loader with a TypeError.
        cause = (
            "it is not a kubeconfig (a YAML mapping of clusters, contexts and users)"
            if isinstance(exc, TypeError)
            else str(exc).rstrip(".")
        )
        raise GpuShareError(
            "Could not load the Kubernetes client configuration from %s: %s. Set kubeconfig (or K8S_AUTH_KUBECONFIG) "
            "and context, or host with api_key (K8S_AUTH_HOST, K8S_AUTH_API_KEY)." % (_kubeconfig_source(params), cause)
        )

    configuration = kubernetes.client.Configuration.get_default_copy()
    _apply_explicit_options(configuration, params)
    refresh_from_kubeconfig = getattr(configuration, "refresh_api_key_hook", None)
    if refresh_from_kubeconfig is not None:
        # A kubeconfig user with a token installs a hook that the client runs before every request
        # and that re-applies the whole kubeconfig (host, TLS options, token): re-apply the explicit
        # options after it, so they keep winning while the token still refreshes.
        def refresh_keeping_explicit_options(config):
            refresh_from_kubeconfig(config)
            _apply_explicit_options(config, params)

        configuration.refresh_api_key_hook = refresh_keeping_explicit_options
    return configuration


def _apply_explicit_options(configuration, params):
    for option, attribute in CONFIGURATION_ATTRIBUTES.items():
        value = params.get(option)
        if value is None:
            continue
        if option == "api_key":
            # Replaces the whole dict, so a kubeconfig token (kept under "BearerToken") is not sent.
            value = {"authorization": "Bearer %s" % value}
        setattr(configuration, attribute, value)
    if params.get("proxy_headers"):
        headers = dict((k, v) for k, v in params["proxy_headers"].items() if v is not None)
        configuration.proxy_headers = urllib3.util.make_headers(**headers)


def _configuration_digest(configuration, params):
    digest = hashlib.sha256()
    for attribute in sorted(set(CONFIGURATION_ATTRIBUTES.values())):
        digest.update(repr(getattr(configuration, attribute, None)).encode())
    digest.update(repr((params.get("impersonate_user"), params.get("impersonate_groups"))).encode())
    return digest.hexdigest()


def _add_impersonated_groups(api_client, groups):
    """Send one ``Impersonate-Group`` header per group, as the API server requires.

    Default headers are a plain dict (one value per name), so the groups are added to each request
    at the REST layer, which every client version routes through ``rest_client.request``.
    """
    from urllib3._collections import HTTPHeaderDict

    send = api_client.rest_client.request

    def request_with_groups(method, url, *args, **kwargs):
        headers = HTTPHeaderDict(kwargs.get("headers") or {})
        for group in groups:
            headers.add("Impersonate-Group", group)
        kwargs["headers"] = headers
        return send(method, url, *args, **kwargs)

    api_client.rest_client.request = request_with_groups


def get_api_client(params):
    """The API client for these connection options, created once per module run and option set."""
    configuration = build_configuration(params)
    digest = _configuration_digest(configuration, params)
    if digest not in _client_pool:
        api_client = kubernetes.client.ApiClient(configuration)
        if params.get("impersonate_user"):
            api_client.set_default_header("Impersonate-User", params["impersonate_user"])
        if params.get("impersonate_groups"):
            _add_impersonated_groups(api_client, params["impersonate_groups"])
        _client_pool[digest] = api_client
    return _client_pool[digest]
