# Copyright: gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline stand-in for ansible-test's pip bootstrap script.

ansible-test bootstraps pip into each of its requirement virtual environments (created
``--without-pip``) by running ``get-pip-<version>.py`` from ci-files.testing.ansible.com, cached as
``~/.ansible/test/cache/get_pip_<version with _>.py``. That host is unreachable here, so
``tests/sanity/run.sh`` copies this file to that cache path instead.

It is run as ``__main__`` with the arguments ansible-test gives get-pip (pip options, then
``pip==<version>``, ``--no-setuptools``, ``--no-wheel``). It installs that pip with the pip wheel
bundled in the interpreter's own ``ensurepip`` (no download needed for the bootstrap itself; the
requested pip comes from the package index like every other requirement). If the interpreter has no
bundled wheel, ``python -m ensurepip`` is used instead.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

MARKER = "gpushare.k8s offline get-pip stand-in"  # run.sh looks for this line before replacing the file


def bundled_pip_wheel():
    """Return the path of the pip wheel bundled with this interpreter's ensurepip, or None."""
    try:
        import ensurepip  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None

    wheels = sorted(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")))

    return wheels[-1] if wheels else None


def main():
    """Install the requested pip into the running interpreter's environment."""
    args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]

    if not any(not arg.startswith("-") for arg in args):
        args.append("pip")

    wheel = bundled_pip_wheel()

    if wheel:
        # A pip wheel is directly runnable: <wheel>/pip is its __main__ package.
        cmd = [sys.executable, os.path.join(wheel, "pip"), "install"] + args
    else:
        subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
        cmd = [sys.executable, "-m", "pip", "install"] + args

    sys.exit(subprocess.call(cmd))


if __name__ == "__main__":
    main()
