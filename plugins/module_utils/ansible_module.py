# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module wrapper every gpushare.k8s module uses."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpushare.k8s.plugins.module_utils.args import AUTH_ARG_SPEC
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


class GpuShareModule(object):
    """Owns the argument spec (module options plus connection options), the missing-library and
    too-old-library errors, the API client, and turning ``GpuShareError`` into ``fail_json``."""

    def __init__(self, argument_spec, **kwargs):
        spec = dict(AUTH_ARG_SPEC)
        spec.update(argument_spec)
        self.ansible = AnsibleModule(argument_spec=spec, supports_check_mode=True, **kwargs)
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
            self.ansible.fail_json(**exc.to_result())
        if not self.diff_mode:
            result.pop("diff", None)
        self.ansible.exit_json(**result)
