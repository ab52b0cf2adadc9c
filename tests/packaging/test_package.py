"""The collection as users get it, without a cluster (``make test-package``): the tarball ``ansible-galaxy
collection build`` makes, its offline install into a fresh path, ``ansible-doc`` from that copy, galaxy-importer's
import of the tarball (as Galaxy and Automation Hub import it, no dependency installed), and the AWX
execution environment (``ansible-builder create`` writes the build context only: no container engine is
needed, none is here). The playbook run from the installed copy needs a cluster:
``tests/integration/test_collection_package.py``.
"""

import fnmatch
import json
import os
import re
import shutil
import subprocess
import tarfile
import time

import pytest
import yaml
from collection_package import (
    COMMAND_TIMEOUT_SECONDS,
    DEPENDENCY_VERSIONS,
    REPO,
    VENV_BIN,
    add_dependencies,
    build,
    galaxy,
    install,
    isolated_env,
    repo_tool,
    run,
    tarball_name,
)

# What a tarball may hold at its top level; anything else (local state, tests, tooling) is a build_ignore miss.
TOP_LEVEL = {
    "MANIFEST.json",
    "FILES.json",
    "CHANGELOG.rst",
    "LICENSE",
    "README.md",
    "ansible-navigator.yml",
    "awx",
    "bindep.txt",
    "changelogs",
    "docs",
    "eda",
    "extensions",
    "meta",
    "playbooks",
    "plugins",
    "requirements.txt",
    "roles",
    "tests",
    "tools",
}
# Kept for tests/sanity/run.sh, which runs ansible-test sanity (shellcheck...) on the tarball; no test suite.
TESTS_SHIPPED = {"tests/ansible.cfg", "tests/run-cluster-tests.sh"}
LOCAL_STATE = {"__pycache__", ".pytest_cache", ".ansible", ".venv", ".build", ".git"}
# Files of the working tree that must all be in the tarball (roles/ and playbooks/ as they are today).
SHIPPED = (
    "plugins",
    "roles",
    "playbooks",
    "meta",
    "docs/AWX.md",
    "awx/gpushare-k8s.yml",
    "eda/gpushare-k8s.yml",
    "extensions/eda",
    "extensions/environments",
    "ansible-navigator.yml",
    "README.md",
    "CHANGELOG.rst",
    "LICENSE",
    "requirements.txt",
    "bindep.txt",
)
ENVIRONMENTS = ("extensions", "environments")
EE_TOOLS = os.path.join(REPO, "tests", "ee")


def read(*parts):
    with open(os.path.join(REPO, *parts)) as stream:
        return stream.read()


