# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module wrapper every gpushare.k8s module uses."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpushare.k8s.plugins.module_utils.client import (
    AUTH_ARG_SPEC,
    HAS_KUBERNETES,
    KUBERNETES_IMPORT_ERROR,
    KUBERNETES_MIN_VERSION,
    get_api_client,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError


# Where the GPU Operator is (documented by the gpushare.k8s.operator fragment).
OPERATOR_ARG_SPEC = dict(
    cluster_policy=dict(type="str"),
    namespace=dict(type="str"),
)


def wait_arg_spec(default_timeout):
    """``wait`` and ``wait_timeout``; each module documents what it waits for."""
    return dict(wait=dict(type="bool", default=True), wait_timeout=dict(type="int", default=default_timeout))


def _version_tuple(version):
    parts = []
    for part in version.split("."):
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


class GpuShareModule(object):
    """Owns the argument spec (module options plus connection options), the missing-library and
    too-old-library errors, the API client, and turning ``GpuShareError`` into ``fail_json``."""

    def __init__(self, argument_spec, **kwargs):
        spec = dict(AUTH_ARG_SPEC)
        spec.update(argument_spec)
        self.ansible = AnsibleModule(argument_spec=spec, supports_check_mode=True, **kwargs)
        if not HAS_KUBERNETES:
            self.ansible.fail_json(msg=missing_required_lib("kubernetes>=%s" % KUBERNETES_MIN_VERSION),
                                   exception="".join(traceback.format_exception_only(type(KUBERNETES_IMPORT_ERROR), KUBERNETES_IMPORT_ERROR)))
        import kubernetes

        if _version_tuple(kubernetes.__version__) < _version_tuple(KUBERNETES_MIN_VERSION):
            self.ansible.fail_json(msg="This module needs the Python library kubernetes>=%s on the host that runs it; found %s."
                                   % (KUBERNETES_MIN_VERSION, kubernetes.__version__))
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
            from ansible_collections.gpushare.k8s.plugins.module_utils.kube import KubeApi

            self._kube = KubeApi(get_api_client(self.params))
        return self._kube

    def run(self, runner):
        """Call ``runner(self) -> result dict`` and exit with it, or fail with the error it raised."""
        try:
            result = runner(self)
        except GpuShareError as exc:
            self.ansible.fail_json(**exc.to_result())
        if not self.diff_mode:
            result.pop("diff", None)
        self.ansible.exit_json(**result)
