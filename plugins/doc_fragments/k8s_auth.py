# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The connection options of kubernetes.core, with the same names, aliases and environment variables.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to an existing Kubernetes config file, or the configuration as a dictionary.
      - If not given, and neither I(host) with a credential nor I(context) is given, the in-cluster
        configuration is tried, then C(~/.kube/config).
      - Can also be specified via E(K8S_AUTH_KUBECONFIG).
    type: raw
  context:
    description:
      - The name of a context found in the config file.
      - Can also be specified via E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - URL of the Kubernetes API. With I(api_key), or I(username) and I(password), no kubeconfig is read.
      - Can also be specified via E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Token used to authenticate with the API (sent as a bearer token).
      - Can also be specified via E(K8S_AUTH_API_KEY).
    type: str
  username:
    description:
      - Username for basic authentication with the API.
      - Can also be specified via E(K8S_AUTH_USERNAME).
    type: str
  password:
    description:
      - Password for basic authentication with the API.
      - Can also be specified via E(K8S_AUTH_PASSWORD).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - Can also be specified via E(K8S_AUTH_VALIDATE_CERTS) or E(K8S_AUTH_VERIFY_SSL); any value but
        C(0), C(false) or C(no) (case-insensitive) means true, as in kubernetes.core.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA certificate used to verify the API server.
      - Can also be specified via E(K8S_AUTH_CA_CERT) or E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate used to authenticate with the API.
      - Can also be specified via E(K8S_AUTH_CLIENT_CERT) or E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of I(client_cert).
      - Can also be specified via E(K8S_AUTH_CLIENT_KEY) or E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API through.
      - Can also be specified via E(K8S_AUTH_PROXY).
    type: str
  no_proxy:
    description:
      - Comma-separated hosts or networks that bypass I(proxy).
      - Can also be specified via E(K8S_AUTH_NO_PROXY).
    type: str
  proxy_headers:
    description:
      - Headers sent to the proxy.
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(username:password) for the proxy.
          - Can also be specified via E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH).
        type: str
      basic_auth:
        description:
          - C(username:password) for basic authentication.
          - Can also be specified via E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH).
        type: str
      user_agent:
        description:
          - User agent sent to the proxy.
          - Can also be specified via E(K8S_AUTH_PROXY_HEADERS_USER_AGENT).
        type: str
  persist_config:
    description:
      - Whether to save refreshed tokens back into the kubeconfig file.
      - Can also be specified via E(K8S_AUTH_PERSIST_CONFIG).
    type: bool
  impersonate_user:
    description:
      - Username to impersonate for every API call.
      - Can also be specified via E(K8S_AUTH_IMPERSONATE_USER).
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate for every API call.
      - Can also be specified via E(K8S_AUTH_IMPERSONATE_GROUPS), comma-separated (C(Group1,Group2)).
    type: list
    elements: str
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - PyYAML >= 5.4
notes:
  - The connection options behave as in M(kubernetes.core.k8s), including the AWX/Tower
    "OpenShift or Kubernetes API Bearer Token" credential, which sets E(K8S_AUTH_HOST),
    E(K8S_AUTH_API_KEY), E(K8S_AUTH_VERIFY_SSL) and E(K8S_AUTH_SSL_CA_CERT).
"""
