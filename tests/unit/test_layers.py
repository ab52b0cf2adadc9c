# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layering of module_utils (docs/DESIGN.md), checked on the import statements of every file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PACKAGE = "ansible_collections.gpushare.k8s.plugins.module_utils."
# The parts of run/ every runner shares; every other file of run/ is one module family's runner.
SHARED_RUN_PARTS = ("run.operator", "run.targets", "run.writer", "run.drain", "run.mig_rollout", "run.result")
# layer -> the layers its files may import from
ALLOWED = {
    "errors": set(),
    "nvidia": {"errors", "nvidia"},
    "plan": {"errors", "nvidia", "plan"},
    "kube": {"errors", "kube"},
    "args": {"errors", "nvidia"},
    "run": {"errors", "nvidia", "plan", "kube", "run"},
    "ansible_module": {"errors", "args", "kube"},
}


def runners():
    return set(module for module, _path in module_names() if module.startswith("run.")) - set(SHARED_RUN_PARTS)


def module_names():
    for folder, _dirs, files in os.walk(MODULE_UTILS):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and name != "__init__.py":
                yield os.path.relpath(path, MODULE_UTILS)[:-3].replace(os.sep, "."), path


def test_packages_have_no_code_of_their_own():
    """ansible-test 2.16's empty-init sanity test (2.16 is the oldest core meta/runtime.yml claims) wants every
    module_utils ``__init__.py`` empty: a package's code goes in a module of it (plan/preflight/checks.py)."""
    inits = [
        os.path.join(folder, "__init__.py") for folder, _dirs, files in os.walk(MODULE_UTILS) if "__init__.py" in files
    ]

    assert inits and [path for path in inits if os.path.getsize(path)] == []


def imports_of(path):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            yield node.module[len(PACKAGE) :]


@pytest.mark.parametrize("module, path", sorted(module_names()))
def test_each_layer_imports_only_the_layers_below_it(module, path):
    layer = module.split(".")[0]
    for imported in imports_of(path):
        assert imported.split(".")[0] in ALLOWED[layer], "%s imports %s" % (module, imported)
        if module in runners():
            assert imported not in runners(), "runner %s imports runner %s" % (module, imported)


def test_the_shared_run_parts_exist():
    assert set(SHARED_RUN_PARTS) <= set(module for module, _path in module_names())


def test_every_layer_is_known():
    assert set(module.split(".")[0] for module, _path in module_names()) == set(ALLOWED)
