# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared fixtures; the object builders live in ``k8s_objects.py`` next to this file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest


@pytest.fixture
def clean_k8s_env(monkeypatch, tmp_path):
    """No K8S_AUTH_* variable, no in-cluster service account, KUBECONFIG pointing at a missing file,
    and kubernetes' process-wide default Configuration restored afterwards (load_kube_config sets it)."""
    kubernetes = pytest.importorskip("kubernetes")
    for name in list(os.environ):
        if name.startswith("K8S_AUTH_"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setattr(kubernetes.client.Configuration, "_default", None)
    return tmp_path
