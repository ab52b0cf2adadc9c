# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution environment has one name (issue 29): ``gpushare-ee:<collection version>``, the tag of
extensions/environments/execution-environment.yml. tests/ee builds it under that name (podman's ``localhost/`` form),
ansible-navigator.yml runs it, the AWX file pulls it from the user's registry, and the docs' commands say the same;
the collection tarball's name too. The decision environment likewise (issue 30): ``gpushare-de:<collection version>``,
pulled by the EDA controller file."""

import os
import re
import subprocess

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class PlaybookLoader(yaml.SafeLoader):
    """Reads Ansible's ``!unsafe`` strings (eda/gpushare-k8s.yml's injector templates) as plain strings."""


PlaybookLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as stream:
        return yaml.load(stream, Loader=PlaybookLoader)


def version():
    return load("galaxy.yml")["version"]


def test_the_definitions_tag_the_images_with_the_collections_version():
    environments = ("extensions", "environments")
    assert load(*environments, "execution-environment.yml")["options"]["tags"] == ["gpushare-ee:%s" % version()]
    assert load(*environments, "decision-environment.yml")["options"]["tags"] == ["gpushare-de:%s" % version()]


def test_ansible_navigator_runs_that_image_locally_with_the_options_podman_needs():
    settings = load("ansible-navigator.yml")["ansible-navigator"]
    ee = settings["execution-environment"]

    assert ee["enabled"] is True and ee["container-engine"] == "podman"
    assert ee["image"] == "localhost/gpushare-ee:%s" % version()
    assert ee["pull"] == {"policy": "never"}
    # As tests/ee/test_awx_jobs.py runs the jobs (--user of the caller, root there).
    assert ee["container-options"] == ["--network=host", "--user=0"]
    assert {"K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_SSL_CA_CERT"} <= set(ee["environment-variables"]["pass"])


def test_the_awx_file_pulls_that_image():
    (environment,) = load("awx", "gpushare-k8s.yml")["execution_environments"]
    registry, _, name = environment["image"].rpartition("/")
    assert registry and name == "gpushare-ee:%s" % version()


def test_the_eda_controller_file_pulls_the_de():
    (play,) = load("eda", "gpushare-k8s.yml")
    module = "ansible.eda.decision_environment"
    (environment,) = [task[module] for task in play["tasks"] if module in task]
    registry, _, name = play["vars"]["gpushare_eda_image"].rpartition("/")
    assert environment["image_url"] == "{{ gpushare_eda_image }}" and registry and name == "gpushare-de:%s" % version()


def test_tests_ee_builds_each_definitions_tag():
    with open(os.path.join(ROOT, "tests", "ee", "build.sh")) as stream:
        build = stream.read()
    assert (
        "IMAGE=localhost/$(" in build
        and '["options"]["tags"][0]' in build
        and '"$REPO/extensions/environments/$DEFINITION")' in build
    )


def test_every_image_and_tarball_name_in_the_repository_carries_the_version():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    found = []
    for path in files + ["ansible-navigator.yml"]:
        if (
            path.startswith(("testbed/", "changelogs/"))
            or path == "CHANGELOG.rst"
            or not os.path.isfile(os.path.join(ROOT, path))
        ):
            continue
        try:
            with open(os.path.join(ROOT, path)) as stream:
                text = stream.read()
        except UnicodeDecodeError:
            continue
        for match in re.finditer(r"gpushare-[ed]e:([\w.-]*\w)|gpushare-k8s-(\d[\w.-]*?)\.tar\.gz", text):
            found.append((path, match.group(1) or match.group(2)))
    assert found and [(path, tag) for path, tag in found if tag != version()] == []
