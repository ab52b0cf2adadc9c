"""The release, every step but the upload (``make release``), and the edits a release commit makes.

    python tools/release.py [--dist DIR] [--tag vX.Y.Z] [--ansible-test off|docker|podman] [--skip-actionlint]
    python tools/release.py cut            # in the working tree: the release commit's changes (then review, commit)
    python tools/release.py bump VERSION   # in the working tree: galaxy.yml's version and every name made from it

The dry run (no sub-command) leaves the working tree as it was: it copies the files git would commit (tracked and
untracked-not-ignored, as they are now) into a temporary ``ansible_collections/gpushare/k8s`` and there

1. makes the release's version: galaxy.yml's version without its pre-release part (``1.0.0-dev0`` -> ``1.0.0``),
   written everywhere it is derived (``bump``), and ``antsibull-changelog release`` for it into CHANGELOG.rst and
   changelogs/changelog.yaml, the fragments consumed; when galaxy.yml already holds a release's version (the tagged
   release commit), the release must already be in changelog.yaml with no fragment left, and the changelog is only
   regenerated, which must change nothing;
2. ``ansible-galaxy collection build`` into ``--dist`` (default ``.build/release``, git-ignored);
3. galaxy-importer (tools/galaxy_importer_venv.py) on the tarball with Automation Hub's settings (AUTOMATION_HUB
   below), no dependency installed; an ERROR line or a failed import fails the release;
4. actionlint (tools/actionlint_venv.py) on .github/workflows.

``--tag`` (the release workflow): the tag must be ``v`` + galaxy.yml's version, a release's (no pre-release part).
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from actionlint_venv import Unavailable, actionlint_bin  # noqa: E402
from galaxy_importer_venv import galaxy_importer_venv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.dirname(sys.executable)
SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$")

# galaxy-importer's settings for Automation Hub (galaxy_importer/config.py holds every key and its default; the
# GALAXY_IMPORTER_<KEY> environment variables override a file's): the import Automation Hub runs on an upload checks
# what Galaxy's does (metadata, ansible-doc of every plugin, the changelog: run_ansible_doc, check_changelog are on by
# default) and more: one of the certification tags (check_required_tags, as Red Hat's partner-certification-checker
# sets it), ansible-lint's production profile (run_ansible_lint), a version of at least 1.0.0 (require_v1_or_greater:
# "Collections must be at minimum version 1.0.0 to be submitted for certification") and ansible-test sanity
# (run_ansible_test; with ansible_test_local_image, in galaxy-importer's own container image, docker or podman).
# Without a container engine (``--ansible-test off``, as here) the sanity part is `make test-sanity`'s.
AUTOMATION_HUB = {
    "check_required_tags": True,
    "require_v1_or_greater": True,
    "run_ansible_doc": True,
    "run_ansible_lint": True,
    "check_changelog": True,
    "run_ansible_test": False,
    "ansible_test_local_image": False,
    "local_image_docker": False,
}
# What a successful import logs last; galaxy-importer also logs ERROR lines for failures it does not stop on.
IMPORT_OK = "Importer processing completed successfully"
# The names made from the version (tests/unit/test_ee_name.py finds the first two the same way): the EE's and the DE's
# image tags, the collection tarball's name, ansible-galaxy's name:version and the environments' requirement of the
# collection (extensions/environments/requirements.yml), in every file but the changelogs.
DERIVED = r"(gpushare-[ed]e:|gpushare-k8s-|gpushare\.k8s:|name: gpushare\.k8s\n\s+version: ){version}\b"


def clean_env():
    """The environment without the Makefile's PYTHONPATH and ANSIBLE_* (they point ansible at the working tree), the
    project venv's tools first on PATH."""
    env = dict((key, value) for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "GALAXY_IMPORTER")))
    env.pop("PYTHONPATH", None)
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")  # ansible-doc for antsibull-changelog
    return env


def run(command, cwd=None, env=None, check=True):
    """``command`` with its output captured, by default in clean_env(); raises SystemExit on failure if ``check``."""
    completed = subprocess.run(
        command,
        cwd=cwd,
        env=env or clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if check and completed.returncode:
        raise SystemExit("%s exited %d:\n%s" % (" ".join(command), completed.returncode, completed.stdout))
    return completed


def galaxy_version(root):
    with open(os.path.join(root, "galaxy.yml")) as stream:
        return str(yaml.safe_load(stream)["version"])


def release_version(version):
    """The release a version leads to: ``1.0.0-dev0`` -> ``1.0.0``; a release's version is its own."""
    match = SEMVER.match(version)
    if not match:
        raise SystemExit("galaxy.yml's version %r is not MAJOR.MINOR.PATCH[-PRERELEASE]" % version)
    return "%s.%s.%s" % match.groups()[:3]


def check_tag(tag, root=ROOT):
    """The release workflow's check: the pushed tag names galaxy.yml's version, and that is a release's."""
    version = galaxy_version(root)
    if tag != "v" + version:
        raise SystemExit(
            "tag %s does not match galaxy.yml's version %s (the tag must be v%s)" % (tag, version, version)
        )
    if release_version(version) != version:
        raise SystemExit("galaxy.yml's version %s is a pre-release: run tools/release.py cut, commit, tag" % version)


def tracked_files(root):
    """What git would commit now: tracked files that exist and untracked ones it does not ignore. In a copy
    (copy_collection: no .git), every file."""
    if not os.path.exists(os.path.join(root, ".git")):
        found = []
        for directory, _subdirectories, names in os.walk(root):
            found.extend(os.path.relpath(os.path.join(directory, name), root) for name in names)
        return sorted(found)
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root).stdout
    return sorted(set(path for path in listed.split("\0") if path and os.path.isfile(os.path.join(root, path))))


