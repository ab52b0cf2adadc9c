# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/DESIGN.md names only what exists: a cheap check that fails the day the doc goes stale. The rule, on every
backticked token (`...`) of the doc:

- A repository path must exist: a token whose first segment is a top-level entry of the repository (``tests/...``,
  ``plugins/...``) or a folder of plugins/module_utils/ (``kube/api.py``, ``plan/sharing_planner/``), or that starts
  with ``.../`` in a table row (the folder of the rows above it: ``.../solver.py``), or a bare file name ending in .py,
  .yml, .yaml, .sh or .j2 (``kubelet_exec.py``, ``site.yml``: some file of that name in the repository, except the
  NOT_FILES below). A name relative to a folder the heading names (``plan/sharing_planner/``) is found there too.
  ``<...>`` stands for any name, ``*`` and ``...`` for anything; what the tests write (``tests/output/``) is not
  checked. ``path.name`` is a path and a name (``nvidia/gpu_pods.pod_name``): the path is checked here, the name below.
- A dotted name whose head is a Python file of the collection (``mig_parted.gpu_indices``, ``kube/wait.follow_forever``,
  ``solver.solve_lexicographic``) must be defined in that file: a top-level function, class or assignment, or, for
  ``Class.member``, a member of that class. A class's member (``KubeApi.may``) must be one of that class.
- In the rows of the Layers table whose first cell names Python files, every backticked identifier that looks like
  code (CamelCase, UPPER_CASE or snake_case with an underscore) must be defined in one of those files (a class's
  members count), imported by one of them, or be one of EXTERNAL (Ansible's and the Kubernetes client's names).
- The runners the Layers diagram lists are plugins/module_utils/run/'s files but the shared parts, which it lists
  apart; both lists are the whole of run/.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import fnmatch
import functools
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DESIGN = os.path.join(ROOT, "docs", "DESIGN.md")
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
EXTENSIONS = (".py", ".yml", ".yaml", ".md", ".json", ".sh", ".toml", ".txt")
# Backticked names in the Layers table that are not the collection's: Ansible's, the Kubernetes client's, go-nvlib's.
EXTERNAL = {
    "K8S_AUTH_*",
    "env_fallback",
    "fail_json",
    "ApiClient",
    "CoreV1Api",
    "strconv.ParseUint",
}
# Bare file names the doc uses that are no file of the repository: the key of mig-parted's ConfigMap.
NOT_FILES = {"config.yaml"}
BARE_EXTENSIONS = (".py", ".yml", ".yaml", ".sh", ".j2")
GENERATED = ("tests/output/",)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DOTTED = re.compile(r"^([A-Za-z_][A-Za-z0-9_/]*)\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?(?:\(.*\))?$")


def doc_lines():
    with open(DESIGN) as stream:
        return stream.read().splitlines()


def tokens_of(line):
    return re.findall(r"`([^`\n]+)`", line)


def looks_like_path(token):
    """Whether ``token`` names a file or folder of the repository, by the rule above."""
    if " " in token or "://" in token or "=" in token or token.startswith(("-", "~", "/")):
        return False
    if token.startswith(".../"):
        return True
    if "/" not in token:
        return token.endswith(BARE_EXTENSIONS) and token not in NOT_FILES
    first = token.split("/")[0]
    return "." not in first and (
        os.path.exists(os.path.join(ROOT, first)) or os.path.isdir(os.path.join(MODULE_UTILS, first))
    )


@functools.lru_cache(maxsize=None)
def repository_files():
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules")]
        relative = os.path.relpath(folder, ROOT)
        for name in dirs + files:
            found.append(os.path.normpath(os.path.join(relative, name)))
    return tuple(found)


def matches(pattern):
    """Whether the repository holds ``pattern`` (relative to its root; ``<...>`` and ``*`` match any name)."""
    pattern = os.path.normpath(pattern.rstrip("/"))
    if "<" not in pattern and "*" not in pattern:
        return os.path.exists(os.path.join(ROOT, pattern))
    glob = re.sub(r"<[^>]*>", "*", pattern)
    return any(fnmatch.fnmatchcase(path, glob) for path in repository_files())


