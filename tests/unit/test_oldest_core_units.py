# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/oldest_core_units.py picks, for the run on the oldest ansible-core, the unit tests whose imports reach the
collection's code that imports ansible-core, and those only."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SPEC = importlib.util.spec_from_file_location("oldest_core_units", os.path.join(ROOT, "tools", "oldest_core_units.py"))
oldest_core_units = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(oldest_core_units)


def test_the_tests_reaching_ansible_core_through_the_collection_are_picked():
    picked = oldest_core_units.unit_tests_importing_ansible()

    # The module's entry point (GpuShareModule), the options' checks (ArgumentSpecValidator), the connection options.
    assert "tests/unit/plugins/test_missing_solver.py" in picked
    assert "tests/unit/plugins/module_utils/test_args.py" in picked
    assert "tests/unit/plugins/module_utils/test_ansible_module.py" in picked
    assert "tests/unit/test_connection_fragment.py" in picked
    # Pure logic; ansible-core's own utilities; ansible-rulebook's validator.
    assert "tests/unit/plugins/module_utils/plan/preflight/test_checks.py" not in picked
    assert "tests/unit/test_versions.py" not in picked
    assert "tests/unit/test_eda_objects.py" not in picked


def test_imports_are_followed_through_helpers_and_lazy_imports(tmp_path):
    (tmp_path / "helper.py").write_text(
        "def run():\n    from ansible_collections.gpushare.k8s.plugins.module_utils import ansible_module\n"
    )
    (tmp_path / "test_x.py").write_text("from helper import run\n")
    (tmp_path / "test_y.py").write_text("import ansible.module_utils.basic\n")

    assert oldest_core_units.reaches_plugin_importing_ansible(str(tmp_path / "test_x.py"), set())
    assert not oldest_core_units.reaches_plugin_importing_ansible(str(tmp_path / "test_y.py"), set())


def test_helpers_are_found_in_the_folders_above_a_test(tmp_path, monkeypatch):
    unit = tmp_path / "unit"
    (unit / "layer").mkdir(parents=True)
    (unit / "helper.py").write_text(
        "def run():\n    from ansible_collections.gpushare.k8s.plugins.module_utils import ansible_module\n"
    )
    (unit / "layer" / "test_x.py").write_text("from helper import run\n")
    monkeypatch.setattr(oldest_core_units, "UNIT", str(unit))

    assert oldest_core_units.reaches_plugin_importing_ansible(str(unit / "layer" / "test_x.py"), set())
