# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""No function of plugins/ or extensions/ is 60 lines or more, but those docs/DESIGN.md's "Long functions" names
(issue 39): a function a reader must hold whole is cut into named steps; one that stays long says why there."""

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
LONG = 60


def python_files():
    """Every .py file of plugins/ and extensions/, and the name DESIGN.md gives it: its path without ``.py``,
    relative to plugins/module_utils/ for the files there, else to the repository."""
    for top in ("plugins", "extensions"):
        for directory, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(directory, name)
                base = MODULE_UTILS if path.startswith(MODULE_UTILS + os.sep) else ROOT
                yield path, os.path.relpath(path, base)[: -len(".py")].replace(os.sep, "/")


def long_functions():
    """``{"name.function": lines}`` of every function of 60 lines or more (its def to its last line)."""
    found = {}
    for path, name in python_files():
        with open(path) as stream:
            tree = ast.parse(stream.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 >= LONG:
                found["%s.%s" % (name, node.name)] = node.end_lineno - node.lineno + 1
    return found


def documented_long_functions():
    """The functions DESIGN.md's "Long functions" section lists (``- `path.function`: why``)."""
    with open(os.path.join(ROOT, "docs", "DESIGN.md")) as stream:
        design = stream.read()
    section = design.split("\n### Long functions\n", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^- `([\w/]+\.\w+)`", section, re.MULTILINE))


def test_every_long_function_is_documented():
    documented = documented_long_functions()
    undocumented = ["%s (%d lines)" % item for item in sorted(long_functions().items()) if item[0] not in documented]
    assert not undocumented, "cut these into named steps, or say in DESIGN.md's Long functions why they stay long"


def test_every_documented_long_function_is_still_long():
    """A function cut since it was listed leaves the list."""
    assert documented_long_functions() - set(long_functions()) == set()
