"""Prints the path of a virtualenv holding galaxy-importer (pinned below) and the ansible-core of
requirements-dev.txt, made once per machine in the cache (``$XDG_CACHE_HOME/gpushare-k8s``, pip from PyPI) and
reused: tests/packaging imports the built tarball with it as Galaxy and Automation Hub do (ansible-doc with no
dependency installed, ansible-lint offline).

    python tools/galaxy_importer_venv.py
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cached_venv import cached_venv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GALAXY_IMPORTER = "galaxy-importer==0.4.44"


def ansible_core_pin():
    with open(os.path.join(ROOT, "requirements-dev.txt")) as stream:
        match = re.search(r"^ansible-core==(\S+)$", stream.read(), re.M)
    return "ansible-core==%s" % match.group(1)


def galaxy_importer_venv():
    requirements = [GALAXY_IMPORTER, ansible_core_pin()]
    return cached_venv("-".join(requirements).replace("==", "-"), requirements)


if __name__ == "__main__":
    print(galaxy_importer_venv())
