"""A virtualenv made once per machine in the cache (``$XDG_CACHE_HOME/gpushare-k8s/<name>``, from PyPI) and reused,
for the tools that need a Python tool chain apart from the project's venv (tools/oldest_core_venv.py,
tools/galaxy_importer_venv.py, tools/awxkit_venv.py). It installs with the project venv's uv (requirements-dev.txt),
which this runs under: several times faster than pip, which matters on a new machine, where ``make test`` makes
all three. ``--compile-bytecode`` as pip does, for the reason the Makefile gives for the project venv."""

import fcntl
import os
import shutil
import subprocess
import sys


def cached_venv(name, requirements):
    """The path of the virtualenv ``name`` holding ``requirements`` (pip specifiers), made if missing."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    venv = os.path.join(cache, "gpushare-k8s", name)
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    # Under a lock, and marked installed only at the end: a run beside this one waits, an interrupted one is redone.
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(venv, ".installed")):
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            uv = os.path.join(os.path.dirname(sys.executable), "uv")
            install = [
                uv,
                "pip",
                "install",
                "-q",
                "--compile-bytecode",
                "--python",
                os.path.join(venv, "bin", "python"),
            ]
            completed = subprocess.run(
                install + list(requirements), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False
            )
            if completed.returncode:
                raise SystemExit("installing %s failed:\n%s" % (" ".join(requirements), completed.stdout))
            open(os.path.join(venv, ".installed"), "w").close()
    return venv
