"""Build the collection's tarball and install it into a fresh collections path, offline, as a user would.

Shared by ``tests/packaging`` (no cluster) and ``tests/integration/test_collection_package.py`` (a playbook run
from the installed copy). Galaxy is not reachable here: galaxy.yml's dependency, kubernetes.core, is put into the
fresh path first by ``tools/install_collections.py`` (from the PyPI ``ansible`` wheel), then ``ansible-galaxy
collection install --offline`` resolves the dependency against it (without it, the install fails naming the
dependency: ``tests/packaging`` proves both).

Every command runs with ``isolated_env``: the fresh path is the only collections path, the working tree's
``.build`` is neither on ``PYTHONPATH`` nor found by scanning ``sys.path``, and an empty ansible.cfg.
"""

import importlib.util
import os
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.dirname(sys.executable)
INSTALL_COLLECTIONS = os.path.join(REPO, "tools", "install_collections.py")


def repo_tool(name, folder="tools"):
    """<folder>/<name>.py of the repository as a module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, folder, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# namespace.name -> the version tools/install_collections.py puts in place, e.g. {"kubernetes.core": "6.6.0"}
DEPENDENCY_VERSIONS = dict(repo_tool("install_collections").COLLECTIONS)


def galaxy():
    with open(os.path.join(REPO, "galaxy.yml")) as stream:
        return yaml.safe_load(stream)


def tarball_name():
    info = galaxy()
    return "%s-%s-%s.tar.gz" % (info["namespace"], info["name"], info["version"])


def isolated_env(collections_path, workdir, env=None):
    """The environment for ansible commands that must see only ``collections_path``."""
    config = os.path.join(workdir, "ansible.cfg")
    if not os.path.exists(config):
        with open(config, "w") as stream:
            stream.write("# empty: nothing from the working tree's tests/ansible.cfg\n")
    base = dict((key, value) for key, value in os.environ.items() if not key.startswith(("K8S_AUTH_", "ANSIBLE_")))
    base.pop("PYTHONPATH", None)
    base.update(
        ANSIBLE_CONFIG=config,
        ANSIBLE_HOME=os.path.join(workdir, "ansible-home"),
        ANSIBLE_COLLECTIONS_PATH=collections_path,
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_NOCOLOR="1",
    )
    base.update(env or {})
    return base


# A guard against a command that hangs, not a measure of speed: under `make test` these commands share two cores with
# the Kubernetes build and eight clusters starting (a fresh clone with an empty cache once took over 300 s for
# antsibull-docs' lint and for galaxy-importer, which installs its own venv first).
COMMAND_TIMEOUT_SECONDS = 1800


def run(command, collections_path, workdir, cwd=None, env=None, check=True):
    """Run an ansible command isolated to ``collections_path``; returns the CompletedProcess (output merged)."""
    if command[0].startswith("ansible"):
        command = [os.path.join(VENV_BIN, command[0])] + list(command[1:])
    completed = subprocess.run(
        command,
        cwd=cwd or workdir,
        env=isolated_env(collections_path, workdir, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
    )
    if check and completed.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (" ".join(command), completed.returncode, completed.stdout))
    return completed


def build(output_dir):
    """``ansible-galaxy collection build`` of the working tree into ``output_dir``; returns the tarball's path."""
    os.makedirs(output_dir, exist_ok=True)
    run(["ansible-galaxy", "collection", "build", "--output-path", output_dir, REPO], output_dir, output_dir)
    path = os.path.join(output_dir, tarball_name())
    assert os.path.exists(path), "no %s in %s" % (tarball_name(), output_dir)
    return path


def add_dependencies(collections_path):
    """kubernetes.core (galaxy.yml's dependency) into ``collections_path``, offline from Galaxy."""
    command = [sys.executable, INSTALL_COLLECTIONS, "--dest", collections_path]
    completed = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT_SECONDS
    )
    if completed.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (" ".join(command), completed.returncode, completed.stdout))


def install(tarball, collections_path, workdir):
    """Offline install of ``tarball`` into ``collections_path`` (created, with its dependencies, first)."""
    add_dependencies(collections_path)
    run(
        ["ansible-galaxy", "collection", "install", "--offline", tarball, "-p", collections_path],
        collections_path,
        workdir,
    )
    return os.path.join(collections_path, "ansible_collections", "gpushare", "k8s")
