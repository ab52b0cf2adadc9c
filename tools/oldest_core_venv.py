"""Prints the path of a virtualenv holding the oldest ansible-core meta/runtime.yml's ``requires_ansible`` admits,
made once per machine in the cache (``$XDG_CACHE_HOME/gpushare-k8s``, pip from PyPI) and reused: `make test-sanity`
runs ansible-test from it too, and tests/packaging its ansible-doc, so the claim is what is tested.

    python tools/oldest_core_venv.py
"""

import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cached_venv import cached_venv  # noqa: E402

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
    return cached_venv("ansible-core-%s" % version, ["ansible-core==%s" % version])


if __name__ == "__main__":
    print(oldest_core_venv())