def path_exists(token, folder):
    token = token.rstrip(",.:;")
    if token.startswith(GENERATED):
        return True
    dotted = re.match(r"^(.*/[A-Za-z0-9_]+)\.[A-Za-z_][A-Za-z0-9_]*(\(.*\))?$", token)
    if dotted and not token.endswith(EXTENSIONS):
        token = dotted.group(1) + ".py"
    token = token.replace("...", "*")
    if token.startswith("*/"):
        return folder is not None and matches(os.path.join(folder, token[2:]))
    candidates = [token, os.path.join("plugins", "module_utils", token)]
    if folder:
        candidates.append(os.path.join(folder, token))
    if any(matches(candidate) for candidate in candidates):
        return True
    return "/" not in token and any(os.path.basename(path) == token for path in repository_files())


def section_folder(heading):
    """The folder a heading names in backticks (``plan/sharing_planner/``), as a path from the root."""
    for token in tokens_of(heading):
        if token.endswith("/") and looks_like_path(token):
            return token if matches(token) else os.path.join("plugins", "module_utils", token)
    return None


def stale_paths():
    stale, folder, row_folder, in_code = [], None, None, False
    for number, line in enumerate(doc_lines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if line.startswith("#"):
            folder, row_folder = section_folder(line), None
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            first = tokens_of(cells[1])
            if first and first[0].endswith("/") and looks_like_path(first[0]):
                row_folder = first[0] if matches(first[0]) else os.path.join("plugins", "module_utils", first[0])
        for token in tokens_of(line):
            if looks_like_path(token) and not path_exists(token, row_folder or folder):
                stale.append("line %d: %s" % (number, token))
    return stale


@functools.lru_cache(maxsize=None)
def python_files_named(name):
    """The Python files of the collection whose path ends with ``name`` (``wait`` or ``kube/wait``)."""
    found = []
    for top in ("plugins", "extensions"):
        for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for file_name in files:
                path = os.path.join(folder, file_name)
                if file_name.endswith(".py") and (path[:-3] + "/").endswith("/" + name + "/"):
                    found.append(path)
    return tuple(found)


@functools.lru_cache(maxsize=None)
def definitions(path):
    """Top-level names of ``path`` -> the member names of each class (an empty set for other names)."""
    with open(path) as stream:
        tree = ast.parse(stream.read())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in ast.walk(node):
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.Assign):
                    members.update(target.id for target in item.targets if isinstance(target, ast.Name))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name) and item.value.id == "self":
                    members.add(item.attr)
            names[node.name] = members
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = set()
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = set()
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = set()
        elif isinstance(node, (ast.Try, ast.If)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign):
                    names.update((t.id, set()) for t in sub.targets if isinstance(t, ast.Name))
    return names


@functools.lru_cache(maxsize=None)
def classes():
    """Every class of plugins/module_utils -> its members."""
    found = {}
    for folder, _dirs, files in os.walk(MODULE_UTILS):
        for name in files:
            if name.endswith(".py"):
                for top, members in definitions(os.path.join(folder, name)).items():
                    if members:
                        found.setdefault(top, set()).update(members)
    return found


def dotted_problem(token):
    """What is wrong with a dotted name of the collection's code, None when it is right or no such name."""
    match = DOTTED.match(token)
    if not match or token.endswith(EXTENSIONS):
        return None
    head, name, member = match.groups()
    if head in classes():
        return None if name in classes()[head] else "%s has no member %s" % (head, name)
    files = python_files_named(head)
    if not files:
        return None  # not the collection's (nvidia.com/gpu.present, ansible.builtin...)
    for path in files:
        defined = definitions(path)
        if name in defined and (member is None or member in defined[name]):
            return None
    return "%s is not defined in %s" % (token, ", ".join(os.path.relpath(path, ROOT) for path in files))


