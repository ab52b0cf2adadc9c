"""Prints the path of a virtualenv holding galaxy-importer (pinned below) and the ansible-core of
requirements-dev.txt, made once per machine in the cache (``$XDG_CACHE_HOME/gpushare-k8s``, pip from PyPI) and
reused: tests/packaging imports the built tarball with it as Galaxy and Automation Hub do (ansible-doc with no
dependency installed, ansible-lint offline).

    python tools/galaxy_importer_venv.py
"""

import fcntl
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GALAXY_IMPORTER = "galaxy-importer==0.4.44"


def ansible_core_pin():
    with open(os.path.join(ROOT, "requirements-dev.txt")) as stream:
        match = re.search(r"^ansible-core==(\S+)$", stream.read(), re.M)
    return "ansible-core==%s" % match.group(1)


def galaxy_importer_venv():
    requirements = [GALAXY_IMPORTER, ansible_core_pin()]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    venv = os.path.join(cache, "gpushare-k8s", "-".join(requirements).replace("==", "-"))
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    # Under a lock, and marked installed only at the end: a run beside this one waits, an interrupted one is redone.
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(venv, ".installed")):
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            completed = subprocess.run(
                pip + requirements, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False
            )
            if completed.returncode:
                raise SystemExit("installing %s failed:\n%s" % (" ".join(requirements), completed.stdout))
            open(os.path.join(venv, ".installed"), "w").close()
    return venv


if __name__ == "__main__":
    print(galaxy_importer_venv())
