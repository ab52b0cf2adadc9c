# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution environment's helm step (extensions/environments/install_helm.py): helm's own release by default,
another archive only with its digest, nothing unpacked from an archive whose digest differs, nothing installed that
does not report the pinned version. Archives are read from ``file://`` URLs (urllib's own scheme); the "helm" in them
is a shell script answering ``helm version`` as helm does."""

import hashlib
import importlib.util
import io
import os
import subprocess
import sys
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
SCRIPT = os.path.join(ROOT, "extensions", "environments", "install_helm.py")


def load_script():
    spec = importlib.util.spec_from_file_location("install_helm", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


install_helm = load_script()


def archive(tmp_path, version, name="linux-amd64/helm"):
    """A release-shaped archive whose helm reports ``version``; returns (file:// URL, SHA-256)."""
    script = b"#!/bin/sh\nprintf '%s'\n" % version.encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        member = tarfile.TarInfo(name)
        member.size, member.mode = len(script), 0o755
        tar.addfile(member, io.BytesIO(script))
    path = tmp_path / "helm.tar.gz"
    path.write_bytes(buffer.getvalue())
    return path.as_uri(), hashlib.sha256(buffer.getvalue()).hexdigest()


def run(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)


def test_the_default_is_helms_own_release_with_its_published_digest(monkeypatch):
    monkeypatch.setattr(install_helm.platform, "machine", lambda: "x86_64")
    assert install_helm.release_archive() == (
        "https://get.helm.sh/helm-v4.1.4-linux-amd64.tar.gz",
        "70b2c30a19da4db264dfd68c8a3664e05093a361cefd89572ffb36f8abfa3d09",
    )
    monkeypatch.setattr(install_helm.platform, "machine", lambda: "aarch64")
    assert install_helm.release_archive()[0].endswith("linux-arm64.tar.gz")


def test_an_architecture_without_a_pinned_digest_is_refused(monkeypatch):
    monkeypatch.setattr(install_helm.platform, "machine", lambda: "s390x")
    with pytest.raises(install_helm.InstallError, match="pinned for amd64, arm64 only, this machine is s390x"):
        install_helm.release_archive()


def test_an_archive_with_its_digest_installs_helm(tmp_path):
    url, digest = archive(tmp_path, "v4.1.4")
    completed = run("--dest", str(tmp_path / "bin"), "--url", url, "--sha256", digest)
    assert completed.returncode == 0, completed.stderr
    assert subprocess.check_output([str(tmp_path / "bin" / "helm"), "version"], text=True) == "v4.1.4"


def test_an_archive_whose_digest_differs_is_refused_before_anything_is_unpacked(tmp_path):
    url, _ = archive(tmp_path, "v4.1.4")
    completed = run("--dest", str(tmp_path / "bin"), "--url", url, "--sha256", "0" * 64)
    assert completed.returncode == 1
    assert "has SHA-256" in completed.stderr and "expected %s: refused" % ("0" * 64) in completed.stderr
    assert not (tmp_path / "bin" / "helm").exists()


def test_another_archive_needs_its_digest_and_a_digest_needs_its_archive(tmp_path):
    url, digest = archive(tmp_path, "v4.1.4")
    assert "needs the archive's --sha256" in run("--dest", str(tmp_path), "--url", url).stderr
    assert "--sha256 checks the archive of --url" in run("--dest", str(tmp_path), "--sha256", digest).stderr


def test_a_helm_of_another_version_is_not_installed(tmp_path):
    url, digest = archive(tmp_path, "v3.19.0")
    completed = run("--dest", str(tmp_path / "bin"), "--url", url, "--sha256", digest)
    assert "reports v3.19.0, expected v4.1.4" in completed.stderr
    assert not (tmp_path / "bin" / "helm").exists()


def test_an_archive_without_helm_is_refused(tmp_path):
    url, digest = archive(tmp_path, "v4.1.4", name="linux-amd64/README.md")
    assert (
        "no <os>-<arch>/helm file in the archive"
        in run("--dest", str(tmp_path), "--url", url, "--sha256", digest).stderr
    )
