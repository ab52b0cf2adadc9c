"""What the local stand-ins of Galaxy and get.helm.sh serve to tests/ee/build.sh (tests/ee/galaxy_standin.py), made from
what this machine has: neither is reachable here.

- kubernetes.core: a collection artifact of the copy tools/install_collections.py unpacked from PyPI's ``ansible``
  wheel, as Galaxy serves its tarball.
- helm: the pinned binary tools/install_helm.py put in the venv, in the layout of helm's release archive
  (``helm-<version>-linux-<arch>.tar.gz`` holding ``linux-<arch>/helm``), written byte for byte the same each time so
  that its SHA-256, a build argument, keeps podman's layer cache valid. Its digest differs from the archive helm
  publishes, so the build is given this one's (HELM_ARCHIVE_SHA256) with its address: the definition's install step
  checks it as it checks helm's own.

    python tests/ee/mirror_sources.py --collections DIR --files DIR --installed PATH --helm PATH --helm-version V

Prints the helm archive's file name and SHA-256.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import tarfile


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


def helm_release_archive(helm, version, output_dir):
    """helm's release archive layout around the binary ``helm``: linux-amd64/helm, no timestamps or owners (the same
    bytes from the same binary). Returns its path."""
    name = "helm-%s-linux-amd64.tar.gz" % version
    path = os.path.join(output_dir, name)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        with open(helm, "rb") as stream:
            data = stream.read()
        member = tarfile.TarInfo("linux-amd64/helm")
        member.size, member.mode, member.mtime = len(data), 0o755, 0
        archive.addfile(member, io.BytesIO(data))
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as stream:
        stream.write(buffer.getvalue())
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", required=True, help="where the collection tarballs go")
    parser.add_argument("--files", required=True, help="where helm's archive goes")
    parser.add_argument("--installed", action="append", default=[], help="an installed collection to add as a tarball")
    parser.add_argument("--helm", required=True, help="the pinned helm binary")
    parser.add_argument("--helm-version", required=True)
    args = parser.parse_args(argv)
    for path in args.installed:
        tarball_of_installed_collection(path, args.collections)
    archive = helm_release_archive(args.helm, args.helm_version, args.files)
    with open(archive, "rb") as stream:
        print(os.path.basename(archive), sha256(stream.read()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
