"""Runs, on the oldest ansible-core meta/runtime.yml admits (the venv ``tools/oldest_core_venv.py --units`` keeps), the
unit tests that exercise the collection's code where it imports ansible-core: each test file of tests/unit whose
imports, followed through the collection's files and the tests' own helpers, reach a file of plugins/ that imports
``ansible``. The rest of tests/unit is pure logic (no ansible-core in it), or tests what the newest tool chain reads
(ansible-rulebook, the pinned core's own utilities): the pinned core's run (``make test-unit``) covers it.

    python tools/oldest_core_units.py [pytest options]        # --list: print the files instead
"""

import ast
import functools
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oldest_core_venv import oldest_core_units_venv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT = os.path.join(ROOT, "tests", "unit")
PREFIX = "ansible_collections.gpushare.k8s."


@functools.lru_cache(maxsize=None)
def imported_names(path):
    """Every module name ``path`` imports, anywhere in it (a function's lazy import too); ``from a import b`` gives
    ``a`` and ``a.b`` (b may be a module)."""
    with open(path) as stream:
        tree = ast.parse(stream.read(), path)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module] + ["%s.%s" % (node.module, alias.name) for alias in node.names]
    return tuple(names)


def local_file(name, importer):
    """The file of the module ``name`` when it is the collection's or a helper of the tests, else None. A test helper is
    found beside its importer or in a folder above it within tests/unit, as pytest puts the first folder above a test
    package on ``sys.path`` (tests/unit/plugins/module_utils/plan/preflight/test_taints.py imports k8s_objects from
    tests/unit/plugins/module_utils/)."""
    if name.startswith(PREFIX):
        bases = [os.path.join(ROOT, *name[len(PREFIX) :].split("."))]
    elif "." not in name:
        bases, folder = [], os.path.dirname(importer)
        while True:
            bases.append(os.path.join(folder, name))
            if folder == UNIT or os.path.dirname(folder) == folder or not folder.startswith(UNIT + os.sep):
                break
            folder = os.path.dirname(folder)
    else:
        return None
    for base in bases:
        for path in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                return path
    return None


def reaches_plugin_importing_ansible(path, seen):
    """Whether ``path``'s imports reach a file of plugins/ that imports ``ansible``."""
    if path in seen:
        return False
    seen.add(path)
    names = imported_names(path)
    in_plugins = path.startswith(os.path.join(ROOT, "plugins") + os.sep)
    if in_plugins and any(name == "ansible" or name.startswith("ansible.") for name in names):
        return True
    return any(
        reaches_plugin_importing_ansible(found, seen)
        for found in (local_file(name, path) for name in names)
        if found is not None
    )


def unit_tests_importing_ansible():
    found = []
    for folder, _dirs, files in os.walk(UNIT):
        for name in files:
            path = os.path.join(folder, name)
            if name.startswith("test_") and name.endswith(".py") and reaches_plugin_importing_ansible(path, set()):
                found.append(os.path.relpath(path, ROOT))
    return sorted(found)


def main(argv):
    tests = unit_tests_importing_ansible()
    if not tests:
        raise SystemExit("no unit test reaches a plugin that imports ansible: tools/oldest_core_units.py is wrong")
    if argv == ["--list"]:
        print("\n".join(tests))
        return 0
    python = os.path.join(oldest_core_units_venv(), "bin", "python")
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + argv + tests
    return subprocess.call(command, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
