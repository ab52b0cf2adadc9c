#!/usr/bin/env bash
# Java 17 or newer for ansible-rulebook (its rule engine, drools, runs in the JVM): Debian's
# openjdk-17-jre-headless when no such java is on PATH. Called by tests/integration/rulebook.py (the rulebook's test
# and benchmark) and make demo; root only (apt-get), under the machine-wide lock every installing script takes
# (testbed/build-kubernetes.sh), since `make test` runs installers side by side and apt allows one at a time.
set -euo pipefail

PACKAGE=${GPUSHARE_JAVA_PACKAGE:-openjdk-17-jre-headless}

java_major() {
    command -v java >/dev/null || { echo 0; return; }
    # `openjdk version "17.0.15" 2025-04-15`, or "1.8.0_392" for Java 8.
    java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == 1 ? v[2] : v[1]); exit}'
}

if (( $(java_major) >= 17 )); then
    exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    echo "install_java.sh: ansible-rulebook needs Java 17 or newer; install $PACKAGE (Debian) or another JRE 17+ and put its java on PATH" >&2
    exit 1
fi
apt_get() { flock "${GPUSHARE_INSTALL_LOCK:-/tmp/gpushare-k8s-install.lock}" apt-get -o DPkg::Lock::Timeout=600 "$@"; }
echo "install_java.sh: installing $PACKAGE (apt-get) for ansible-rulebook"
export DEBIAN_FRONTEND=noninteractive
apt_get install -y -q --no-install-recommends "$PACKAGE" >/dev/null 2>&1 \
    || { apt_get update -q >/dev/null && apt_get install -y -q --no-install-recommends "$PACKAGE" >/dev/null; }
(( $(java_major) >= 17 )) || { echo "install_java.sh: $PACKAGE is installed but java on PATH is not 17+: $(command -v java)" >&2; exit 1; }
