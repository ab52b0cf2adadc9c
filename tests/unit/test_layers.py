# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layering of the collection's Python (docs/DESIGN.md, "Layers"), checked on the import statements of every file:
module_utils' layers among themselves, and every file outside module_utils that imports it (modules, filters, doc
fragments, the EDA event source), each kind with its own rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PACKAGE = "ansible_collections.gpushare.k8s.plugins.module_utils."
# The parts of run/ every runner shares; every other file of run/ is one module family's runner.
SHARED_RUN_PARTS = (
    "run.operator",
    "run.targets",
    "run.machine_api",
    "run.writer",
    "run.drain",
    "run.mig_rollout",
    "run.result",
)
# layer -> the layers its files may import from
ALLOWED = {
    "rbac": set(),
    "errors": {"rbac"},
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
    """The module_utils modules ``path`` imports, relative to module_utils (``from ...module_utils import args``
    too)."""
    with open(path) as stream:
        tree = ast.parse(stream.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            yield node.module[len(PACKAGE) :]
        elif isinstance(node, ast.ImportFrom) and node.module == PACKAGE[:-1]:
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE):
                    yield alias.name[len(PACKAGE) :]


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


# Outside module_utils: folder -> the module_utils layers its files may import. A module (plugins/modules) is checked by
# test_a_module_imports_its_entry_points_only instead.
OUTSIDE = {
    # Filters run on the controller over facts a task returned: pure code only, never a request or a runner.
    "plugins/filter": {"errors", "nvidia", "plan"},
    # Documentation only.
    "plugins/doc_fragments": set(),
    # The gpu_demand event source is thin (DESIGN.md, "Event-Driven Ansible"): its options' check (args.py), the
    # watches (kube/) and the demand it hands on (plan/sharing_planner/demand_events); never a module's runner or
    # GpuShareModule (no AnsibleModule in ansible-rulebook).
    "extensions/eda/plugins": {"errors", "args", "kube", "nvidia", "plan"},
}
# What a module file may import besides GpuShareModule (ansible_module), its spec (args) and its one runner, and why.
# Each entry is a known exception to "a module names its entry points only", kept here so that a new one is a decision.
MODULE_EXCEPTIONS = {
    # HIGHSPY_IMPORT_ERROR and HIGHSPY_REQUIREMENT: the guarded import's result, for GpuShareModule's missing-library
    # message (ansible_module.py's `libraries`), read where the solver imports highspy.
    "gpu_sharing_plan": {"plan.sharing_planner.solver"},
}


def python_files(*folders):
    for top in folders:
        for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.join(folder, name)


def outside_files():
    """Every Python file outside module_utils (and outside tests) that imports module_utils."""
    for path in python_files("plugins", "extensions"):
        relative = os.path.relpath(path, ROOT)
        if not relative.startswith(os.path.join("plugins", "module_utils") + os.sep) and list(imports_of(path)):
            yield relative


def rule_folder(relative):
    return next((folder for folder in sorted(OUTSIDE) if relative.startswith(folder + os.sep)), None)


def test_every_file_importing_module_utils_has_a_rule():
    unruled = [
        path
        for path in outside_files()
        if rule_folder(path) is None and not path.startswith(os.path.join("plugins", "modules") + os.sep)
    ]

    assert list(outside_files()) and unruled == []


@pytest.mark.parametrize("relative", sorted(path for path in outside_files() if rule_folder(path)))
def test_files_outside_module_utils_import_only_their_layers(relative):
    allowed = OUTSIDE[rule_folder(relative)]
    for imported in imports_of(os.path.join(ROOT, relative)):
        assert imported.split(".")[0] in allowed, "%s imports %s" % (relative, imported)
        assert not imported.startswith("run."), "%s imports the runner %s" % (relative, imported)


MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "plugins", "modules")) if name.endswith(".py"))


@pytest.mark.parametrize("module", MODULES)
def test_a_module_imports_its_entry_points_only(module):
    """A module file holds its documentation and one call: GpuShareModule with its spec from args.py, running its
    one runner (docs/DESIGN.md, "Layers"); never kube/, plan/, nvidia/ or a shared part of run/ directly."""
    imported = set(imports_of(os.path.join(ROOT, "plugins", "modules", module + ".py")))
    module_runners = imported & runners()

    assert len(module_runners) == 1, "%s runs %s" % (module, sorted(module_runners) or "no runner")
    assert imported - module_runners - MODULE_EXCEPTIONS.get(module, set()) == {"ansible_module", "args"}


def test_the_module_exceptions_are_still_needed():
    for module, allowed in MODULE_EXCEPTIONS.items():
        assert allowed <= set(imports_of(os.path.join(ROOT, "plugins", "modules", module + ".py"))), module
