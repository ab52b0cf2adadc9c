# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module wrapper every gpushare.k8s module uses."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpushare.k8s.plugins.module_utils.args import AUTH_ARG_SPEC, option_problems
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.client import (
    HAS_KUBERNETES,
    KUBERNETES_IMPORT_ERROR,
    KUBERNETES_MIN_VERSION,
    get_api_client,
)


def _version_tuple(version):
    parts = []
    for part in version.split("."):
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


# What a transport failure's text shows, and what the user can change about it.
CONNECTION_HINTS = (
    (
        "CERTIFICATE_VERIFY_FAILED",
        " The API server's certificate is not signed by a CA this host trusts: give that CA in ca_cert "
        "(K8S_AUTH_SSL_CA_CERT) or the kubeconfig, or turn verification off on purpose with validate_certs: false.",
    ),
    (
        "(HTTP 401)",
        " The API server did not accept the credentials: check the credentials (api_key or K8S_AUTH_API_KEY, "
        "username and password, client_cert and client_key, or the kubeconfig's user and context).",
    ),
    (
        "cannot reach the Kubernetes API",
        " Check the API server's address (host, K8S_AUTH_HOST or the kubeconfig's server) and that this host can "
        "reach it.",
    ),
)


def connection_hint(msg, kube):
    """The sentence that names the server a transport failure was about and what to check; empty otherwise."""
    for marker, hint in CONNECTION_HINTS:
        if marker in msg:
            server = kube.api_client.configuration.host if kube is not None else None
            return (" Server: %s." % server if server else "") + hint
    return ""


class GpuShareModule(object):
    """Owns the argument spec (module options plus connection options), the missing-library and
    too-old-library errors, the API client, and turning ``GpuShareError`` into ``fail_json``."""

    def __init__(self, argument_spec, libraries=(), **kwargs):
        """``libraries``: (requirement, import error or None) of the Python libraries the module needs besides
        kubernetes, such as gpu_sharing_plan's solver."""
        spec = dict(AUTH_ARG_SPEC)
        spec.update(argument_spec)
        self.ansible = AnsibleModule(argument_spec=spec, supports_check_mode=True, **kwargs)
        for requirement, import_error in libraries:
            if import_error is not None:
                self.ansible.fail_json(msg=missing_required_lib(requirement), exception=import_error)
        if not HAS_KUBERNETES:
            self.ansible.fail_json(
                msg=missing_required_lib("kubernetes>=%s" % KUBERNETES_MIN_VERSION),
                exception="".join(
                    traceback.format_exception_only(type(KUBERNETES_IMPORT_ERROR), KUBERNETES_IMPORT_ERROR)
                ),
            )
        import kubernetes

        if _version_tuple(kubernetes.__version__) < _version_tuple(KUBERNETES_MIN_VERSION):
            self.ansible.fail_json(
                msg="This module needs the Python library kubernetes>=%s on the host that runs it; found %s."
                % (KUBERNETES_MIN_VERSION, kubernetes.__version__)
            )
        problems = option_problems(self.ansible.params)
        if problems:
            self.ansible.fail_json(msg="Invalid option(s), nothing was changed: %s." % "; ".join(problems))
        self._kube = None

    @property
    def params(self):
        return self.ansible.params

    @property
    def check_mode(self):
        return self.ansible.check_mode

    @property
    def diff_mode(self):
        return self.ansible._diff

    @property
    def kube(self):
        """The KubeApi for this module's connection options, created on first use."""
        if self._kube is None:
            from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import KubeApi

            self._kube = KubeApi(get_api_client(self.params))
        return self._kube

    def run(self, runner):
        """Call ``runner(self) -> result dict`` and exit with it, or fail with the error it raised."""
        try:
            result = runner(self)
        except GpuShareError as exc:
            failure = exc.to_result()
            hint = connection_hint(failure["msg"], self._kube)
            if hint:
                failure["msg"] = failure["msg"].rstrip(".") + "." + hint
            self.ansible.fail_json(**failure)
        if not self.diff_mode:
            result.pop("diff", None)
        self.ansible.exit_json(**result)
