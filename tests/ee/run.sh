#!/usr/bin/env bash
# `make test-ee`: builds the AWX execution environment (tests/ee/build.sh: podman, a local Debian base, ansible-builder)
# and runs the job templates' playbooks inside it as AWX does (tests/ee/test_awx_jobs.py: ansible-runner) against a
# local cluster of its own, stopped at the end. Installs what it needs itself; not part of `make test`'s budget.
#
#   tests/ee/run.sh [pytest arguments...]
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PY:-$REPO/.venv/bin/python}
OUT=$REPO/tests/output/ee
mkdir -p "$OUT"

export CONTAINERS_CONF=${GPUSHARE_EE_DIR:-$REPO/.ee}/containers.conf
started=$(date +%s)
image=$(bash "$REPO/tests/ee/build.sh" | tail -n 1)
built=$(date +%s)
first=$(podman image inspect --format '{{.Id}}' "$image")
echo "=== test-ee: $image built in $((built - started))s"
# The same inputs again: every layer comes from podman's cache, so the image is the same one.
bash "$REPO/tests/ee/build.sh" >/dev/null
again=$(podman image inspect --format '{{.Id}}' "$image")
[ "$again" = "$first" ] || { echo "=== test-ee: the second build made a new image ($again, was $first)"; exit 1; }
echo "=== test-ee: built again from the cache in $(($(date +%s) - built))s, the same image"
built=$(date +%s)

# A cluster of its own, on ports no test job, fleet or developer's cluster uses.
export GPUSHARE_CLUSTER_DIR=${GPUSHARE_EE_CLUSTER_DIR:-$REPO/.cluster-ee} GPUSHARE_ETCD_PORT=25490 \
    GPUSHARE_APISERVER_PORT=19043 GPUSHARE_PROFILE=openshift GPUSHARE_EE_IMAGE=$image
export PYTHONPATH="$REPO:$REPO/.build${PYTHONPATH:+:$PYTHONPATH}"
trap '"$PY" "$REPO/testbed/cluster.py" down >/dev/null 2>&1' EXIT
"$PY" "$REPO/testbed/cluster.py" down >/dev/null 2>&1 || true
"$PY" "$REPO/testbed/cluster.py" up --profile openshift >"$OUT/cluster.log" 2>&1 || { cat "$OUT/cluster.log"; exit 1; }
"$PY" -m pytest "$REPO/tests/ee" -p no:cacheprovider -q -rfEs --junitxml "$OUT/ee.xml" "$@"
echo "=== test-ee: the jobs ran in $(($(date +%s) - built))s"
