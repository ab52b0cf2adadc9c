# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generate the collection's reference docs from the docs the code carries.

Run from anywhere with the project's Python: ``python tools/gen_docs.py`` (``make docs``); ``--check`` writes
nothing and exits 1 naming each file that differs from what it would write (a unit test runs that check).

- ``plugins/doc_fragments/k8s_auth_options.py``: kubernetes.core's connection options (its ``k8s_auth_options``
  fragment, from the copy ``make venv`` installs), as this collection's own fragment: every module extends it, so
  that its documentation renders where kubernetes.core is not installed (Galaxy's and Automation Hub's importer runs
  ``ansible-doc`` with no dependency). The options are kubernetes.core's, parsed and written again (long lines
  folded, the result checked to parse to the same data); each ``version_added`` is marked as kubernetes.core's.
- ``docs/modules.md``: an index of every module of ``plugins/modules/``, its short description, check and diff
  mode support, one line per option (type, required or default, choices, the description's first sentence) and
  a link to the module's file. The options are the ones ``ansible-doc --json`` gives, doc fragments merged
  exactly as Ansible merges them (one ``ansible-doc`` run for every module, through a temporary collections path
  that links to this tree). The connection options of the ``k8s_auth`` fragment are listed once, in their own
  section, and each module links to it, unless the module documents one of them differently.
- ``plugins/modules/<module>.py``: the return values of the collection's RETURN fragments (the ``RETURN`` of
  ``plugins/doc_fragments/<fragment>.py``), written into each module's ``RETURN`` between the lines
  ``# BEGIN RETURN FRAGMENT gpushare.k8s.<fragment>...`` and ``# END RETURN FRAGMENT gpushare.k8s.<fragment>``,
  instead of the module extending the fragment: ansible-doc before 2.20 fails on a ``RETURN`` that extends one
  (ansible/ansible#85644), and the collection supports ansible-core 2.16 and newer. The fragment stays the one source.
- ``roles/<role>/README.md``: the text between ``<!-- BEGIN GENERATED VARIABLES -->`` and
  ``<!-- END GENERATED VARIABLES -->``, a table of the role's variables from ``meta/argument_specs.yml``. The
  rest of the README is written by hand; a role without a README gets a skeleton holding the table, and a README
  without the markers is an error.
"""

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTION = "gpushare.k8s"
NAMESPACE, NAME = COLLECTION.split(".")
MODULES_DIR = os.path.join(ROOT, "plugins", "modules")
# kubernetes.core, galaxy.yml's dependency, where `make venv` puts it: its k8s_auth_options fragment documents the
# connection options, which CONNECTION_FRAGMENT (generated) ships as this collection's own.
KUBERNETES_CORE_DIR = os.path.join(ROOT, ".build", "ansible_collections", "kubernetes")
KUBERNETES_CORE_FRAGMENT = os.path.join(KUBERNETES_CORE_DIR, "core", "plugins", "doc_fragments", "k8s_auth_options.py")
CONNECTION_FRAGMENT = os.path.join(ROOT, "plugins", "doc_fragments", "k8s_auth_options.py")
ROLES_DIR = os.path.join(ROOT, "roles")
MODULES_MD = os.path.join(ROOT, "docs", "modules.md")
BEGIN = "<!-- BEGIN GENERATED VARIABLES -->"
END = "<!-- END GENERATED VARIABLES -->"


class DocsError(Exception):
    pass


# --- reading ----------------------------------------------------------------------------------------------


def python_string(path, name, class_name=None):
    """The string literal assigned to ``name`` at the top of ``path`` (or in its class ``class_name``), or None."""
    with open(path) as stream:
        tree = ast.parse(stream.read(), path)
    body = tree.body
    if class_name:
        body = next((node.body for node in body if isinstance(node, ast.ClassDef) and node.name == class_name), [])
    for node in body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    return None


def module_names():
    return sorted(name[:-3] for name in os.listdir(MODULES_DIR) if name.endswith(".py") and name != "__init__.py")


def fragment_documentation(path):
    """The parsed DOCUMENTATION of the doc fragment ``path``."""
    return yaml.safe_load(python_string(path, "DOCUMENTATION", "ModuleDocFragment") or "") or {}


def connection_option_names():
    """The option names of the connection fragment."""
    return set(fragment_documentation(CONNECTION_FRAGMENT).get("options") or {})


def kubernetes_core_version():
    with open(os.path.join(KUBERNETES_CORE_DIR, "core", "MANIFEST.json")) as stream:
        return json.load(stream)["collection_info"]["version"]


def mark_version_added(options, collection):
    """``version_added_collection`` on every option (and suboption) that has a ``version_added``, as ansible-doc
    marks those of another collection's fragment: they are kubernetes.core's versions, not this collection's."""
    for option in options.values():
        if "version_added" in option:
            option.setdefault("version_added_collection", collection)
        mark_version_added(option.get("suboptions") or {}, collection)


# Longest line of the generated fragment (make test-format allows 120 columns).
FRAGMENT_WIDTH = 116


def fold_long_scalar(line):
    """A list item ``<indent>- <scalar>`` too long for one line (a URL has no space to fold at) as a double-quoted
    scalar split by escaped line breaks, which YAML joins with nothing in between."""
    indent, item = line.split("- ", 1)
    text = yaml.safe_load(item)
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    chunks, size = [], FRAGMENT_WIDTH - len(indent) - 4
    while escaped:
        cut = min(size, len(escaped))
        # Never split an escape, nor before a space (YAML strips a continuation line's leading spaces).
        while cut < len(escaped) and (escaped[cut - 1] == "\\" or escaped[cut] == " "):
            cut -= 1
        chunks.append(escaped[:cut])
        escaped = escaped[cut:]
    lines = ['%s- "%s\\' % (indent, chunks[0])] + ["%s  %s\\" % (indent, chunk) for chunk in chunks[1:]]
    return "\n".join(lines)[: -len("\\")] + '"'


def connection_fragment():
    """The text of CONNECTION_FRAGMENT: kubernetes.core's fragment, parsed and written again."""
    documentation = fragment_documentation(KUBERNETES_CORE_FRAGMENT)
    if not documentation.get("options"):
        raise DocsError("no options in %s (run make venv)" % KUBERNETES_CORE_FRAGMENT)
    mark_version_added(documentation["options"], "kubernetes.core")
    text = yaml.safe_dump(documentation, sort_keys=False, width=FRAGMENT_WIDTH - 16, default_flow_style=False)
    text = "\n".join(fold_long_scalar(line) if len(line) > FRAGMENT_WIDTH else line for line in text.splitlines())
    if yaml.safe_load(text) != documentation or max(len(line) for line in text.splitlines()) > FRAGMENT_WIDTH:
        raise DocsError("could not write kubernetes.core's connection options in %d columns" % FRAGMENT_WIDTH)
    return CONNECTION_FRAGMENT_TEMPLATE % (kubernetes_core_version(), text)


CONNECTION_FRAGMENT_TEMPLATE = '''# -*- coding: utf-8 -*-
# Copyright: (c) 2018, Red Hat | Ansible
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# GENERATED by tools/gen_docs.py (make docs) from kubernetes.core %s's doc fragment k8s_auth_options: do not edit.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # kubernetes.core's connection options (the modules take its argument spec, plugins/module_utils/args.py), as this
    # collection's own fragment: the modules' documentation then renders where kubernetes.core is not installed, as
    # Galaxy's and Automation Hub's importer runs ansible-doc. tests/unit/test_connection_fragment.py keeps it equal.
    DOCUMENTATION = r"""
%s
"""
'''


# --- RETURN fragments written into the modules -------------------------------------------------------------

RETURN_BEGIN = "# BEGIN RETURN FRAGMENT %s: make docs writes it from the fragment, edit that"
RETURN_END = "# END RETURN FRAGMENT %s"
_RETURN_BLOCK = re.compile(
    r"^# BEGIN RETURN FRAGMENT (?P<fragment>%s\.\w+)\b.*\n(?P<body>(?:.*\n)*?)# END RETURN FRAGMENT (?P=fragment)\n"
    % re.escape(COLLECTION),
    re.M,
)


def fragment_path(fragment):
    """The file of the doc fragment ``fragment`` (``gpushare.k8s.<name>``)."""
    return os.path.join(ROOT, "plugins", "doc_fragments", fragment[len(COLLECTION) + 1 :] + ".py")


def fragment_return(fragment):
    """The text of the ``RETURN`` of the doc fragment ``fragment``, one newline at its end."""
    path = fragment_path(fragment)
    text = python_string(path, "RETURN", "ModuleDocFragment") if os.path.isfile(path) else None
    if not text or not text.strip():
        raise DocsError("%s has no RETURN (plugins/doc_fragments/)" % fragment)
    return text.strip("\n") + "\n"


def return_fragments_written(text):
    """The RETURN fragments ``text`` (a module's source) holds a copy of: ``[(fragment, copy), ...]`` in order."""
    return [(match.group("fragment"), match.group("body")) for match in _RETURN_BLOCK.finditer(text)]


def module_with_return_fragments(path):
    """The text of the module ``path`` with each RETURN fragment it names written again from the fragment."""
    text = read(path)

    def write_again(match):
        fragment = match.group("fragment")
        return "%s\n%s%s\n" % (RETURN_BEGIN % fragment, fragment_return(fragment), RETURN_END % fragment)

    return _RETURN_BLOCK.sub(write_again, text)


def ansible_doc(names):
    """The docs of ``names`` as ``ansible-doc --json`` gives them (fragments merged), by module name."""
    with tempfile.TemporaryDirectory(prefix="gen-docs-") as tmp:
        namespace_dir = os.path.join(tmp, "ansible_collections", NAMESPACE)
        os.makedirs(namespace_dir)
        os.symlink(ROOT, os.path.join(namespace_dir, NAME))
        env = dict(
            os.environ,
            ANSIBLE_COLLECTIONS_PATH=tmp,
            ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
            ANSIBLE_CONFIG=os.path.join(ROOT, "tests", "ansible.cfg"),
            ANSIBLE_NOCOLOR="1",
        )
        command = [sys.executable, "-m", "ansible.cli.doc", "--json", "-t", "module"]
        process = subprocess.run(
            command + ["%s.%s" % (COLLECTION, name) for name in names],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            check=False,
        )
    if process.returncode:
        raise DocsError("ansible-doc failed (%d): %s" % (process.returncode, process.stderr.strip()))
    found = json.loads(process.stdout)
    docs = {}
    for name in names:
        entry = found.get("%s.%s" % (COLLECTION, name)) or {}
        if not entry.get("doc"):
            raise DocsError("ansible-doc gave no documentation for %s: %s" % (name, process.stderr.strip()))
        docs[name] = entry["doc"]
    return docs


# --- Ansible markup to Markdown -------------------------------------------------------------------------

_OPTION_REF = r"(?:[\w.]+#\w+:)?([^)]+)"  # O(gpushare.k8s.gpu_reset#module:restore=true) -> restore=true
_MARKUP = [
    (re.compile(r"\bL\(([^)]+?),\s*([^)]+)\)"), lambda m, link: "[%s](%s)" % (m.group(1), m.group(2))),
    (re.compile(r"\bU\(([^)]+)\)"), lambda m, link: "<%s>" % m.group(1)),
    (re.compile(r"\bR\(([^)]+?),\s*([^)]+)\)"), lambda m, link: m.group(1)),
    (re.compile(r"\bM\(([^)]+)\)"), lambda m, link: link(m.group(1))),
    (re.compile(r"\bP\(([^#)]+)(?:#[^)]*)?\)"), lambda m, link: "`%s`" % m.group(1)),
    (re.compile(r"\bRV\(" + _OPTION_REF + r"\)"), lambda m, link: "`%s`" % m.group(1)),
    (re.compile(r"\bO\(" + _OPTION_REF + r"\)"), lambda m, link: "`%s`" % m.group(1)),
    (re.compile(r"\b[CVEI]\(([^)]+)\)"), lambda m, link: "`%s`" % m.group(1)),
    (re.compile(r"\bB\(([^)]+)\)"), lambda m, link: "**%s**" % m.group(1)),
    (re.compile(r"\bHORIZONTALLINE\b"), lambda m, link: ""),
]


def code_link(fqcn):
    return "`%s`" % fqcn


def markup(text, link=code_link):
    """Ansible's documentation markup (C(), O(), M(), ...) as Markdown; M() through ``link``."""
    for pattern, replace in _MARKUP:
        text = pattern.sub(lambda match: replace(match, link), text)
    return text


def paragraphs(description):
    if description is None:
        return []
    return [description] if isinstance(description, str) else [str(part) for part in description]


def first_sentence(text):
    """Up to the first full stop that ends a sentence: one followed by a space and a capital or code ("e.g." is not)."""
    match = re.search(r"(?<!\be\.g)(?<!\bi\.e)[.!?](?=\s+[A-Z`*\[])", text)
    return text[: match.end()] if match else text


def scalar(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        plain = value and value == value.strip() and "\n" not in value and value not in ("true", "false", "null")
        return value if plain and not re.match(r"^[-+]?[0-9.]+$", value) else json.dumps(value)
    return str(value)


def literal(value):
    """A default or choice as YAML flow text: ``4``, ``true``, ``""``, ``[taints, operator]``, ``{}``."""
    if isinstance(value, (list, tuple)):
        return "[%s]" % ", ".join(literal(item) for item in value)
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s: %s" % (scalar(k), literal(v)) for k, v in value.items())
    return scalar(value)


def type_text(spec):
    kind = spec.get("type") or "str"
    return "%s of %s" % (kind, spec["elements"]) if spec.get("elements") else kind


# --- docs/modules.md ------------------------------------------------------------------------------------


def module_link(names):
    def link(fqcn):
        short = fqcn[len(COLLECTION) + 1 :] if fqcn.startswith(COLLECTION + ".") else None
        return "[`%s`](#%s)" % (fqcn, short) if short in names else "`%s`" % fqcn

    return link


def option_line(name, spec, link):
    facts = [type_text(spec)]
    if spec.get("required"):
        facts.append("required")
    elif "default" in spec and spec["default"] is not None:
        facts.append("default `%s`" % literal(spec["default"]))
    if spec.get("choices"):
        facts.append("choices %s" % ", ".join("`%s`" % literal(choice) for choice in spec["choices"]))
    if spec.get("aliases"):
        facts.append("aliases %s" % ", ".join("`%s`" % alias for alias in spec["aliases"]))
    text = first_sentence(markup((paragraphs(spec.get("description")) or [""])[0], link)).strip()
    return "`%s` (%s)%s" % (name, ", ".join(facts), ": " + text if text else "")


def option_lines(options, link, depth=0):
    lines = []
    for name in sorted(options):
        spec = options[name]
        lines.append("%s- %s" % ("  " * depth, option_line(name, spec, link)))
        lines.extend(option_lines(spec.get("suboptions") or {}, link, depth + 1))
    return lines


def connection_options(docs, names):
    """The connection options as documented by most modules, and which of them each module documents so."""
    counts = {}
    for doc in docs.values():
        for name in names & set(doc.get("options") or {}):
            key = (name, json.dumps(doc["options"][name], sort_keys=True))
            counts[key] = counts.get(key, 0) + 1
    common = {}
    for (name, text), count in sorted(counts.items(), key=lambda item: -item[1]):
        common.setdefault(name, json.loads(text))
    shared = {}
    for module, doc in docs.items():
        options = doc.get("options") or {}
        shared[module] = set(name for name in common if name in options and options[name] == common[name])
    return common, shared


def attribute_support(doc):
    attributes = doc.get("attributes") or {}
    return ". ".join(
        "%s: %s" % (label, (attributes.get(key) or {}).get("support", "not documented"))
        for key, label in (("check_mode", "Check mode"), ("diff_mode", "Diff mode"))
    )


def modules_markdown(docs, connection_names):
    link = module_link(set(docs))
    common, shared = connection_options(docs, connection_names)
    lines = [
        "# Modules of %s" % COLLECTION,
        "",
        "<!-- Generated from the modules' DOCUMENTATION by tools/gen_docs.py (make docs): do not edit. -->",
        "",
        "Every module of the collection, from its own documentation (doc fragments included): its check and diff",
        "mode support, and per option its type, default or choices and the first sentence of its description.",
        "`ansible-doc %s.<module>` shows all of it, with examples and return values." % COLLECTION,
        "",
        "| module | what it does |",
        "|---|---|",
    ]
    for name in sorted(docs):
        lines.append("| [`%s.%s`](#%s) | %s |" % (COLLECTION, name, name, table_cell(docs[name], link)))
    lines += [
        "",
        "## Connection options",
        "",
        "Every module connects as kubernetes.core does: these options, or the same `K8S_AUTH_*` environment",
        "variables (an AWX Kubernetes bearer-token credential sets them).",
        "",
    ]
    lines += option_lines(common, link)
    for name in sorted(docs):
        doc = docs[name]
        options = dict((key, value) for key, value in (doc.get("options") or {}).items() if key not in shared[name])
        lines += [
            "",
            "## %s" % name,
            "",
            "%s." % sentence(doc, link),
            "%s." % attribute_support(doc),
            "Source: [`plugins/modules/%s.py`](../plugins/modules/%s.py)." % (name, name),
            "",
        ]
        lines += option_lines(options, link)
        if shared[name]:
            lines.append("- the [connection options](#connection-options)")
    return "\n".join(lines) + "\n"


def sentence(doc, link):
    return markup(doc.get("short_description") or "", link).rstrip(".")


def table_cell(doc, link):
    return sentence(doc, link).replace("|", "\\|")


# --- roles/<role>/README.md -----------------------------------------------------------------------------


def role_names():
    return sorted(
        name
        for name in os.listdir(ROLES_DIR)
        if os.path.isfile(os.path.join(ROLES_DIR, name, "meta", "argument_specs.yml"))
    )


def argument_specs(role):
    with open(os.path.join(ROLES_DIR, role, "meta", "argument_specs.yml")) as stream:
        return (yaml.safe_load(stream) or {}).get("argument_specs") or {}


def role_link(fqcn):
    short = fqcn[len(COLLECTION) + 1 :] if fqcn.startswith(COLLECTION + ".") else None
    if short and os.path.isfile(os.path.join(MODULES_DIR, short + ".py")):
        return "[`%s`](../../docs/modules.md#%s)" % (fqcn, short)
    return "`%s`" % fqcn


def variables_table(specs):
    """The generated section of a role README: one table per entry point (the heading only when there are several)."""
    lines = [BEGIN, "<!-- Generated from meta/argument_specs.yml by tools/gen_docs.py (make docs): edit that file. -->"]
    for entry in sorted(specs, key=lambda name: (name != "main", name)):
        options = specs[entry].get("options") or {}
        if len(specs) > 1:
            lines += ["", "Entry point `%s`:" % entry]
        lines += ["", "| variable | type | default | description |", "|---|---|---|---|"]
        for name in options:
            spec = options[name]
            if spec.get("required"):
                default = "required"
            elif "default" in spec:
                default = "`%s`" % literal(spec["default"])
            else:
                default = ""
            text = " ".join(markup(part, role_link) for part in paragraphs(spec.get("description")))
            if spec.get("choices"):
                text += " Choices: %s." % ", ".join("`%s`" % literal(choice) for choice in spec["choices"])
            cells = ["`%s`" % name, type_text(spec), default, text.strip()]
            lines.append("| %s |" % " | ".join(cell.replace("|", "\\|") for cell in cells))
    lines += ["", END]
    return "\n".join(lines)


def role_readme(role, current):
    """The README of ``role`` with its generated section replaced (or a skeleton when there is none)."""
    specs = argument_specs(role)
    table = variables_table(specs)
    if current is None:
        main = specs.get("main") or {}
        return "# %s.%s\n\n%s.\n\n## Variables\n\n%s\n" % (
            COLLECTION,
            role,
            markup(main.get("short_description") or "", role_link).rstrip("."),
            table,
        )
    if current.count(BEGIN) != 1 or current.count(END) != 1 or current.index(BEGIN) > current.index(END):
        raise DocsError("roles/%s/README.md: needs one %s line and, after it, one %s line" % (role, BEGIN, END))
    start, end = current.index(BEGIN), current.index(END) + len(END)
    return current[:start] + table + current[end:]


# --- main -------------------------------------------------------------------------------------------------


def read(path):
    if not os.path.exists(path):
        return None
    with open(path) as stream:
        return stream.read()


def write(path, text):
    with open(path, "w") as stream:
        stream.write(text)
    print("wrote %s" % os.path.relpath(path, ROOT))


def generate(check=False):
    """Every generated file: path -> the text it should have."""
    names = module_names()
    outputs = {CONNECTION_FRAGMENT: connection_fragment()}
    if read(CONNECTION_FRAGMENT) != outputs[CONNECTION_FRAGMENT] and not check:
        # The modules' docs below are read from it.
        write(CONNECTION_FRAGMENT, outputs[CONNECTION_FRAGMENT])
    for name in names:
        path = os.path.join(MODULES_DIR, name + ".py")
        outputs[path] = module_with_return_fragments(path)
    outputs[MODULES_MD] = modules_markdown(ansible_doc(names), connection_option_names())
    for role in role_names():
        path = os.path.join(ROLES_DIR, role, "README.md")
        outputs[path] = role_readme(role, read(path))
    return outputs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the stale files")
    args = parser.parse_args(argv)
    try:
        outputs = generate(check=args.check)
    except DocsError as error:
        print("gen_docs.py: %s" % error, file=sys.stderr)
        return 2
    stale = [path for path, text in sorted(outputs.items()) if read(path) != text]
    if args.check:
        for path in stale:
            state = "is missing" if read(path) is None else "is stale"
            print(
                "%s %s: run `make docs` (python tools/gen_docs.py)" % (os.path.relpath(path, ROOT), state),
                file=sys.stderr,
            )
        return 1 if stale else 0
    for path in stale:
        write(path, outputs[path])
    return 0


if __name__ == "__main__":
    sys.exit(main())
