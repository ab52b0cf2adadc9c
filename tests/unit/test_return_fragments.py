# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The return values several modules share are documented once, in a doc fragment's RETURN, and written into each
module's RETURN by tools/gen_docs.py: ansible-doc before 2.20 fails on a RETURN that extends a fragment ("dictionary
update sequence element #0 has length 21; 2 is required", ansible/ansible#85644), and the collection supports
ansible-core 2.16 and newer. The copies stay the fragment's, and every RETURN fragment has a module that uses it."""

import importlib.util
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SPEC = importlib.util.spec_from_file_location("gen_docs", os.path.join(ROOT, "tools", "gen_docs.py"))
gen_docs = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gen_docs)

FRAGMENTS_DIR = os.path.join(ROOT, "plugins", "doc_fragments")


def module_path(name):
    return os.path.join(gen_docs.MODULES_DIR, name + ".py")


def written():
    """Module name -> the RETURN fragments it holds a copy of, with the copy."""
    found = {}
    for name in gen_docs.module_names():
        with open(module_path(name)) as stream:
            found[name] = gen_docs.return_fragments_written(stream.read())
    return found


def return_fragments():
    """Every doc fragment of the collection that has a RETURN."""
    names = sorted(name[: -len(".py")] for name in os.listdir(FRAGMENTS_DIR) if name.endswith(".py"))
    return [
        "gpushare.k8s." + name
        for name in names
        if gen_docs.python_string(os.path.join(FRAGMENTS_DIR, name + ".py"), "RETURN", "ModuleDocFragment")
    ]


@pytest.mark.parametrize("name", gen_docs.module_names())
def test_each_copy_is_the_fragments_return_and_part_of_the_modules_return(name):
    returns = yaml.safe_load(gen_docs.python_string(module_path(name), "RETURN"))

    assert "extends_documentation_fragment" not in returns
    for fragment, copy in written()[name]:
        assert copy == gen_docs.fragment_return(fragment), "%s's copy of %s: run make docs" % (name, fragment)
        shared = yaml.safe_load(copy)
        assert dict((key, returns.get(key)) for key in shared) == shared, (name, fragment)


def test_every_return_fragment_is_written_into_a_module():
    used = set(fragment for copies in written().values() for fragment, _ in copies)

    assert sorted(used) == return_fragments()
    assert "gpushare.k8s.operator" in dict(written()["gpu_mig_config"])


def test_a_stale_copy_is_written_again_and_an_unknown_fragment_refused(tmp_path):
    fragment = "gpushare.k8s.operator"
    module = tmp_path / "gpu_demo.py"
    begin, end = gen_docs.RETURN_BEGIN % fragment, gen_docs.RETURN_END % fragment
    module.write_text('RETURN = r"""\n%s\nold: {}\n%s\nown:\n  type: str\n"""\n' % (begin, end))

    text = gen_docs.module_with_return_fragments(str(module))

    assert text == 'RETURN = r"""\n%s\n%s%s\nown:\n  type: str\n"""\n' % (
        begin,
        gen_docs.fragment_return(fragment),
        end,
    )
    module.write_text(
        'RETURN = r"""\n%s\n%s\n"""\n'
        % (gen_docs.RETURN_BEGIN % "gpushare.k8s.nowhere", "# END RETURN FRAGMENT gpushare.k8s.nowhere")
    )
    with pytest.raises(gen_docs.DocsError, match="gpushare.k8s.nowhere has no RETURN"):
        gen_docs.module_with_return_fragments(str(module))
