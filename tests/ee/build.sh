#!/usr/bin/env bash
# Builds the AWX execution environment of execution-environment.yml, or the EDA decision environment of
# decision-environment.yml, with ansible-builder and podman, here, where there is no container registry and no Galaxy
# (`make test-ee` runs it, then the jobs and the rulebook in them: tests/ee/).
#
#   bash tests/ee/build.sh [decision-environment.yml]   # prints the image's name on its last line
#
# What differs from a build on a Red Hat base with Galaxy reachable (docs/AWX.md) is set through ansible-builder's
# own options, in a copy of the definition that tests/ee/local_definition.py writes; the definition itself is used
# unchanged otherwise:
# - the base image is Debian trixie made locally with debootstrap (Python 3.13), imported into podman once and
#   cached there, the same for both; apt-get is its package manager (the DE's Java), its python3 the interpreter;
# - kubernetes.core comes as a tarball of the copy tools/install_collections.py unpacked from PyPI's `ansible`
#   wheel, beside the collection's own tarball, installed offline;
# - every build container uses the host's network and reads the host's CA bundle (the file pip's configuration
#   names), mounted read-only: pip reaches PyPI only through it here.
# podman keeps the layers: a second build with the same inputs reuses them.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VENV=${VENV:-$REPO/.venv}
STATE=${GPUSHARE_EE_DIR:-$REPO/.ee}
DEFINITION=${1:-execution-environment.yml}
# The image's one name: the definition's tag (gpushare-ee:<collection version>, gpushare-de:<collection version>), as
# podman names an image built without a registry (ansible-navigator.yml, awx/gpushare-k8s.yml and eda/gpushare-k8s.yml
# name the same; tests/unit/test_ee_name.py).
IMAGE=localhost/$("$VENV/bin/python" -c 'import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["options"]["tags"][0])' "$REPO/$DEFINITION")
# pip comes with the base: Debian disables ensurepip for its system python, so ansible-builder's pip step is skipped.
BASE_PACKAGES=python3,python3-pip,ca-certificates
BASE_IMAGE=localhost/gpushare-ee-base:trixie-$(printf '%s' "$BASE_PACKAGES" | sha256sum | cut -c1-8)
CA_BUNDLE=${GPUSHARE_EE_CA_BUNDLE:-$(PIP_CONFIG_FILE=${PIP_CONFIG_FILE:-} "$VENV/bin/python" -m pip config get global.cert 2>/dev/null || true)}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
log() { echo "ee-build: $*" >&2; }
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"

mkdir -p "$STATE"
# The default ulimits of containers cannot be raised here ("setrlimit ... operation not permitted").
export CONTAINERS_CONF=$STATE/containers.conf
cat >"$CONTAINERS_CONF" <<'CONF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
CONF

# --- 1. podman and debootstrap, from Debian, one installer at a time machine-wide ---------------------------------
(
    exec 8>>"${GPUSHARE_INSTALL_LOCK:-/tmp/gpushare-k8s-install.lock}"
    flock 8
    missing=()
    for package in podman runc debootstrap; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]}"
        $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
    fi
)

# --- 2. the base image: Debian trixie from the mirror apt already uses ---------------------------------------------
if ! podman image exists "$BASE_IMAGE"; then
    mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    rootfs=$(mktemp -d "${TMPDIR:-/tmp}/gpushare-ee-rootfs.XXXXXX")
    trap 'rm -rf "$rootfs"' EXIT
    log "debootstrap trixie from $mirror"
    $SUDO debootstrap --variant=minbase --include="$BASE_PACKAGES" trixie "$rootfs" "$mirror" \
        >"$STATE/debootstrap.log" 2>&1 || { tail -n 20 "$STATE/debootstrap.log" >&2; exit 1; }
    $SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    $SUDO tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
    log "imported $BASE_IMAGE"
fi

# --- 3. the build context: the collection's tarball and kubernetes.core's, the definition adapted ------------------
work=$STATE/$(basename "$DEFINITION" .yml)
context=$work/context
rm -rf "$context" "$work/source"
mkdir -p "$work/source/collections"
"$VENV/bin/ansible-galaxy" collection build --force --output-path "$work/source/collections" "$REPO" >/dev/null
core=$REPO/.build/ansible_collections/kubernetes/core
[ -f "$core/MANIFEST.json" ] || { log "no kubernetes.core in $REPO/.build: run 'make venv'"; exit 1; }
"$VENV/bin/python" "$REPO/tests/ee/local_definition.py" --repo "$REPO" --source "$work/source" \
    --base-image "$BASE_IMAGE" --tag "$IMAGE" --installed "$core" --definition "$DEFINITION"

log "ansible-builder build of $IMAGE"
(
    cd "$work/source"
    "$VENV/bin/ansible-builder" build --file "$(basename "$DEFINITION")" --context "$context" --tag "$IMAGE" \
        --container-runtime podman --verbosity 2 \
        --build-arg ANSIBLE_GALAXY_CLI_COLLECTION_OPTS=--offline \
        --extra-build-cli-args "--network host --volume $CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro"
) >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; exit 1; }
podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "ee-build: %s, %d MB\n", "'"$IMAGE"'", $1 / 1e6}' >&2
echo "$IMAGE"
