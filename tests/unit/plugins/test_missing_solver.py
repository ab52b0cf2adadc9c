# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_sharing_plan on a host without highspy fails as kubernetes.core's modules do without kubernetes: Ansible's
missing_required_lib message, before any option is used or request made."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import io
import json

import pytest
from ansible.module_utils import basic

from ansible_collections.gpushare.k8s.plugins.modules import gpu_sharing_plan

try:
    from ansible.module_utils.testing import patch_module_args
except (
    ImportError
):  # before ansible-core 2.19 (tools/oldest_core_units.py runs this on 2.16): where AnsibleModule reads

    @contextlib.contextmanager
    def patch_module_args(args):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = json.dumps(dict(ANSIBLE_MODULE_ARGS=args)).encode()
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


def test_without_highspy_the_module_says_what_to_install(monkeypatch):
    monkeypatch.setattr(gpu_sharing_plan, "HIGHSPY_IMPORT_ERROR", "ModuleNotFoundError: No module named 'highspy'\n")
    output = io.StringIO()
    with patch_module_args(dict(kubeconfig="/nonexistent")), contextlib.redirect_stdout(output):
        with pytest.raises(SystemExit) as exit:
            gpu_sharing_plan.main()
    result = json.loads(output.getvalue())
    assert exit.value.code == 1 and result["failed"]
    assert result["msg"].startswith("Failed to import the required Python library (highspy>=1.15.1)")