def requirements(text, operator):
    """``name<operator>version`` lines of a requirements file (``==`` pins, ``>=`` floors), by lower-cased name."""
    pattern = re.compile(r"^([A-Za-z0-9_.-]+)%s([^\s#;,]+)$" % re.escape(operator))
    found = {}
    for line in text.splitlines():
        match = pattern.match(line.split("#")[0].strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def repo_files(path):
    """The working tree's files under ``path`` (or the file itself), relative to the repository, no caches."""
    full = os.path.join(REPO, path)
    if os.path.isfile(full):
        return [path]
    found = []
    for root, dirs, files in os.walk(full):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        found.extend(os.path.relpath(os.path.join(root, name), REPO) for name in files if not name.endswith(".pyc"))
    return found


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return str(tmp_path_factory.mktemp("package"))


@pytest.fixture(scope="module")
def tarball(work):
    return build(os.path.join(work, "dist"))


@pytest.fixture(scope="module")
def installed(work, tarball):
    """A fresh collections path holding the installed tarball and kubernetes.core, nothing else."""
    path = os.path.join(work, "collections")
    install(tarball, path, work)
    return path


# --- the tarball ------------------------------------------------------------------------------


def test_tarball_holds_the_collection_and_nothing_else(tarball):
    with tarfile.open(tarball) as archive:
        names = [member.name for member in archive.getmembers() if member.isfile()]

    assert set(name.split("/")[0] for name in names) <= TOP_LEVEL
    strays = [
        name
        for name in names
        if any(part in LOCAL_STATE or part.startswith(".cluster") for part in name.split("/"))
        or fnmatch.fnmatch(name, "*.pyc")
        or name.startswith(("testbed/", "benchmarks/", "context/"))
        or (name.startswith("tests/") and name not in TESTS_SHIPPED)
    ]
    assert strays == []
    missing = sorted(set(path for shipped in SHIPPED for path in repo_files(shipped)) - set(names))
    assert missing == []
    assert any(fnmatch.fnmatch(name, "plugins/modules/gpu_*.py") for name in names)
    assert "meta/runtime.yml" in names and "meta/execution-environment.yml" in names


def test_manifest_declares_version_and_dependency(tarball):
    with tarfile.open(tarball) as archive:
        manifest = json.load(archive.extractfile("MANIFEST.json"))["collection_info"]

    assert (manifest["namespace"], manifest["name"], manifest["version"]) == ("gpushare", "k8s", galaxy()["version"])
    assert manifest["dependencies"] == galaxy()["dependencies"] == {"kubernetes.core": ">=6.6.0"}


# Markdown links, [text](target), the text possibly over several lines; fenced code blocks are not read.
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


def heading_anchors(text):
    """The anchors GitHub (and Galaxy's renderer) gives a Markdown file's headings: lower case, spaces to hyphens,
    punctuation but hyphens and underscores dropped."""
    return set(
        re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in HEADING.findall(FENCE.sub("", text))
    )


def broken_links(names, read_member):
    """``(file, target)`` for each relative link of the tarball's Markdown files that names no file of the tarball, or
    no heading of it. Absolute URLs (``scheme:``) are not fetched."""
    broken = []
    for name in sorted(name for name in names if name.endswith(".md")):
        for target in LINK.findall(FENCE.sub("", read_member(name))):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            path, _, fragment = target.partition("#")
            member = os.path.normpath(os.path.join(os.path.dirname(name), path)) if path else name
            if member not in names:
                broken.append((name, target))
            elif fragment and member.endswith(".md") and fragment not in heading_anchors(read_member(member)):
                broken.append((name, target))
    return broken


def test_every_relative_link_of_the_shipped_docs_resolves_in_the_tarball(tarball):
    """Galaxy and Automation Hub show README.md from the tarball (issue 38): each relative link in it, and in the
    other Markdown files the tarball ships, names a file the tarball has (and a heading of it, for an anchor). What
    build_ignore leaves out (docs/CONTRIBUTING.md and the other contributors' pages) is linked by its absolute URL on
    the repository, galaxy.yml's ``repository``."""
    with tarfile.open(tarball) as archive:
        names = set(member.name for member in archive.getmembers() if member.isfile())

        def read_member(name):
            return archive.extractfile(name).read().decode()

        assert broken_links(names, read_member) == []
        readme = read_member("README.md")
    relative = [target for target in LINK.findall(readme) if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]
    assert "docs/AWX.md" in relative and "docs/EDA.md" in relative  # the check above did read the README's links
    assert "make demo" in readme and "make test" in readme  # the contributors' two commands stay (docs/CONTRIBUTING.md)
    assert galaxy()["repository"] + "/blob/main/docs/CONTRIBUTING.md" in readme


def test_a_link_to_a_file_the_tarball_lacks_is_found():
    files = {
        "README.md": "# Title\n\n## Install it\n[a](docs/A.md) [b](docs/CONTRIBUTING.md) [c](#install-it)\n"
        "[d](#nowhere) [e](https://example.com/x.md)\n```\n[f](not/read.md)\n```\n",
        "docs/A.md": "# A\n[back](../README.md#install-it) [up](../README.md#gone)\n",
    }
    assert broken_links(set(files), files.get) == [
        ("README.md", "docs/CONTRIBUTING.md"),
        ("README.md", "#nowhere"),
        ("docs/A.md", "../README.md#gone"),
    ]


# --- the offline install ----------------------------------------------------------------------


def test_offline_install_without_kubernetes_core_names_the_dependency(work, tarball):
    empty = os.path.join(work, "empty")
    command = ["ansible-galaxy", "collection", "install", "--offline", tarball, "-p", empty]
    completed = run(command, empty, work, check=False)

    assert completed.returncode != 0
    assert "kubernetes.core:>=6.6.0 (dependency of gpushare.k8s:" in completed.stdout


def test_offline_install_resolves_kubernetes_core_from_the_path(installed, work):
    """The install checked every file against the tarball's FILES.json; this is what Ansible now sees."""
    listed = run(["ansible-galaxy", "collection", "list", "--format", "json"], installed, work)

    collections = json.loads(listed.stdout)
    path = os.path.join(installed, "ansible_collections")
    assert list(collections) == [path]
    versions = dict((name, info["version"]) for name, info in collections[path].items())
    assert versions == dict(DEPENDENCY_VERSIONS, **{"gpushare.k8s": galaxy()["version"]})


def test_ansible_doc_renders_from_the_installed_copy_only(installed, work):
    shown = run(["ansible-doc", "gpushare.k8s.gpu_info"], installed, work)

    module_file = os.path.join(installed, "ansible_collections", "gpushare", "k8s", "plugins", "modules", "gpu_info.py")
    assert "gpushare.k8s.gpu_info (%s)" % module_file in shown.stdout
    assert "K8S_AUTH_API_KEY" in shown.stdout and "EXAMPLES:" in shown.stdout and "RETURN VALUES:" in shown.stdout


OLDEST_CORE = repo_tool("oldest_core_venv")


@pytest.fixture(scope="module")
def oldest_core_bin():
    """The bin directory of tools/oldest_core_venv.py's virtualenv (the oldest ansible-core the collection claims)."""
    return os.path.join(OLDEST_CORE.oldest_core_venv(), "bin")


def test_ansible_doc_of_the_oldest_core_claimed_renders_every_module_and_role(installed, work, oldest_core_bin):
    """meta/runtime.yml's claim is tested: the oldest ansible-core it admits (2.16, at the patch release
    tools/oldest_core_venv.py pins) renders every module, RETURN included (the shared return values are written into
    the modules: ansible-doc before 2.20 cannot read a RETURN that extends a fragment, issue 38), and every role."""
    modules = ["gpushare.k8s." + name[: -len(".py")] for name in os.listdir(os.path.join(REPO, "plugins", "modules"))]
    roles = ["gpushare.k8s." + name for name in os.listdir(os.path.join(REPO, "roles"))]

    def ansible_doc(bin_dir, *args):
        # stdout alone: stderr may hold the core's own warnings (2.20.0 warned about its _protomatter collection).
        completed = subprocess.run(
            [os.path.join(bin_dir, "ansible-doc")] + list(args),
            cwd=work,
            env=isolated_env(installed, work),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=COMMAND_TIMEOUT_SECONDS,
        )
        assert completed.returncode == 0, completed.stderr
        return completed.stdout

    # As users read it: the text form is where 2.16 to 2.19 failed on a RETURN that extends a fragment; --json left
    # the fragment unread ({"extends_documentation_fragment": [...]}) and exited 0.
    shown = ansible_doc(oldest_core_bin, *sorted(modules))
    assert shown.count("RETURN VALUES:") == len(modules)
    docs = json.loads(ansible_doc(oldest_core_bin, "--json", *sorted(modules)))
    pinned = json.loads(ansible_doc(VENV_BIN, "--json", *sorted(modules)))
    assert sorted(docs) == sorted(pinned) == sorted(modules)
    assert all(doc["doc"]["options"] for doc in docs.values())
    assert [name for name in sorted(modules) if docs[name]["return"] != pinned[name]["return"]] == []
    assert sorted(json.loads(ansible_doc(oldest_core_bin, "--json", "-t", "role", *roles))) == sorted(roles)
    version = run([os.path.join(oldest_core_bin, "ansible"), "--version"], installed, work).stdout
    assert "core %s]" % OLDEST_CORE.oldest_core_tested() in version


RELEASE = repo_tool("release")


def tree_state():
    """What a dry run must leave as it found: git's view of the working tree and the changelog's files."""
    status = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, stdout=subprocess.PIPE, text=True, check=True)
    changelogs = sorted(os.listdir(os.path.join(REPO, "changelogs", "fragments")))
    return status.stdout, changelogs, read("CHANGELOG.rst"), read("changelogs", "changelog.yaml"), read("galaxy.yml")


