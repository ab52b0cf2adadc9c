# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible_module.py: ``connection_hint``, the server and the fix added to a transport failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import connection_hint


class _Configuration(object):
    host = "https://api.example.com:6443"


class _Kube(object):
    class api_client(object):
        configuration = _Configuration()


@pytest.mark.parametrize(
    "msg, expected",
    [
        ("Failed to list nodes: cannot reach the Kubernetes API: connection refused", "Check the API server's address"),
        ("Failed to list nodes: cannot reach the Kubernetes API: [SSL: CERTIFICATE_VERIFY_FAILED]", "give that CA"),
        ("Failed to list nodes: Unauthorized (HTTP 401)", "check the credentials"),
    ],
)
def test_connection_failures_name_the_server_and_the_fix(msg, expected):
    hint = connection_hint(msg, _Kube())
    assert "Server: https://api.example.com:6443." in hint and expected in hint


def test_other_failures_get_no_connection_hint():
    assert connection_hint("Failed to patch node x: conflict (HTTP 409)", _Kube()) == ""
