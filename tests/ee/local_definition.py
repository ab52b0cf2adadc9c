"""Writes the copy of an ansible-builder definition (execution-environment.yml, or decision-environment.yml) that
tests/ee/build.sh builds here, and the files it names.

Only what this machine lacks changes, each through an ansible-builder option (docs/AWX.md lists them): the base
image (a local Debian trixie), its interpreter (python3, already in the image: nothing to install with a package
manager), its package manager (apt-get, for bindep's packages: the DE's Java; its package lists fetched first, the
base image keeps none), pip (the base's python3-pip: Debian disables ensurepip for its system python), pip's CA
bundle (the host's, mounted read-only during the build) and kubernetes.core (a local tarball instead of Galaxy).
Everything else (ansible-core, ansible-runner, the Python pins, bindep, helm's build step) is the definition's own.

    python tests/ee/local_definition.py --repo REPO --source DIR --base-image NAME --tag NAME [--installed PATH]
        [--definition execution-environment.yml]
"""

import argparse
import glob
import hashlib
import io
import json
import os
import shutil
import tarfile

import yaml

# Where build.sh mounts the host's CA bundle, and where the trixie image's ca-certificates keeps its own.
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def local_definition(definition, base_image, tag, system_packages=False):
    """The definition with this machine's differences: a new dict, the original untouched. ``system_packages``: its
    bindep file names packages, which apt-get installs (without recommends) from lists fetched first."""
    local = yaml.safe_load(yaml.safe_dump(definition))
    local["images"]["base_image"]["name"] = base_image
    local["dependencies"]["python_interpreter"] = {"python_path": "/usr/bin/python3"}
    local["dependencies"]["galaxy"] = "requirements.yml"
    local["additional_build_files"] = [
        entry for entry in local.get("additional_build_files", []) if entry["dest"] != "collections"
    ] + [{"src": "collections/*.tar.gz", "dest": "collections"}]
    steps = local.setdefault("additional_build_steps", {})
    steps["prepend_base"] = ["ENV PIP_CERT=%s" % CA_BUNDLE] + list(steps.get("prepend_base", []))
    if system_packages:
        # ansible-builder's install-from-bindep runs `$PKGMGR install -y $PKGMGR_OPTS <packages>`; build-time ARGs
        # only, the image keeps neither them nor the lists.
        steps["prepend_final"] = [
            "ARG DEBIAN_FRONTEND=noninteractive PKGMGR_OPTS=--no-install-recommends",
            "RUN apt-get update -qq",
        ] + list(steps.get("prepend_final", []))
        steps["append_final"] = list(steps.get("append_final", [])) + ["RUN rm -rf /var/lib/apt/lists/*"]
    local.setdefault("options", {})["package_manager_path"] = "/usr/bin/apt-get"
    # Debian's system python has ensurepip disabled; the base image brings python3-pip instead.
    local["options"]["skip_pip_install"] = True
    local["options"]["tags"] = [tag]
    return local


def names_packages(bindep_text):
    """Whether a bindep file lists any package (the EE's has comments only)."""
    return any(line.split("#")[0].strip() for line in bindep_text.splitlines())


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def tarball_of_installed_collection(path, output_dir):
    """A collection artifact (what ``ansible-galaxy collection build`` makes) of the installed collection at
    ``path``: its files as they are, FILES.json listing only those (PyPI's ``ansible`` wheel, where
    tools/install_collections.py takes kubernetes.core from, leaves out tests/ and .github/ but keeps their
    entries), MANIFEST.json with FILES.json's new checksum. Returns the tarball's path."""
    with open(os.path.join(path, "MANIFEST.json")) as stream:
        manifest = json.load(stream)
    with open(os.path.join(path, "FILES.json")) as stream:
        files = json.load(stream)
    files["files"] = [entry for entry in files["files"] if os.path.lexists(os.path.join(path, entry["name"]))]
    files_json = json.dumps(files, indent=4).encode()
    manifest["file_manifest_file"]["chksum_sha256"] = sha256(files_json)
    manifest_json = json.dumps(manifest, indent=4).encode()
    info = manifest["collection_info"]
    tarball = os.path.join(output_dir, "%s-%s-%s.tar.gz" % (info["namespace"], info["name"], info["version"]))
    with tarfile.open(tarball, "w:gz") as archive:
        for name, data in (("MANIFEST.json", manifest_json), ("FILES.json", files_json)):
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), 0o644
            archive.addfile(member, io.BytesIO(data))
        for entry in files["files"]:
            archive.add(os.path.join(path, entry["name"]), arcname=entry["name"], recursive=False)
    return tarball


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--source", required=True, help="the build's source folder (collections/ already in it)")
    parser.add_argument("--base-image", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--installed", action="append", default=[], help="an installed collection to add as a tarball")
    parser.add_argument("--definition", default="execution-environment.yml", help="relative to --repo")
    args = parser.parse_args(argv)

    for path in args.installed:
        tarball_of_installed_collection(path, os.path.join(args.source, "collections"))

    with open(os.path.join(args.repo, args.definition)) as stream:
        definition = yaml.safe_load(stream)
    with open(os.path.join(args.repo, definition["dependencies"]["system"])) as stream:
        system_packages = names_packages(stream.read())
    tarballs = sorted(
        os.path.basename(path) for path in glob.glob(os.path.join(args.source, "collections", "*.tar.gz"))
    )
    local = local_definition(definition, args.base_image, args.tag, system_packages)
    for name in ("python", "system"):
        path = definition["dependencies"][name]
        os.makedirs(os.path.dirname(os.path.join(args.source, path)) or args.source, exist_ok=True)
        shutil.copy(os.path.join(args.repo, path), os.path.join(args.source, path))
    for entry in definition.get("additional_build_files", []):
        if entry["dest"] != "collections":
            os.makedirs(os.path.join(args.source, os.path.dirname(entry["src"])), exist_ok=True)
            shutil.copy(os.path.join(args.repo, entry["src"]), os.path.join(args.source, entry["src"]))
    with open(os.path.join(args.source, "requirements.yml"), "w") as stream:
        yaml.safe_dump({"collections": [{"name": "collections/" + name, "type": "file"} for name in tarballs]}, stream)
    with open(os.path.join(args.source, os.path.basename(args.definition)), "w") as stream:
        yaml.safe_dump(local, stream, sort_keys=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
