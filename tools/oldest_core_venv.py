"""Prints the path of a virtualenv holding the oldest ansible-core meta/runtime.yml's ``requires_ansible`` admits,
made once per machine in the cache (``$XDG_CACHE_HOME/gpushare-k8s``, pip from PyPI) and reused: `make test-sanity`
runs ansible-test from it too, and tests/packaging its ansible-doc, so the claim is what is tested.

    python tools/oldest_core_venv.py
"""

import fcntl
import os
import re
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def oldest_core_claimed():
    """The lowest ansible-core meta/runtime.yml admits (``>=X.Y.Z``)."""
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as stream:
        claim = yaml.safe_load(stream)["requires_ansible"]
    match = re.match(r"^>=(\d+\.\d+\.\d+)$", claim)
    if not match:
        raise SystemExit(
            "requires_ansible %r is not a plain floor: say how it is tested (tools/oldest_core_venv.py)" % claim
        )
    return match.group(1)


def oldest_core_venv():
    version = oldest_core_claimed()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    venv = os.path.join(cache, "gpushare-k8s", "ansible-core-%s" % version)
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    # Under a lock, and marked installed only at the end: a run beside this one waits, an interrupted one is redone.
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(venv, ".installed")):
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            completed = subprocess.run(
                pip + ["ansible-core==%s" % version],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                check=False,  # the output goes into the message
            )
            if completed.returncode:
                raise SystemExit("installing ansible-core %s failed:\n%s" % (version, completed.stdout))
            open(os.path.join(venv, ".installed"), "w").close()
    return venv


if __name__ == "__main__":
    print(oldest_core_venv())