@pytest.fixture(scope="module")
def galaxy_import(work):
    """`make release`'s dry run (tools/release.py, actionlint apart: test_release_actionlint below): in a copy of the
    working tree, galaxy.yml's version made a release's and the changelog released, the tarball built, and
    galaxy-importer on it as Automation Hub imports (its settings: one certification tag, version >= 1.0.0,
    ansible-lint's production profile; no dependency installed; any ERROR in its log fails). Its tarball, log and
    result, and the working tree's state before and after."""
    before = tree_state()
    try:
        tarball, log, result = RELEASE.dry_run(os.path.join(work, "release"), skip_actionlint=True)
    except SystemExit as error:
        pytest.fail(str(error))
    return tarball, log, result, before, tree_state()


def test_galaxy_importer_imports_the_tarball_with_every_modules_docs_and_no_error(galaxy_import):
    """Galaxy's importer says "completed successfully" even when ansible-doc failed and every module came out with
    empty docs (issue 29): any ERROR in its log fails here (tools/release.py checks it), and so does a module or filter
    without docs. Its warnings (ansible-lint's, without kubernetes.core: unresolved kubernetes.core modules) are what
    Galaxy shows too."""
    _, log, result, _, _ = galaxy_import

    assert "Importer processing completed successfully" in log, log
    assert [line for line in log.splitlines() if line.startswith("ERROR")] == [], log
    modules = sorted(name[: -len(".py")] for name in os.listdir(os.path.join(REPO, "plugins", "modules")))
    documented = dict(
        (content["content_name"], content.get("doc_strings") or {})
        for content in result["docs_blob"]["contents"]
        if content["content_type"] == "module"
    )
    assert sorted(documented) == modules
    assert [name for name, docs in sorted(documented.items()) if not docs.get("doc", {}).get("options")] == []
    assert [name for name, docs in sorted(documented.items()) if not docs.get("examples")] == []
    assert [name for name, docs in sorted(documented.items()) if not docs.get("return")] == []
    # The connection options, from the collection's own fragment (galaxy-importer lists options, each with its name).
    api_key = [option for option in documented["gpu_info"]["doc"]["options"] if option["name"] == "api_key"]
    assert "K8S_AUTH_API_KEY" in " ".join(api_key[0]["description"])
    assert result["metadata"]["version"] == RELEASE.release_version(galaxy()["version"])


