# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One truth per version (issue 29): galaxy.yml's version, each plugin's ``version_added`` and the releases of
changelogs/changelog.yaml agree, and so do the kubernetes library's minimum in the modules' docs, in
requirements.txt and in the modules' own check."""

import ast
import os
import re

import yaml
from ansible.utils.version import SemanticVersion

from ansible_collections.gpushare.k8s.plugins.module_utils.kube.client import KUBERNETES_MIN_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as stream:
        return yaml.safe_load(stream)


def documentation(path, class_name=None):
    with open(path) as stream:
        tree = ast.parse(stream.read())
    body = tree.body
    if class_name:
        body = next(node.body for node in body if isinstance(node, ast.ClassDef) and node.name == class_name)
    for node in body:
        if isinstance(node, ast.Assign) and any(
            getattr(target, "id", None) == "DOCUMENTATION" for target in node.targets
        ):
            return yaml.safe_load(node.value.value)
    raise AssertionError("no DOCUMENTATION in %s" % path)


def version_added():
    """(kind, name) -> version_added of every module and filter."""
    found = {}
    for kind, folder in (("module", "modules"), ("filter", "filter")):
        directory = os.path.join(ROOT, "plugins", folder)
        for name in sorted(os.listdir(directory)):
            if name.endswith(".py") and name != "__init__.py":
                doc = documentation(os.path.join(directory, name))
                found[(kind, doc["name" if kind == "filter" else "module"])] = str(doc["version_added"])
    return found


def released():
    """(kind, name) -> the release of changelog.yaml that lists it as new."""
    found = {}
    for version, release in load("changelogs", "changelog.yaml")["releases"].items():
        for module in release.get("modules") or []:
            found[("module", module["name"])] = version
        for kind, plugins in (release.get("plugins") or {}).items():
            for plugin in plugins:
                found[(kind, plugin["name"])] = version
    return found


def releases():
    return sorted((SemanticVersion(version) for version in load("changelogs", "changelog.yaml")["releases"]))


def test_galaxy_version_is_the_last_release_or_a_development_version_after_it():
    version = SemanticVersion(load("galaxy.yml")["version"])
    latest = releases()[-1]

    if version.prerelease:
        # e.g. 1.0.0-dev0: between releases, as the tarball holds changes no release notes list yet.
        assert version.core > latest.core and re.match(r"^\d+\.\d+\.\d+-dev\d+$", version.vstring)
    else:
        assert version.core == latest.core


def test_each_plugins_version_added_is_the_release_whose_notes_list_it():
    added, listed = version_added(), released()
    upcoming = "%d.%d.%d" % SemanticVersion(load("galaxy.yml")["version"]).core

    assert sorted(set(listed) - set(added)) == []  # the notes list nothing that does not exist
    assert dict((key, added[key]) for key in listed) == listed
    unreleased = dict((key, version) for key, version in added.items() if key not in listed)
    assert unreleased == dict((key, upcoming) for key in unreleased)


def test_the_kubernetes_minimum_is_one_version_everywhere():
    fragment = documentation(os.path.join(ROOT, "plugins", "doc_fragments", "k8s_auth.py"), "ModuleDocFragment")
    with open(os.path.join(ROOT, "requirements.txt")) as stream:
        floors = re.findall(r"^kubernetes>=(\S+)$", stream.read(), re.M)

    assert [line for line in fragment["requirements"] if line.startswith("kubernetes ")] == [
        "kubernetes >= %s" % KUBERNETES_MIN_VERSION
    ]
    assert floors == [KUBERNETES_MIN_VERSION]
