# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/modules.md and the roles' variable tables are what tools/gen_docs.py makes of the code's own docs."""

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN_DOCS = os.path.join(ROOT, "tools", "gen_docs.py")


def load_gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", GEN_DOCS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = load_gen_docs()


def test_generated_docs_are_fresh():
    """`make docs` was run after the last change to a module's DOCUMENTATION, a doc fragment or an argument spec."""
    subprocess.check_call([sys.executable, GEN_DOCS, "--check"])


def test_every_module_and_role_has_its_page():
    with open(os.path.join(ROOT, "docs", "modules.md")) as stream:
        index = stream.read()
    for name in gen_docs.module_names():
        assert "\n## %s\n" % name in index
        assert "(../plugins/modules/%s.py)" % name in index
    for role in gen_docs.role_names():
        with open(os.path.join(ROOT, "roles", role, "README.md")) as stream:
            readme = stream.read()
        for option in gen_docs.argument_specs(role)["main"]["options"]:
            assert "| `%s` |" % option in readme


@pytest.mark.parametrize(
    "text, markdown",
    [
        ("C(nvidia.com/gpu) and I(replicas)", "`nvidia.com/gpu` and `replicas`"),
        ("O(gpushare.k8s.gpu_reset#module:restore=true)", "`restore=true`"),
        ("RV(findings), V(single), E(K8S_AUTH_HOST)", "`findings`, `single`, `K8S_AUTH_HOST`"),
        ("B(never) U(https://example.com)", "**never** <https://example.com>"),
        ("L(the guide, https://example.com/guide)", "[the guide](https://example.com/guide)"),
        ("see M(gpushare.k8s.gpu_info)", "see `gpushare.k8s.gpu_info`"),
    ],
)
def test_ansible_markup_becomes_markdown(text, markdown):
    assert gen_docs.markup(text) == markdown


def test_first_sentence_keeps_abbreviations_and_code():
    text = "Profiles, e.g. C(all-1g.10gb) and more. Second sentence."
    assert gen_docs.first_sentence(gen_docs.markup(text)) == "Profiles, e.g. `all-1g.10gb` and more."
    assert gen_docs.first_sentence("One (`x`). `y` two.") == "One (`x`)."


@pytest.mark.parametrize(
    "value, text",
    [(4, "4"), (True, "true"), ("", '""'), ("true", '"true"'), ("a\n", '"a\\n"'), (["a", 1], "[a, 1]"), ({}, "{}")],
)
def test_defaults_read_as_yaml(value, text):
    assert gen_docs.literal(value) == text


def test_role_readme_keeps_the_hand_written_text(tmp_path, monkeypatch):
    role = tmp_path / "roles" / "demo" / "meta"
    role.mkdir(parents=True)
    (role / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    short_description: A demo\n    options:\n"
        "      demo_mode:\n        type: str\n        required: true\n        choices: [a, b]\n"
        "        description: The C(mode) | pipe.\n"
    )
    monkeypatch.setattr(gen_docs, "ROLES_DIR", str(tmp_path / "roles"))
    current = "# Demo\n\nHand-written.\n\n%s\nold table\n%s\n\nMore text.\n" % (gen_docs.BEGIN, gen_docs.END)
    text = gen_docs.role_readme("demo", current)
    assert text.startswith("# Demo\n\nHand-written.\n\n" + gen_docs.BEGIN)
    assert text.endswith(gen_docs.END + "\n\nMore text.\n")
    assert "old table" not in text
    assert "| `demo_mode` | str | required | The `mode` \\| pipe. Choices: `a`, `b`. |" in text
    skeleton = gen_docs.role_readme("demo", None)
    assert skeleton.startswith("# gpushare.k8s.demo\n\nA demo.\n\n## Variables\n\n" + gen_docs.BEGIN)
    with pytest.raises(gen_docs.DocsError, match="roles/demo/README.md"):
        gen_docs.role_readme("demo", "# Demo without markers\n")
