# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/release.py's pieces that need no tool chain: the release's version, the release workflow's tag check, and
``bump``, which sets galaxy.yml's version and every name made from it (the whole dry run: tests/packaging)."""

import importlib.util
import os
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("release", os.path.join(ROOT, "tools", "release.py"))
release = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(release)


def write(root, path, text):
    full = os.path.join(str(root), path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as stream:
        stream.write(text)


def read(root, path):
    with open(os.path.join(str(root), path)) as stream:
        return stream.read()


@pytest.mark.parametrize(
    "version, released",
    [("1.0.0-dev0", "1.0.0"), ("1.2.3", "1.2.3"), ("2.0.0-rc.1", "2.0.0"), ("10.1.0-dev3", "10.1.0")],
)
def test_the_release_of_a_version_drops_its_pre_release_part(version, released):
    assert release.release_version(version) == released


def test_a_version_that_is_not_semantic_is_refused():
    with pytest.raises(SystemExit):
        release.release_version("1.0")


def test_the_tag_must_be_v_and_galaxy_ymls_version_of_a_release(tmp_path):
    write(tmp_path, "galaxy.yml", "version: 1.0.0\n")
    release.check_tag("v1.0.0", str(tmp_path))
    for tag in ("1.0.0", "v1.0.1", "v1.0.0-dev0"):
        with pytest.raises(SystemExit, match="does not match"):
            release.check_tag(tag, str(tmp_path))
    write(tmp_path, "galaxy.yml", "version: 1.0.0-dev0\n")
    with pytest.raises(SystemExit, match="pre-release"):
        release.check_tag("v1.0.0-dev0", str(tmp_path))


def test_bump_sets_the_version_and_every_name_made_from_it_but_not_the_changelogs(tmp_path):
    # The names are written with % so that neither bump nor tests/unit/test_ee_name.py takes this file for one.
    old, new = "3.1.0-dev2", "3.1.0"
    write(tmp_path, "galaxy.yml", "namespace: gpushare\nversion: %s\n" % old)
    write(tmp_path, "awx/gpushare-k8s.yml", "image: registry.example.com/gpushare-ee:%s\n" % old)
    docs = "`gpushare-k8s-%s.tar.gz`, gpushare.k8s:%s, gpushare-de:%s.\n"
    write(tmp_path, "docs/AWX.md", docs % (old, old, old))
    write(tmp_path, "docs/other.md", "kubernetes.core %s stays\n" % old)
    write(tmp_path, "changelogs/fragments/x.yml", "minor_changes: [gpushare-ee:%s stays]\n" % old)

    changed = release.bump(str(tmp_path), new)

    assert sorted(changed) == ["awx/gpushare-k8s.yml", "docs/AWX.md", "galaxy.yml"]
    assert read(tmp_path, "galaxy.yml") == "namespace: gpushare\nversion: %s\n" % new
    assert read(tmp_path, "awx/gpushare-k8s.yml") == "image: registry.example.com/gpushare-ee:%s\n" % new
    assert read(tmp_path, "docs/AWX.md") == docs % (new, new, new)
    assert old in read(tmp_path, "docs/other.md") + read(tmp_path, "changelogs/fragments/x.yml")


def test_bump_of_this_repository_leaves_no_name_with_the_old_version(tmp_path):
    """In a copy of the working tree (tools/release.py's own copy), then `git grep`-like: the old version is gone from
    every name made from it, so tests/unit/test_ee_name.py holds after a cut."""
    copy = os.path.join(str(tmp_path), "copy")
    for path in release.tracked_files(ROOT):
        if path.startswith(("testbed/", "benchmarks/", "tests/")):
            continue
        os.makedirs(os.path.dirname(os.path.join(copy, path)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, path), os.path.join(copy, path))
    old = release.galaxy_version(ROOT)

    release.bump(copy, "9.8.7")

    found = subprocess.run(
        ["grep", "-rlE", release.DERIVED.format(version=old.replace(".", r"\.")).replace(r"\b", ""), "."],
        cwd=copy,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout.split()
    assert [path for path in found if not path.startswith(("./changelogs/", "./CHANGELOG.rst"))] == []
    assert release.galaxy_version(copy) == "9.8.7"
    # The environments' requirement spans two lines, which grep does not read as one.
    with open(os.path.join(copy, "extensions", "environments", "requirements.yml")) as stream:
        assert yaml.safe_load(stream)["collections"][0] == {"name": "gpushare.k8s", "version": "9.8.7"}
