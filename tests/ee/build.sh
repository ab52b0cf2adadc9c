#!/usr/bin/env bash
# Builds the AWX execution environment, or the EDA decision environment, from the definition the collection ships
# (extensions/environments/), with ansible-builder and podman, here, where there is no container registry, no Galaxy and
# no get.helm.sh (`make test-ee` runs it, then the jobs and the rulebook in them: tests/ee/).
#
#   bash tests/ee/build.sh [decision-environment.yml]   # prints the image's name on its last line
#
# What users build is what is built: the collection's tarball is installed as a user installs it, and ansible-builder
# reads the definition from that installed copy, unchanged. What this machine lacks is given through the definition's
# build arguments only (docs/AWX.md, "Built and run here"):
# - EE_BASE_IMAGE, PYPKG, PYCMD, PKGMGR: Debian trixie made locally with debootstrap, imported into podman once and
#   cached there: its python3 (3.13) as a venv on PATH, apt-get behind a command that takes dnf's arguments (below);
# - ANSIBLE_GALAXY_CLI_COLLECTION_OPTS=--server <stand-in>: tests/ee/galaxy_standin.py on loopback serves the
#   collection's tarball and kubernetes.core's (a tarball of the copy tools/install_collections.py unpacked from PyPI's
#   `ansible` wheel) through Galaxy's API;
# - HELM_ARCHIVE_URL, HELM_ARCHIVE_SHA256: the same stand-in serves the pinned helm binary in helm's archive layout
#   (tests/ee/mirror_sources.py), with that archive's digest;
# - the build containers use the host's network (the stand-in, PyPI) and its CA bundle, with a pip configuration that
#   names it, both mounted read-only (podman options, not the definition's).
# podman keeps the layers: a second build with the same inputs reuses them.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VENV=${VENV:-$REPO/.venv}
STATE=${GPUSHARE_EE_DIR:-$REPO/.ee}
DEFINITION=${1:-execution-environment.yml}
# The stand-in's port: fixed, because its address is a build argument and so part of podman's cache key.
GALAXY_PORT=${GPUSHARE_EE_GALAXY_PORT:-18791}
# The image's one name: the definition's tag (gpushare-ee:<collection version>, gpushare-de:<collection version>), as
# podman names an image built without a registry (ansible-navigator.yml, awx/gpushare-k8s.yml and eda/gpushare-k8s.yml
# name the same; tests/unit/test_ee_name.py).
IMAGE=localhost/$("$VENV/bin/python" -c 'import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["options"]["tags"][0])' "$REPO/extensions/environments/$DEFINITION")
BASE_PACKAGES=python3,python3-venv,ca-certificates
# The base's Python: a venv of Debian's python3 (3.13) without pip, first on PATH. Debian runs ensurepip only in a venv,
# and ansible-builder installs pip with it, as on UBI.
PYTHON_HOME=/opt/python
# ansible-builder drives the base's package manager as dnf: `$PKGMGR install $PYPKG -y`, then `$PKGMGR clean all`
# unless PKGMGR_PRESERVE_CACHE is set, and bindep's packages with `$PKGMGR install -y <packages>`. apt-get takes the
# same words, but needs its package lists first (the image keeps none) and is kept from installing recommends.
read -r -d '' APT_AS_DNF <<'SCRIPT' || true
#!/bin/sh
set -e
command=$1
shift
case $command in
install)
    missing=0
    for argument in "$@"; do
        case $argument in -*) ;; *) dpkg-query -W -f='${Status}' "$argument" 2>/dev/null | grep -q "ok installed" || missing=1 ;; esac
    done
    [ "$missing" = 1 ] || exit 0
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -qq --no-install-recommends "$@"
    rm -rf /var/lib/apt/lists/*
    ;;
clean) apt-get clean ;;
*) echo "apt-as-dnf: '$command' is not install or clean" >&2; exit 2 ;;
esac
SCRIPT
BASE_IMAGE=localhost/gpushare-ee-base:trixie-$(printf '%s\n' "$BASE_PACKAGES" "$PYTHON_HOME" "$APT_AS_DNF" | sha256sum | cut -c1-8)
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
    printf '%s\n' "$APT_AS_DNF" | $SUDO tee "$rootfs/usr/local/bin/apt-as-dnf" >/dev/null
    $SUDO chmod 755 "$rootfs/usr/local/bin/apt-as-dnf"
    $SUDO chroot "$rootfs" /usr/bin/python3 -m venv --without-pip "$PYTHON_HOME"
    $SUDO tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' \
        --change "ENV PATH=$PYTHON_HOME/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        - "$BASE_IMAGE" >/dev/null
    $SUDO rm -rf "$rootfs"
    trap - EXIT
    log "imported $BASE_IMAGE"
fi

# --- 3. what Galaxy and get.helm.sh would serve, served on loopback ---------------------------------------------------
work=$STATE/$(basename "$DEFINITION" .yml)
context=$work/context
rm -rf "$context" "$work/mirror" "$work/installed"
mkdir -p "$work/mirror/collections" "$work/mirror/files"
"$VENV/bin/ansible-galaxy" collection build --force --output-path "$work/mirror/collections" "$REPO" >/dev/null
core=$REPO/.build/ansible_collections/kubernetes/core
[ -f "$core/MANIFEST.json" ] || { log "no kubernetes.core in $REPO/.build: run 'make venv'"; exit 1; }
helm_version=$("$VENV/bin/helm" version --template '{{.Version}}')
read -r helm_archive helm_sha256 < <("$VENV/bin/python" "$REPO/tests/ee/mirror_sources.py" \
    --collections "$work/mirror/collections" --files "$work/mirror/files" --installed "$core" \
    --helm "$VENV/bin/helm" --helm-version "$helm_version")
rm -f "$work/galaxy.url"
"$VENV/bin/python" "$REPO/tests/ee/galaxy_standin.py" --collections "$work/mirror/collections" \
    --files "$work/mirror/files" --port "$GALAXY_PORT" --url-file "$work/galaxy.url" 2>"$work/galaxy.log" &
standin=$!
trap 'kill "$standin" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    [ -s "$work/galaxy.url" ] && break
    kill -0 "$standin" 2>/dev/null || { cat "$work/galaxy.log" >&2; exit 1; }
    sleep 0.1
done
galaxy=$(cat "$work/galaxy.url")

# --- 4. the collection installed as a user installs it; the definition read from there -----------------------------
# A user's environment: not the test venv's (make's PYTHONPATH and ANSIBLE_CONFIG name the working tree, where
# ansible-galaxy would find the collection "already installed").
env -u PYTHONPATH -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="$work/installed" \
    "$VENV/bin/ansible-galaxy" collection install --offline --no-deps -p "$work/installed" \
    "$work"/mirror/collections/gpushare-k8s-*.tar.gz >/dev/null
definition=$work/installed/ansible_collections/gpushare/k8s/extensions/environments/$DEFINITION
printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$STATE/pip.conf"

log "ansible-builder build of $IMAGE from $definition"
"$VENV/bin/ansible-builder" build --file "$definition" --context "$context" --tag "$IMAGE" \
    --container-runtime podman --verbosity 2 \
    --build-arg EE_BASE_IMAGE="$BASE_IMAGE" --build-arg PYPKG=python3 --build-arg PYCMD="$PYTHON_HOME/bin/python3" \
    --build-arg PKGMGR=/usr/local/bin/apt-as-dnf \
    --build-arg ANSIBLE_GALAXY_CLI_COLLECTION_OPTS="--server $galaxy" \
    --build-arg HELM_ARCHIVE_URL="${galaxy}files/$helm_archive" --build-arg HELM_ARCHIVE_SHA256="$helm_sha256" \
    --extra-build-cli-args "--network host --volume $CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro \
--volume $STATE/pip.conf:/etc/pip.conf:ro" >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; exit 1; }
podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "ee-build: %s, %d MB\n", "'"$IMAGE"'", $1 / 1e6}' >&2
echo "$IMAGE"
