"""Prints the path of a virtualenv holding the AWX CLI (awxkit, pinned below), made once per machine in the cache
(``$XDG_CACHE_HOME/gpushare-k8s``, pip from PyPI) and reused: tests/packaging imports awx/gpushare-k8s.yml with it,
as docs/AWX.md tells users to. awxkit 24.6.1 imports ``pkg_resources``, which setuptools 81 and later no longer
ship (``awx`` then dies with ``No module named 'pkg_resources'``): setuptools is pinned below 81 beside it, apart
from the project's venv and its newer setuptools.

    python tools/awxkit_venv.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cached_venv import cached_venv  # noqa: E402

REQUIREMENTS = ["awxkit==24.6.1", "setuptools==80.9.0"]


def awxkit_venv():
    return cached_venv("-".join(REQUIREMENTS).replace("==", "-"), REQUIREMENTS)


if __name__ == "__main__":
    print(awxkit_venv())