def test_release_dry_run_uses_automation_hubs_settings_and_leaves_the_working_tree_alone(galaxy_import):
    tarball, _, _, before, after = galaxy_import
    config = RELEASE.importer_settings("off")

    assert config["require_v1_or_greater"] and config["check_required_tags"] and config["run_ansible_lint"]
    assert after == before
    assert os.path.basename(tarball) == "gpushare-k8s-%s.tar.gz" % RELEASE.release_version(galaxy()["version"])


def test_release_tarball_holds_the_released_changelog_and_the_versions_names(galaxy_import):
    """The release's changelog (antsibull-changelog release in the copy: every fragment in it, none left) and the
    names made from the version (the EE and DE images the AWX and EDA files pull) carry the release's version."""
    tarball, _, _, _, _ = galaxy_import
    version = RELEASE.release_version(galaxy()["version"])
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
        changelog = archive.extractfile("CHANGELOG.rst").read().decode()
        changes = yaml.safe_load(archive.extractfile("changelogs/changelog.yaml"))
        awx = archive.extractfile("awx/gpushare-k8s.yml").read().decode()
        eda = archive.extractfile("eda/gpushare-k8s.yml").read().decode()

    assert "\nv%s\n" % version in changelog
    assert version in changes["releases"]
    assert [name for name in names if name.startswith("changelogs/fragments/") and not name.endswith("/.keep")] == []
    assert "gpushare-ee:%s\n" % version in awx and "gpushare-de:%s\n" % version in eda
    notes = os.path.join(os.path.dirname(tarball), "release-notes-%s.rst" % version)
    assert os.path.exists(notes) and read(notes).strip()