def bump(root, new_version):
    """galaxy.yml's version and every name made from it (DERIVED) set to ``new_version``; the files changed."""
    old = galaxy_version(root)
    if not SEMVER.match(new_version):
        sys.exit("%r is not MAJOR.MINOR.PATCH[-PRERELEASE]" % new_version)
    changed = []
    pattern = re.compile(DERIVED.format(version=re.escape(old)))
    for path in tracked_files(root):
        if path.startswith("changelogs/") or path == "CHANGELOG.rst":
            continue
        full = os.path.join(root, path)
        try:
            with open(full) as stream:
                text = stream.read()
        except UnicodeDecodeError:
            continue
        new = pattern.sub(lambda match: match.group(1) + new_version, text)
        if path == "galaxy.yml":
            new, count = re.subn(r"(?m)^version: %s$" % re.escape(old), "version: " + new_version, new)
            if count != 1:
                raise SystemExit("galaxy.yml: no single 'version: %s' line" % old)
        if new != text:
            with open(full, "w") as stream:
                stream.write(new)
            changed.append(path)
    return changed


def changelog_release(root, version, date=None):
    """``antsibull-changelog release`` of ``version`` in ``root`` (its galaxy.yml already says ``version``)."""
    changelog = os.path.join(VENV_BIN, "antsibull-changelog")
    # --reload-plugins: the plugin cache (changelogs/.plugin-cache.yaml) may be stale; a plugin is listed as new in
    # the release its version_added names, read afresh from the plugins' docs.
    command = [changelog, "release", "--reload-plugins", "--version", version]
    command += ["--date", date or datetime.date.today().isoformat()]
    run(command, cwd=root)
    run([changelog, "lint"], cwd=root)


def released_versions(root):
    with open(os.path.join(root, "changelogs", "changelog.yaml")) as stream:
        return set(str(version) for version in (yaml.safe_load(stream).get("releases") or {}))


def fragments(root):
    directory = os.path.join(root, "changelogs", "fragments")
    return sorted(name for name in os.listdir(directory) if not name.startswith("."))


def cut(root=ROOT):
    """The release commit's edits, in ``root``: the version made a release's, the changelog released."""
    version = release_version(galaxy_version(root))
    changed = bump(root, version)
    changelog_release(root, version)
    return version, changed


def copy_collection(root, work):
    """The files git would commit, copied into ``work``/ansible_collections/gpushare/k8s; its path."""
    collection = os.path.join(work, "ansible_collections", "gpushare", "k8s")
    for path in tracked_files(root):
        target = os.path.join(collection, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(root, path), target)
    return collection


def prepare(collection):
    """Step 1 in the copy: the release's version and its changelog. Returns the version."""
    current = galaxy_version(collection)
    version = release_version(current)
    if current != version:
        cut(collection)
        return version
    # The tagged release commit: `cut` was run and committed; regenerating must change nothing.
    if version not in released_versions(collection):
        raise SystemExit(
            "changelogs/changelog.yaml has no release %s: run tools/release.py cut before tagging" % version
        )
    if fragments(collection):
        raise SystemExit("changelog fragments left after release %s: %s" % (version, ", ".join(fragments(collection))))
    with open(os.path.join(collection, "CHANGELOG.rst")) as stream:
        before = stream.read()
    run([os.path.join(VENV_BIN, "antsibull-changelog"), "generate"], cwd=collection)
    with open(os.path.join(collection, "CHANGELOG.rst")) as stream:
        if stream.read() != before:
            raise SystemExit(
                "CHANGELOG.rst is not what antsibull-changelog generates: run antsibull-changelog generate"
            )
    return version


def build(collection, dist):
    os.makedirs(dist, exist_ok=True)
    command = [os.path.join(VENV_BIN, "ansible-galaxy"), "collection", "build", "--force", "--output-path", dist]
    run(command + [collection], cwd=dist)
    info = yaml.safe_load(open(os.path.join(collection, "galaxy.yml")))
    return os.path.join(dist, "%s-%s-%s.tar.gz" % (info["namespace"], info["name"], info["version"]))