def stale_names():
    stale = []
    for number, line in enumerate(doc_lines(), 1):
        for token in tokens_of(line):
            problem = dotted_problem(token)
            if problem:
                stale.append("line %d: %s" % (number, problem))
    return stale


def imported_names(path):
    with open(path) as stream:
        tree = ast.parse(stream.read())
    return set(
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    )


def looks_like_code(token):
    return bool(IDENTIFIER.match(token)) and (
        "_" in token.strip("_") or token.isupper() or (token[0].isupper() and any(c.islower() for c in token[1:]))
    )


def layers_table_rows():
    lines = doc_lines()
    start = next(index for index, line in enumerate(lines) if line.startswith("## Layers"))
    end = next(index for index in range(start + 1, len(lines)) if lines[index].startswith("#"))
    folder = None
    for number in range(start, end):
        cells = lines[number].split("|")
        if not lines[number].startswith("|") or len(cells) < 3:
            continue
        paths = []
        for token in tokens_of(cells[1]):
            if token.endswith("/"):
                folder = token
            elif token.startswith(".../") and folder:
                paths.append(os.path.join(MODULE_UTILS, folder, token[4:]))
            elif token.endswith(".py"):
                paths.append(os.path.join(MODULE_UTILS, token))
        if paths:
            yield number + 1, paths, "|".join(cells[2:])


def undefined_in_rows():
    stale = []
    for number, paths, text in layers_table_rows():
        defined = set()
        for path in paths:
            for name, members in definitions(path).items():
                defined.add(name)
                defined.update(members)
            defined.update(imported_names(path))
        for token in tokens_of(text):
            if looks_like_code(token) and token not in defined and token not in EXTERNAL:
                stale.append(
                    "line %d: %s is not defined in %s"
                    % (number, token, ", ".join(os.path.relpath(path, ROOT) for path in paths))
                )
    return stale


def diagram_runners():
    """The runners and the shared parts of run/ the Layers diagram lists."""
    lines = doc_lines()
    start = next(index for index, line in enumerate(lines) if line.strip().startswith("run/"))
    runners, shared, index = [], [], start
    while "shared steps" not in lines[index]:
        runners += re.findall(r"[a-z_]+", lines[index].split("(")[0].replace("run/", " "))
        index += 1
    shared = re.findall(r"[a-z_]+", lines[index].replace("shared steps", ""))
    return set(runners), set(shared)


def test_every_path_the_design_names_exists():
    assert stale_paths() == []


def test_every_function_and_class_the_design_names_is_defined_where_it_says():
    assert stale_names() == []


def test_the_layers_table_names_what_its_files_define():
    assert undefined_in_rows() == []


def test_the_runner_list_is_run_s_files():
    runners, shared = diagram_runners()
    files = set(name[:-3] for name in os.listdir(os.path.join(MODULE_UTILS, "run")) if name.endswith(".py"))

    assert runners | shared == files - {"__init__"} and not runners & shared


def test_the_rule_sees_stale_names(monkeypatch, tmp_path):
    """The checks fail on what a stale doc says."""
    stale = tmp_path / "DESIGN.md"
    stale.write_text(
        "## Layers (`plugins/module_utils/`)\n"
        "```\n   run/  sharing · mig · gone\n         writer                     shared steps\n```\n"
        "| path | what goes there |\n|---|---|\n"
        "| `kube/wait.py` | `wait_for_objects`, `wait_for_everything` |\n"
        "## Next\n`plan/no_such_file.py`, `mig_parted.no_such_function`, `KubeApi.no_such_method`\n"
    )
    monkeypatch.setitem(globals(), "DESIGN", str(stale))

    assert [problem.split(": ", 1)[1] for problem in stale_paths()] == ["plan/no_such_file.py"]
    assert len(stale_names()) == 2
    assert undefined_in_rows() == ["line 8: wait_for_everything is not defined in plugins/module_utils/kube/wait.py"]
    assert diagram_runners() == ({"sharing", "mig", "gone"}, {"writer"})