def test_release_actionlint_finds_nothing_in_the_workflows():
    """actionlint (and shellcheck on every run: script) on .github/workflows, as `make release` runs it. Skipped where
    actionlint cannot be installed (its PyPI package downloads it from GitHub) and ACTIONLINT names no binary."""
    try:
        RELEASE.actionlint_bin()
    except RELEASE.Unavailable as error:
        pytest.skip(str(error))
    assert RELEASE.actionlint() == [
        os.path.join(REPO, ".github", "workflows", name) for name in ("ci.yml", "release.yml")
    ]


def test_antsibull_docs_lints_the_installed_collections_docs(installed, work):
    """What docs.ansible.com's pipeline checks: every module's and role's documentation renders, and every reference
    in it (M(), O(), RV()) names something that exists. Run on the installed copy, beside kubernetes.core: on the
    working tree, antsibull-docs copies only files git tracks, and .build (where kubernetes.core is) is ignored."""
    completed = run(
        [
            os.path.join(VENV_BIN, "antsibull-docs"),
            "lint-collection-docs",
            "--plugin-docs",
            "--validate-collection-refs",
            "dependent",
            os.path.join(installed, "ansible_collections", "gpushare", "k8s"),
        ],
        installed,
        work,
        env={"PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")},
        check=False,
    )
    assert completed.returncode == 0 and completed.stdout.strip() == "", completed.stdout


# --- the execution environment ----------------------------------------------------------------


@pytest.fixture(scope="module")
def installed_environments(installed):
    """The environments' folder in the installed collection, where a user's ansible-builder reads it."""
    return os.path.join(installed, "ansible_collections", "gpushare", "k8s", *ENVIRONMENTS)


