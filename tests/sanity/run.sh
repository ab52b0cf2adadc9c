#!/usr/bin/env bash
# Run `ansible-test sanity` on the collection as it would be published, offline-safe.
#
#   bash tests/sanity/run.sh [extra ansible-test sanity options, e.g. --test pep8]
#
# 1. builds the collection with `ansible-galaxy collection build` (honours build_ignore in galaxy.yml)
#    and unpacks it into <tmp>/ansible_collections/gpushare/k8s: ansible-test needs that layout;
# 2. seeds ansible-test's pip bootstrap cache with tests/sanity/get_pip.py, because ansible-test
#    otherwise downloads get-pip from ci-files.testing.ansible.com (unreachable here); everything
#    else comes from PyPI into ansible-test's own venvs under ~/.ansible/test/venv (cached, so the
#    second run is fast);
#    the shellcheck program is installed with apt-get when missing (root only), else that test is skipped;
# 3. puts every Python from ansible-test's supported list that actually runs (pyenv versions, not
#    its shims) on PATH, so the multi-version tests (compile, import) also cover the module-only
#    Pythons; versions not installed are skipped with a warning by ansible-test;
# 4. runs `ansible-test sanity` there with the project venv's ansible-test, controller Python 3.12,
#    and copies the results to tests/output/sanity/.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VENV=${VENV:-$REPO/.venv}
PY=$VENV/bin/python

if [[ ! -x $VENV/bin/ansible-test ]]; then
    echo "run.sh: $VENV/bin/ansible-test not found; run 'make venv' first" >&2
    exit 1
fi

# The Makefile exports these for playbooks; here they would make ansible-test import or document the
# working tree (via .build) instead of the built copy under test.
unset PYTHONPATH ANSIBLE_COLLECTIONS_PATH ANSIBLE_COLLECTIONS_PATHS ANSIBLE_CONFIG

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpushare-sanity.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# --- 1. the collection as published --------------------------------------------------------------
"$VENV/bin/ansible-galaxy" collection build --force --output-path "$WORK/dist" "$REPO" >/dev/null
COLLECTION=$WORK/ansible_collections/gpushare/k8s
mkdir -p "$COLLECTION"
tar -xzf "$WORK"/dist/gpushare-k8s-*.tar.gz -C "$COLLECTION"
# galaxy.yml's dependency beside it, as an install puts it: the modules import kubernetes.core's connection argument
# spec, which validate-modules and the import test resolve from there (their docs need only the collection itself).
cp -r "$REPO/.build/ansible_collections/kubernetes" "$WORK/ansible_collections/kubernetes"

# --- 2. offline pip bootstrap for ansible-test's venvs ------------------------------------------
# ansible-test looks for ~/.ansible/test/cache/get_pip_<pip version, dots as _>.py; the version is
# per target Python (python_requirements.get_venv_packages), so seed every one it may ask for.
CACHE=$HOME/.ansible/test/cache
mkdir -p "$CACHE"
pip_versions=$("$PY" - <<'EOF'
import types
from ansible_test._internal.constants import SUPPORTED_PYTHON_VERSIONS
from ansible_test._internal.python_requirements import get_venv_packages
print(' '.join(sorted({get_venv_packages(types.SimpleNamespace(version=v))['pip'] for v in SUPPORTED_PYTHON_VERSIONS})))
EOF
)
for version in $pip_versions; do
    target=$CACHE/get_pip_${version//./_}.py
    rm -f "$target.download"  # left behind by a failed download; harmless, but misleading
    # Never replace a real get-pip someone put there; refresh our own stand-in if it changed.
    if [[ ! -e $target ]] || { grep -q 'gpushare.k8s offline get-pip stand-in' "$target" && ! cmp -s "$REPO/tests/sanity/get_pip.py" "$target"; }; then
        cp "$REPO/tests/sanity/get_pip.py" "$target.$$" && mv -f "$target.$$" "$target"
    fi
done

# The shellcheck sanity test only warns when shellcheck is missing; install it from Debian if we can.
if ! command -v shellcheck >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "run.sh: installing shellcheck (apt-get) for the shellcheck sanity test"
    # One installer at a time (testbed/build-kubernetes.sh takes the same lock): `make test` runs this beside the
    # cluster tests.
    apt_get() { flock "${GPUSHARE_INSTALL_LOCK:-/tmp/gpushare-k8s-install.lock}" apt-get -o DPkg::Lock::Timeout=600 "$@"; }
    { apt_get install -y -q --no-install-recommends shellcheck >/dev/null 2>&1 \
        || { apt_get update -q >/dev/null 2>&1 && apt_get install -y -q --no-install-recommends shellcheck >/dev/null 2>&1; }; } \
        || echo "run.sh: WARNING: could not install shellcheck; the shellcheck sanity test will be skipped" >&2
fi

# --- 3. interpreters ------------------------------------------------------------------------------
# Link working interpreters as pythonX.Y in a private bin directory ahead of PATH (pyenv's shims
# only run the active version). Each must be able to create venvs and bootstrap pip offline.
mkdir -p "$WORK/bin"
versions=$("$PY" -c 'from ansible_test._internal.constants import SUPPORTED_PYTHON_VERSIONS as v; print(" ".join(v))')
found=()
for v in $versions; do
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v" /usr/local/bin/python"$v" /usr/bin/python"$v"; do
        [[ -x $candidate ]] || continue
        if "$candidate" -c "import sys, venv, ensurepip; assert '%d.%d' % sys.version_info[:2] == '$v'" 2>/dev/null; then
            ln -sfn "$candidate" "$WORK/bin/python$v"
            found+=("$v")
            break
        fi
    done
done
echo "run.sh: Python versions available to ansible-test: ${found[*]}"
export PATH=$WORK/bin:$VENV/bin:$PATH

# --- 4. sanity ------------------------------------------------------------------------------------
# No --python: single-version tests use the controller Python (the venv's 3.12); multi-version ones
# run on each Python found above and skip (with a warning) the supported versions not installed.
status=0
(cd "$COLLECTION" && "$VENV/bin/ansible-test" sanity --color no "$@") || status=$?

rm -rf "$REPO/tests/output/sanity"
if [[ -d $COLLECTION/tests/output ]]; then
    mkdir -p "$REPO/tests/output/sanity"
    cp -a "$COLLECTION/tests/output/." "$REPO/tests/output/sanity/"
fi
exit "$status"
