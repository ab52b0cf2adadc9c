#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler from Debian's `kubernetes`
# source package (1.20.x, vendored) and caches them under ~/.cache, keyed by the source and Go
# versions, so that only the first run on a machine pays the ~4 minute build. The binaries report the upstream
# version Debian's version names (v1.20.2 for "1.20.5+really1.20.2"), stamped as upstream's build stamps it.
# Prints the folder holding the binaries on its last line.
set -euo pipefail

log() { echo "build-kubernetes: $*" >&2; }
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"

ensure_packages() {
  local missing=()
  for p in etcd-server golang-go golang-github-modern-go-reflect2-dev dpkg-dev openssl; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
  fi
}

ensure_deb_src() {
  # apt-get source needs a deb-src entry; Debian images ship only binary ones.
  if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    log "adding a deb-src entry for bookworm main"
    $SUDO tee /etc/apt/sources.list.d/gpushare-deb-src.sources >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  fi
}

# One installer at a time, machine-wide: clusters started together (the test jobs, a helper's cluster) would
# otherwise run apt-get at once, and all but one fail on apt's lock. The lock is held until this script exits,
# so the later ones find the packages installed and the binaries cached. It lives outside any XDG_CACHE_HOME, so
# runs with different caches still install one at a time.
install_lock=${GPUSHARE_INSTALL_LOCK:-/tmp/gpushare-k8s-install.lock}
exec 8>>"$install_lock"
flock 8

ensure_packages
ensure_deb_src

k8s_version=$(apt-cache showsrc kubernetes 2>/dev/null | awk '/^Version:/{print $2; exit}')
[ -n "$k8s_version" ] || { log "cannot find the Debian source package 'kubernetes' (apt-cache showsrc kubernetes)"; exit 1; }
go_version=$(go env GOVERSION)
# Debian versions this tree "1.20.5+really1.20.2": the real upstream version follows "really".
upstream_version=${k8s_version##*really}; upstream_version=${upstream_version%%-*}
recipe=4   # bump when the build steps below change, so caches built the old way are not reused
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpushare-k8s/kubernetes-${upstream_version}-deb${k8s_version//[^A-Za-z0-9.+-]/_}-${go_version}-r${recipe}"
bins=(kube-apiserver kube-controller-manager kube-scheduler)

mkdir -p "$(dirname "$cache")"

have_all=1
for b in "${bins[@]}"; do [ -x "$cache/bin/$b" ] || have_all=0; done
if [ "$have_all" = 1 ]; then
  log "cached: $cache/bin"
  echo "$cache/bin"
  exit 0
fi

work="$cache/work"
rm -rf "$work"; mkdir -p "$work/src"
log "fetching the source of kubernetes $k8s_version"
( cd "$work/src" && apt-get source -qq kubernetes >/dev/null 2>&1 ) || { log "apt-get source kubernetes failed"; exit 1; }
srcdir=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n1)

# GOPATH mode: Go 1.19's module mode rejects this vendor tree, the upstream 1.20 build used GOPATH.
export GOPATH="$work/gopath" GO111MODULE=off CGO_ENABLED=0 GOFLAGS="" GOCACHE="${XDG_CACHE_HOME:-$HOME/.cache}/gpushare-k8s/gocache"
mkdir -p "$GOPATH/src/k8s.io"
mv "$srcdir" "$GOPATH/src/k8s.io/kubernetes"
cd "$GOPATH/src/k8s.io/kubernetes"

# reflect2 1.0.1 (vendored) crashes with Go >= 1.18 on the first custom-resource write; 1.0.2 does not.
rm -rf vendor/github.com/modern-go/reflect2
cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 vendor/github.com/modern-go/reflect2

log "generating pkg/generated/openapi"
go build -o "$work/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
pkgs=$(grep -rl --include='*.go' '+k8s:openapi-gen=' pkg staging/src/k8s.io vendor/k8s.io 2>/dev/null \
        | xargs -n1 dirname | sort -u \
        | sed -e 's#^staging/src/#k8s.io/kubernetes/vendor/#' -e 's#^vendor/#k8s.io/kubernetes/vendor/#' -e 's#^pkg/#k8s.io/kubernetes/pkg/#' \
        | sort -u | paste -sd, -)
"$work/openapi-gen" --logtostderr -i "$pkgs" -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
  -h hack/boilerplate/boilerplate.generatego.txt --output-base "$GOPATH/src" \
  -r "$work/openapi-violations.txt" >"$work/openapi-gen.log" 2>&1 \
  || { log "openapi-gen failed, see $work/openapi-gen.log"; tail -20 "$work/openapi-gen.log" >&2; exit 1; }

# The version the binaries report (/version, what Helm compares a chart's kubeVersion with): upstream's
# hack/lib/version.sh, as `make` runs it (Debian's debian/rules builds through `make`). This tree is a `git archive`
# export, so the script reads the commit and the tag from its own expanded $Format strings (tree state "archive")
# and derives gitMajor/gitMinor from the tag; without the -X flags the binaries report base.go's fallback,
# v0.0.0-master+<commit>. buildDate is Debian's changelog date, as dpkg-buildpackage's SOURCE_DATE_EPOCH.
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l debian/changelog -S Timestamp)
export SOURCE_DATE_EPOCH
export KUBE_ROOT=$PWD KUBE_GO_PACKAGE=k8s.io/kubernetes  # what hack/lib/version.sh reads
# shellcheck source=/dev/null
source hack/lib/version.sh
kube::version::get_version_vars
if [ "${KUBE_GIT_VERSION:-}" != "v$upstream_version" ]; then
  log "the source tree says version '${KUBE_GIT_VERSION:-}', Debian's version $k8s_version says v$upstream_version"
  exit 1
fi
version_ldflags=$(kube::version::ldflags)

log "building ${bins[*]} $KUBE_GIT_VERSION (a few minutes the first time)"
mkdir -p "$cache/bin.tmp"
go build -trimpath -ldflags "-s -w $version_ldflags" \
  -o "$cache/bin.tmp/" ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler
rm -rf "${cache:?}/bin"; mv "$cache/bin.tmp" "$cache/bin"
rm -rf "$work"   # the source tree is 1 GB; the Go build cache stays for a faster rebuild
log "built: $cache/bin"
echo "$cache/bin"