@pytest.fixture(scope="module")
def ee_context(work, installed_environments):
    """``ansible-builder create`` of the execution environment from the installed collection, as docs/AWX.md says."""
    context = os.path.join(work, "ee-context")
    command = [os.path.join(VENV_BIN, "ansible-builder"), "create", "--context", context, "--output-filename"]
    command += ["Containerfile", "--file", os.path.join(installed_environments, "execution-environment.yml")]
    completed = subprocess.run(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert completed.returncode == 0, completed.stdout
    assert "WARNING" not in completed.stdout, completed.stdout  # e.g. an additional_build_files miss
    return context


@pytest.fixture(scope="module")
def galaxy_standin(work, tarball, installed):
    """tests/ee/galaxy_standin.py serving the tarball and kubernetes.core's (a tarball of the installed copy) as
    Galaxy does; yields its URL, the --server an environment build is given here."""
    collections, files = os.path.join(work, "standin", "collections"), os.path.join(work, "standin", "files")
    os.makedirs(collections)
    os.makedirs(files)
    shutil.copy(tarball, collections)
    core = os.path.join(installed, "ansible_collections", "kubernetes", "core")
    repo_tool("mirror_sources", folder=os.path.join("tests", "ee")).tarball_of_installed_collection(core, collections)
    url_file = os.path.join(work, "standin", "url")
    command = [os.path.join(VENV_BIN, "python"), os.path.join(EE_TOOLS, "galaxy_standin.py"), "--port", "0"]
    server = subprocess.Popen(command + ["--collections", collections, "--files", files, "--url-file", url_file])
    try:
        for _ in range(300):
            if os.path.exists(url_file) or server.poll() is not None:
                break
            time.sleep(0.1)  # the stand-in writes its URL once it listens: a process start has no event to watch
        assert os.path.exists(url_file), "the Galaxy stand-in did not start (exit %s)" % server.poll()
        with open(url_file) as stream:
            yield stream.read().strip()
    finally:
        server.terminate()
        server.wait()


def environments_file(*parts):
    return read(*(ENVIRONMENTS + parts))


def test_the_collection_ships_the_environment_definitions_and_their_files(installed_environments):
    shipped = sorted(os.listdir(installed_environments))
    assert shipped == sorted(os.listdir(os.path.join(REPO, *ENVIRONMENTS)))
    for name in ("execution-environment.yml", "decision-environment.yml"):
        definition = yaml.safe_load(read(installed_environments, name))
        named = [definition["dependencies"].get(key) for key in ("galaxy", "python", "system")]
        named += [entry["src"] for entry in definition.get("additional_build_files", [])]
        assert [path for path in named if path and path not in shipped] == []


def test_pins_agree_with_the_tested_tool_chain():
    dev = requirements(read("requirements-dev.txt"), "==")
    ee = requirements(environments_file("ee-requirements.txt"), "==")
    definition = yaml.safe_load(environments_file("execution-environment.yml"))
    collections = yaml.safe_load(environments_file("requirements.yml"))["collections"]

    tested = ("kubernetes", "pyyaml", "highspy", "numpy")
    assert ee == dict((name, dev[name]) for name in tested)
    # The collection's own requirements: floors at the tested versions, no pin, no cap (numpy comes with highspy);
    # kubernetes' floor: the oldest known to work (KUBERNETES_MIN_VERSION, tests/unit/test_versions.py), below the pin.
    floors = requirements(read("requirements.txt"), ">=")
    assert floors == dict((n, floors["kubernetes"] if n == "kubernetes" else v) for n, v in ee.items() if n != "numpy")
    assert tuple(map(int, floors["kubernetes"].split("."))) <= tuple(map(int, ee["kubernetes"].split(".")))
    assert not re.search(r"==|<|~=|!=", "\n".join(line.split("#")[0] for line in read("requirements.txt").splitlines()))
    assert definition["dependencies"]["ansible_core"]["package_pip"] == "ansible-core==" + dev["ansible-core"]
    assert re.match(r"^ansible-runner==[0-9.]+$", definition["dependencies"]["ansible_runner"]["package_pip"])
    assert definition["options"]["tags"] == ["gpushare-ee:%s" % galaxy()["version"]]
    # By name from Galaxy: this collection at its own version, kubernetes.core at the tested one.
    assert collections == [
        {"name": "gpushare.k8s", "version": galaxy()["version"]},
        {"name": "kubernetes.core", "version": DEPENDENCY_VERSIONS["kubernetes.core"]},
    ]


def test_the_decision_environment_is_the_ees_base_with_ansible_rulebook_and_java():
    dev = requirements(read("requirements-dev.txt"), "==")
    ee = requirements(environments_file("ee-requirements.txt"), "==")
    ee_definition = yaml.safe_load(environments_file("execution-environment.yml"))
    de_definition = yaml.safe_load(environments_file("decision-environment.yml"))

    assert requirements(environments_file("de-requirements.txt"), "==") == dict(
        ee, **{"ansible-rulebook": dev["ansible-rulebook"]}
    )
    assert de_definition["images"] == ee_definition["images"]
    same = ("python_interpreter", "ansible_core", "ansible_runner", "galaxy")
    assert dict((key, de_definition["dependencies"][key]) for key in same) == dict(
        (key, ee_definition["dependencies"][key]) for key in same
    )
    assert de_definition["options"]["tags"] == ["gpushare-de:%s" % galaxy()["version"]]
    java = [line.split()[0] for line in environments_file("de-bindep.txt").splitlines() if line and line[0] != "#"]
    assert java == ["java-17-openjdk-headless", "openjdk-21-jre-headless"]


def test_ee_build_context_installs_the_collections_their_requirements_and_helm(ee_context, installed_environments):
    containerfile = read(ee_context, "Containerfile")
    build_dir = os.path.join(ee_context, "_build")
    definition = yaml.safe_load(read(installed_environments, "execution-environment.yml"))
    dependencies = definition["dependencies"]

    assert 'ARG EE_BASE_IMAGE="%s"' % definition["images"]["base_image"]["name"] in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.12"' in containerfile
    refs = (dependencies["ansible_core"]["package_pip"], dependencies["ansible_runner"]["package_pip"])
    assert 'ARG ANSIBLE_INSTALL_REFS="%s %s"' % refs in containerfile
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in containerfile
    assert "COPY _build/requirements.txt requirements.txt" in containerfile
    assert "introspect.py introspect --user-pip=requirements.txt" in containerfile
    # helm's step comes last; its source and digest are build arguments, empty for helm's own release.
    helm = "RUN $PYCMD /tmp/install_helm.py --dest /usr/local/bin"
    helm += ' --url "$HELM_ARCHIVE_URL" --sha256 "$HELM_ARCHIVE_SHA256"'
    assert containerfile.index("install-from-bindep") < containerfile.index(helm) < containerfile.index("USER 1000")
    assert 'ARG HELM_ARCHIVE_URL=""' in containerfile and 'ARG HELM_ARCHIVE_SHA256=""' in containerfile
    assert read(build_dir, "requirements.txt") == environments_file("ee-requirements.txt")
    assert read(build_dir, "requirements.yml") == environments_file("requirements.yml")
    assert read(build_dir, "helm", "install_helm.py") == environments_file("install_helm.py")
    assert not os.path.exists(os.path.join(build_dir, "collections"))  # the collections come from Galaxy


def test_ee_galaxy_stage_and_introspection_find_the_collections_needs(ee_context, work, galaxy_standin):
    """The galaxy stage's install, run here with the build argument tests/ee/build.sh gives it (the stand-in as Galaxy),
    then ansible-builder's introspection of its result: what the builder stage pip-installs comes from
    meta/execution-environment.yml of each collection."""
    collections = os.path.join(work, "ee-collections")
    build_dir = os.path.join(ee_context, "_build")
    install_args = ["--server", galaxy_standin, "-r", "requirements.yml", "--collections-path", collections]
    run(["ansible-galaxy", "collection", "install"] + install_args, collections, work, cwd=build_dir)
    command = [os.path.join(VENV_BIN, "ansible-builder"), "introspect", collections, "--user-pip", "requirements.txt"]
    introspected = subprocess.run(command, cwd=build_dir, stdout=subprocess.PIPE, text=True, check=True)

    found = yaml.safe_load(introspected.stdout)
    # ansible-builder leaves out a collection's PyYAML (ansible-core brings it); the EE's own file pins it.
    runtime = requirements(read("requirements.txt"), ">=")
    ee = requirements(environments_file("ee-requirements.txt"), "==")
    floors = [line.split("#")[0].strip() for line in read("requirements.txt").splitlines()]
    assert [line for line in found["python"] if "gpushare.k8s" in line] == [
        "%s  # from collection gpushare.k8s" % line for line in floors if line and not line.startswith("PyYAML")
    ]
    assert "kubernetes>=%s" % runtime["kubernetes"] in floors
    assert "kubernetes==%s  # from collection user" % ee["kubernetes"] in found["python"]
    assert "highspy==%s  # from collection user" % ee["highspy"] in found["python"]
    assert "PyYAML==%s  # from collection user" % ee["pyyaml"] in found["python"]
    assert any(line.endswith("# from collection kubernetes.core") for line in found["python"])
    assert not any("gpushare.k8s" in line for line in found.get("system") or [])  # bindep.txt: comments only