def importer_settings(ansible_test):
    settings = dict(AUTOMATION_HUB)
    if ansible_test != "off":
        settings.update(
            run_ansible_test=True, ansible_test_local_image=True, local_image_docker=ansible_test == "docker"
        )
    return settings


def galaxy_import(tarball, work, ansible_test="off"):
    """galaxy-importer on ``tarball`` with Automation Hub's settings, nothing else on the collections path.
    Returns (its log, importer_result.json); a failed import or an ERROR line in the log raises."""
    venv_bin = os.path.join(galaxy_importer_venv(), "bin")
    cwd = os.path.join(work, "galaxy-import")
    empty = os.path.join(cwd, "collections")  # no kubernetes.core anywhere, as on Galaxy and Automation Hub
    os.makedirs(empty, exist_ok=True)
    config = os.path.join(cwd, "galaxy-importer.cfg")
    with open(config, "w") as stream:
        stream.write("[galaxy-importer]\n")
        for key, value in sorted(importer_settings(ansible_test).items()):
            stream.write("%s = %s\n" % (key, value))
    with open(os.path.join(cwd, "ansible.cfg"), "w") as stream:
        stream.write("# empty: nothing from the working tree's tests/ansible.cfg\n")
    env = clean_env()
    env.update(
        PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""),
        GALAXY_IMPORTER_CONFIG=config,
        ANSIBLE_CONFIG=os.path.join(cwd, "ansible.cfg"),
        ANSIBLE_HOME=os.path.join(cwd, "ansible-home"),
        ANSIBLE_COLLECTIONS_PATH=empty,
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_NOCOLOR="1",
    )
    completed = run(
        [os.path.join(venv_bin, "python"), "-m", "galaxy_importer.main", tarball], cwd=cwd, env=env, check=False
    )
    log = completed.stdout
    errors = [line for line in log.splitlines() if line.startswith("ERROR")]
    if completed.returncode or IMPORT_OK not in log or errors:
        raise SystemExit("galaxy-importer (Automation Hub's settings) refused %s:\n%s" % (tarball, log))
    with open(os.path.join(cwd, "importer_result.json")) as stream:
        return log, json.load(stream)


def actionlint(root=ROOT):
    """actionlint on .github/workflows, shellcheck of the run: scripts included; raises on any finding."""
    try:
        program, shellcheck = actionlint_bin()
    except Unavailable as error:
        raise SystemExit("%s\n(--skip-actionlint: every other step)" % error)
    workflows = os.path.join(root, ".github", "workflows")
    files = sorted(os.path.join(workflows, name) for name in os.listdir(workflows) if name.endswith((".yml", ".yaml")))
    completed = run([program, "-no-color", "-shellcheck", shellcheck] + files, cwd=root, check=False)
    if completed.returncode or completed.stdout.strip():
        raise SystemExit("actionlint:\n%s" % completed.stdout)
    return files


def dry_run(dist, ansible_test="off", skip_actionlint=False, tag=None, root=ROOT):
    """Every step but the upload; the working tree is left as it was. Returns (tarball, importer log, result)."""
    if tag:
        check_tag(tag, root)
    if not skip_actionlint:
        actionlint(root)
    work = tempfile.mkdtemp(prefix="gpushare-release.")
    try:
        collection = copy_collection(root, work)
        version = prepare(collection)
        tarball = build(collection, dist)
        log, result = galaxy_import(tarball, work, ansible_test)
        # The release's notes, for the GitHub release: CHANGELOG.rst's section of this version.
        notes = os.path.join(dist, "release-notes-%s.rst" % version)
        run(
            [os.path.join(VENV_BIN, "antsibull-changelog"), "generate", "--output", notes, "--only-latest"],
            cwd=collection,
        )
        return tarball, log, result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=("cut", "bump"))
    parser.add_argument("version", nargs="?", help="bump: the new version, e.g. 1.1.0-dev0")
    parser.add_argument("--dist", default=os.path.join(ROOT, ".build", "release"))
    parser.add_argument("--tag", help="the release workflow's tag: must be v + galaxy.yml's version")
    parser.add_argument("--ansible-test", choices=("off", "docker", "podman"), default="off")
    parser.add_argument("--skip-actionlint", action="store_true")
    args = parser.parse_args()
    if args.command == "cut":
        version, changed = cut()
        print(
            "release %s: %s, CHANGELOG.rst and changelogs/ changed; review, commit, tag v%s"
            % (version, ", ".join(changed), version)
        )
    elif args.command == "bump":
        if not args.version:
            parser.error("bump needs the new version")
        print("version %s: %s" % (args.version, ", ".join(bump(ROOT, args.version))))
    else:
        tarball, _importer_log, result = dry_run(os.path.abspath(args.dist), args.ansible_test, args.skip_actionlint, args.tag)
        print(
            "%s: galaxy-importer with Automation Hub's settings accepts it (%d plugins documented)"
            % (tarball, len(result["docs_blob"]["contents"]))
        )


if __name__ == "__main__":
    main()
