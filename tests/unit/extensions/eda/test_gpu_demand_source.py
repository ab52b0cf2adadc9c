# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_demand event source loads as ansible-rulebook loads it (``runpy.run_path`` of the file that
``ansible-galaxy collection list`` found) wherever Ansible's collection paths put this collection and kubernetes.core:
each under its own entry of ``ANSIBLE_COLLECTIONS_PATH``, named with or without its ``ansible_collections`` folder
(issue 37). Its watches and hand-off run against the real API server and the real ansible-rulebook
(tests/integration/test_eda_*.py)."""

import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))
KUBERNETES_CORE = os.path.join(REPO, ".build", "ansible_collections", "kubernetes", "core")
SOURCE = os.path.join("extensions", "eda", "plugins", "event_source", "gpu_demand.py")
LOAD = "import runpy, sys; print(sorted(name for name in runpy.run_path(sys.argv[1]) if name == 'main'))"


@pytest.fixture
def apart(tmp_path):
    """This collection under ``ours``, kubernetes.core under ``theirs``: two collection paths, nothing on
    PYTHONPATH, a HOME of its own (no ~/.ansible/collections), no ansible.cfg."""
    if not os.path.isdir(KUBERNETES_CORE):
        pytest.skip("kubernetes.core is installed by make venv")
    for root, namespace, name, target in (("ours", "gpushare", "k8s", REPO), ("theirs", "kubernetes", "core", None)):
        folder = tmp_path / root / "ansible_collections" / namespace
        folder.mkdir(parents=True)
        (folder / name).symlink_to(target or KUBERNETES_CORE)
    env = dict(
        (name, value)
        for name, value in os.environ.items()
        if not name.startswith("ANSIBLE_") and name not in ("PYTHONPATH", "HOME")
    )
    env["HOME"] = str(tmp_path / "home")
    return tmp_path, env


def load(tmp_path, env):
    source = tmp_path / "ours" / "ansible_collections" / "gpushare" / "k8s" / SOURCE
    return subprocess.run(
        [sys.executable, "-c", LOAD, str(source)], cwd=str(tmp_path), env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize("entry", ["theirs", os.path.join("theirs", "ansible_collections")])
def test_the_source_imports_kubernetes_core_from_another_collections_path_entry(apart, entry):
    tmp_path, env = apart
    env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join([str(tmp_path / "ours"), str(tmp_path / entry)])
    loaded = load(tmp_path, env)
    assert (loaded.returncode, loaded.stdout.strip()) == (0, "['main']"), loaded.stderr


def test_without_that_entry_kubernetes_core_is_missing(apart):
    """The check above is not met by some other copy of kubernetes.core."""
    tmp_path, env = apart
    env["ANSIBLE_COLLECTIONS_PATH"] = str(tmp_path / "ours")
    loaded = load(tmp_path, env)
    assert loaded.returncode == 1 and "No module named 'ansible_collections.kubernetes'" in loaded.stderr
