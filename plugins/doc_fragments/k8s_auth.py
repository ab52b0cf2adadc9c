# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # What every module adds to kubernetes.core's connection options (gpushare.k8s.k8s_auth_options, generated from
    # kubernetes.core's fragment, which each module extends too): the action group, the libraries, and how AWX's
    # credential reaches the options.
    DOCUMENTATION = r"""
attributes:
  action_group:
    description:
      - Use C(group/gpushare.k8s.gpushare) in C(module_defaults) to set the connection options once for every
        module of this collection, of C(kubernetes.core)'s C(k8s) group, and for M(kubernetes.core.helm) (which the
        roles install charts with; it takes only O(kubeconfig), O(context), O(host), O(api_key), O(ca_cert) and
        O(validate_certs)).
    support: full
    membership:
      - gpushare.k8s.gpushare
requirements:
  - python >= 3.9
  - kubernetes >= 31.0.0
  - PyYAML >= 5.4
notes:
  - The connection options and their E(K8S_AUTH_*) environment variables behave as in M(kubernetes.core.k8s),
    including the AWX/Tower "OpenShift or Kubernetes API Bearer Token" credential, which sets E(K8S_AUTH_HOST),
    E(K8S_AUTH_API_KEY), E(K8S_AUTH_VERIFY_SSL) and E(K8S_AUTH_SSL_CA_CERT).
"""
