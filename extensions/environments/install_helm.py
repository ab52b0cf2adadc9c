# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install helm from helm's own release archive, verified against its published SHA-256 (the execution
environment's last build step, execution-environment.yml).

    python install_helm.py --dest /usr/local/bin [--url URL --sha256 HEX]

Without ``--url``: the pinned release (HELM_VERSION) for this machine's architecture from https://get.helm.sh, the
address helm's install guide and release notes give, checked against the SHA-256 helm publishes beside it
(``helm-<version>-linux-<arch>.tar.gz.sha256sum``, also in the release notes on GitHub). With ``--url`` (a mirror, an
internal artifact store): that archive, which must then come with its own ``--sha256``; an archive whose digest
differs is refused before anything is unpacked. The binary must report the pinned version before it is put in place.
Standard library only: it runs with the image's Python before anything else is there.
"""

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request

HELM_VERSION = "v4.1.4"
# From helm's release notes for v4.1.4 (https://github.com/helm/helm/releases/tag/v4.1.4), one per architecture the
# execution environment is built for; `uname -m` names them x86_64 and aarch64.
RELEASE_SHA256 = {
    "amd64": "70b2c30a19da4db264dfd68c8a3664e05093a361cefd89572ffb36f8abfa3d09",
    "arm64": "13d03672be289045d2ff00e4e345d61de1c6f21c1257a45955a30e8ae036d8f1",
}
MACHINE_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
RELEASE_URL = "https://get.helm.sh/helm-{version}-linux-{arch}.tar.gz"


class InstallError(Exception):
    pass


def release_archive():
    """The pinned release's URL and SHA-256 for this machine."""
    machine = platform.machine().lower()
    arch = MACHINE_ARCH.get(machine)
    if arch is None:
        raise InstallError(
            "helm %s is pinned for %s only, this machine is %s: pass --url and --sha256 of an archive for it"
            % (HELM_VERSION, ", ".join(sorted(RELEASE_SHA256)), machine)
        )
    return RELEASE_URL.format(version=HELM_VERSION, arch=arch), RELEASE_SHA256[arch]


def download(url, target):
    """``url`` into ``target``; returns its SHA-256."""
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=120) as response, open(target, "wb") as out:
            for block in iter(lambda: response.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
    except OSError as exc:
        raise InstallError("could not download %s: %s" % (url, exc))
    return digest.hexdigest()


def helm_member(archive):
    """The archive's ``<os>-<arch>/helm`` member, as helm's release archives hold it."""
    for member in archive.getmembers():
        parts = member.name.split("/")
        if len(parts) == 2 and parts[1] == "helm" and member.isfile():
            return member
    raise InstallError("no <os>-<arch>/helm file in the archive")


def install(dest, url, sha256):
    os.makedirs(dest, exist_ok=True)
    work = tempfile.mkdtemp(prefix="helm-")
    try:
        archive_path = os.path.join(work, "helm.tar.gz")
        found = download(url, archive_path)
        if found != sha256:
            raise InstallError("%s has SHA-256 %s, expected %s: refused" % (url, found, sha256))
        binary = os.path.join(work, "helm")
        with tarfile.open(archive_path, mode="r:gz") as archive:
            source = archive.extractfile(helm_member(archive))
            with source, open(binary, "wb") as out:
                shutil.copyfileobj(source, out)
        os.chmod(binary, 0o755)
        try:
            version = subprocess.check_output([binary, "version", "--template", "{{.Version}}"], text=True).strip()
        except (OSError, subprocess.CalledProcessError) as exc:
            raise InstallError("the helm in %s does not run: %s" % (url, exc))
        if version != HELM_VERSION:
            raise InstallError("the helm in %s reports %s, expected %s" % (url, version, HELM_VERSION))
        shutil.move(binary, os.path.join(dest, "helm"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("installed helm %s from %s into %s" % (HELM_VERSION, url, dest))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--dest", required=True, help="the bin directory to install into")
    parser.add_argument("--url", default="", help="the archive's address (default: helm's release for this machine)")
    parser.add_argument("--sha256", default="", help="the archive's SHA-256 (required with --url)")
    args = parser.parse_args(argv)
    try:
        if args.url:
            if not args.sha256:
                raise InstallError("--url %s needs the archive's --sha256" % args.url)
            url, sha256 = args.url, args.sha256.lower()
        elif args.sha256:
            raise InstallError("--sha256 checks the archive of --url; the pinned release carries its own")
        else:
            url, sha256 = release_archive()
        install(args.dest, url, sha256)
    except InstallError as exc:
        sys.exit("install_helm.py: %s" % exc)


if __name__ == "__main__":
    main()
