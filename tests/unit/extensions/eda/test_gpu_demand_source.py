# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_demand event source loads as ansible-rulebook loads it (``runpy.run_path`` of the file that
``ansible-galaxy collection list`` found) wherever Ansible's collection paths put this collection and kubernetes.core:
each under its own entry of ``ANSIBLE_COLLECTIONS_PATH``, named with or without its ``ansible_collections`` folder
(issue 37); its DOCUMENTATION says what its argument spec takes (its EXAMPLES against ansible-rulebook's schema:
tests/unit/test_eda_objects.py). Its watches and hand-off run against the real API server and the real ansible-rulebook
(tests/integration/test_eda_*.py). Also run on the oldest ansible-core claimed (tools/oldest_core_units.py)."""

import ast
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpushare.k8s.plugins.module_utils.args import GPU_DEMAND_ARG_SPEC

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


def test_where_kubernetes_core_is_found_beside_it_no_controller_code_is_imported(apart):
    """Ansible's configuration (controller code) is read only when kubernetes.core is not beside this collection: a
    process that imports the source and also runs modules in-process (the integration tests) must not import it."""
    tmp_path, env = apart
    env["PYTHONPATH"] = os.path.join(REPO, ".build")
    imported = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; import ansible_collections.gpushare.k8s.extensions.eda.plugins.event_source.gpu_demand; "
            "print(sorted(name for name in sys.modules if name in ('ansible.constants', 'ansible.config')))",
        ],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
    )
    assert (imported.returncode, imported.stdout.strip()) == (0, "[]"), imported.stderr


def test_without_that_entry_kubernetes_core_is_missing(apart):
    """The check above is not met by some other copy of kubernetes.core."""
    tmp_path, env = apart
    env["ANSIBLE_COLLECTIONS_PATH"] = str(tmp_path / "ours")
    loaded = load(tmp_path, env)
    assert loaded.returncode == 1 and "No module named 'ansible_collections.kubernetes'" in loaded.stderr


def source_string(name):
    with open(os.path.join(REPO, SOURCE)) as stream:
        tree = ast.parse(stream.read())
    [value] = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and [target.id for target in node.targets] == [name]
    ]
    return value


def test_the_documented_options_are_the_ones_the_source_takes():
    documentation = yaml.safe_load(source_string("DOCUMENTATION"))
    # The connection options: the modules' fragment, which tests/unit/test_connection_fragment.py keeps equal to them.
    assert documentation["extends_documentation_fragment"] == ["gpushare.k8s.k8s_auth_options"]
    documented = documentation["options"]
    assert set(documented) == set(GPU_DEMAND_ARG_SPEC)
    for name, spec in GPU_DEMAND_ARG_SPEC.items():
        assert (documented[name]["type"], documented[name].get("default")) == (
            spec.get("type", "str"),
            spec.get("default"),
        ), name
