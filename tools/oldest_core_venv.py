"""Prints the path of a virtualenv holding the oldest ansible-core meta/runtime.yml's ``requires_ansible`` admits,
at the patch release OLDEST_CORE_TESTED pins (ansible-core's patch releases only fix bugs; Automation Platform's
execution environments carry a recent one), made once per machine in the cache (``$XDG_CACHE_HOME/gpushare-k8s``,
pip from PyPI) and reused: `make test-sanity` runs ansible-test from it too, and tests/packaging its ansible-doc, so
the claim is what is tested. ``--units``: a second one with that core and what the unit tests that run on it import
(tools/oldest_core_units.py), pinned as requirements-dev.txt pins them.

    python tools/oldest_core_venv.py [--units]
"""

import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cached_venv import cached_venv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What tools/oldest_core_units.py's tests import besides ansible-core (highspy and numpy: gpu_sharing_plan's solver).
UNIT_REQUIREMENTS = ("pytest", "PyYAML", "kubernetes", "highspy", "numpy")
# The newest patch release of the oldest minor claimed, on PyPI when it was pinned; raise it with new patches.
OLDEST_CORE_TESTED = "2.16.19"


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


def oldest_core_tested():
    """OLDEST_CORE_TESTED, once checked to be a patch release of the floor's minor, at or above the floor."""
    floor = [int(part) for part in oldest_core_claimed().split(".")]
    tested = [int(part) for part in OLDEST_CORE_TESTED.split(".")]
    if tested[:2] != floor[:2] or tested < floor:
        raise SystemExit(
            "requires_ansible starts at %s but tools/oldest_core_venv.py tests %s: pin the newest %d.%d patch release"
            % (oldest_core_claimed(), OLDEST_CORE_TESTED, floor[0], floor[1])
        )
    return OLDEST_CORE_TESTED


def oldest_core_venv():
    version = oldest_core_tested()
    return cached_venv("ansible-core-%s" % version, ["ansible-core==%s" % version])


def development_pins(names):
    """requirements-dev.txt's ``name==version`` line of each of ``names``."""
    with open(os.path.join(ROOT, "requirements-dev.txt")) as stream:
        pins = dict((line.split("==")[0].lower(), line) for line in stream.read().split() if "==" in line)
    return [pins[name.lower()] for name in names]


def oldest_core_units_venv():
    version = oldest_core_tested()
    requirements = ["ansible-core==%s" % version] + development_pins(UNIT_REQUIREMENTS)
    return cached_venv("-".join(requirements).replace("==", "-"), requirements)


if __name__ == "__main__":
    print(oldest_core_units_venv() if sys.argv[1:] == ["--units"] else oldest_core_venv())
