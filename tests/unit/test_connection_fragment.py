# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The connection options are documented by the collection's own fragment (gpushare.k8s.k8s_auth_options), so that
the modules' docs render without kubernetes.core (Galaxy's importer runs ansible-doc with no dependency installed);
the options stay exactly kubernetes.core's: those of its installed fragment, and of the argument spec it ships."""

import ast
import copy
import importlib.util
import os

import yaml
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC as K8S_AUTH_ARG_SPEC

from ansible_collections.gpushare.k8s.plugins.module_utils.args import AUTH_ARG_SPEC

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SPEC = importlib.util.spec_from_file_location("gen_docs", os.path.join(ROOT, "tools", "gen_docs.py"))
gen_docs = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gen_docs)


def without_collection_marks(options):
    """``options`` without the ``version_added_collection: kubernetes.core`` marks the copy adds."""
    options = copy.deepcopy(options)
    for option in options.values():
        if option.pop("version_added_collection", "kubernetes.core") != "kubernetes.core":
            raise AssertionError("a version_added_collection other than kubernetes.core: %r" % option)
        option["suboptions"] = without_collection_marks(option.get("suboptions") or {})
        if not option["suboptions"]:
            del option["suboptions"]
    return options


def test_the_fragment_holds_kubernetes_cores_installed_connection_options_exactly():
    ours = gen_docs.fragment_documentation(gen_docs.CONNECTION_FRAGMENT)
    theirs = gen_docs.fragment_documentation(gen_docs.KUBERNETES_CORE_FRAGMENT)

    assert theirs["options"] and without_collection_marks(ours["options"]) == theirs["options"]
    assert ours["notes"] == theirs["notes"]
    assert set(ours) == set(theirs) == {"options", "notes"}
    # What ansible-doc showed when the modules extended kubernetes.core's fragment: its versions, named as its own.
    assert ours["options"]["no_proxy"]["version_added_collection"] == "kubernetes.core"


def test_the_fragment_documents_the_argument_spec_the_modules_take():
    documented = gen_docs.fragment_documentation(gen_docs.CONNECTION_FRAGMENT)["options"]

    assert set(documented) == set(AUTH_ARG_SPEC) == set(K8S_AUTH_ARG_SPEC)
    for name, spec in K8S_AUTH_ARG_SPEC.items():
        assert sorted(documented[name].get("aliases") or []) == sorted(spec.get("aliases") or []), name
        assert documented[name]["type"] == spec.get("type", "str"), name


def test_every_module_extends_the_collections_own_fragments_only():
    """A fragment of another collection makes ansible-doc fail where that collection is missing (Galaxy's import)."""
    for name in gen_docs.module_names():
        path = os.path.join(gen_docs.MODULES_DIR, name + ".py")
        fragments = yaml.safe_load(gen_docs.python_string(path, "DOCUMENTATION"))["extends_documentation_fragment"]
        assert "gpushare.k8s.k8s_auth_options" in fragments, name
        assert [fragment for fragment in fragments if not fragment.startswith("gpushare.k8s.")] == [], name


def test_the_generated_fragment_is_python_black_leaves_alone():
    with open(gen_docs.CONNECTION_FRAGMENT) as stream:
        text = stream.read()
    ast.parse(text)
    assert max(len(line) for line in text.splitlines()) <= 120
