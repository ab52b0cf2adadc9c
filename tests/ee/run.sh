#!/usr/bin/env bash
# `make test-ee`: builds the AWX execution environment and the EDA decision environment (tests/ee/build.sh: podman, a
# local Debian base, ansible-builder), runs the job templates' playbooks inside the EE as AWX does
# (tests/ee/test_awx_jobs.py: ansible-runner) and the gpu_autoplan rulebook inside the DE as an EDA controller
# activation does (tests/ee/test_de_rulebook.py), against a local cluster of its own, stopped at the end. Installs
# what it needs itself; not part of `make test`'s budget.
#
#   tests/ee/run.sh [pytest arguments...]
set -euo pipefail
# A failed build inside $(build ...) must end the run, not hand an old image to the tests.
shopt -s inherit_errexit

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PY:-$REPO/.venv/bin/python}
OUT=$REPO/tests/output/ee
mkdir -p "$OUT"

export CONTAINERS_CONF=${GPUSHARE_EE_DIR:-$REPO/.ee}/containers.conf
# build DEFINITION: the image built twice, the second time from podman's cache (the same inputs: every layer reused,
# so the same image); prints its name.
build() {
    local started built image first again
    started=$(date +%s)
    image=$(bash "$REPO/tests/ee/build.sh" "$1" | tail -n 1)
    built=$(date +%s)
    first=$(podman image inspect --format '{{.Id}}' "$image")
    echo "=== test-ee: $image built in $((built - started))s" >&2
    bash "$REPO/tests/ee/build.sh" "$1" >/dev/null
    again=$(podman image inspect --format '{{.Id}}' "$image")
    if [ "$again" != "$first" ]; then
        echo "=== test-ee: the second build made a new image ($again, was $first)" >&2
        exit 1
    fi
    echo "=== test-ee: built again from the cache in $(($(date +%s) - built))s, the same image" >&2
    echo "$image"
}
ee_image=$(build execution-environment.yml)
de_image=$(build decision-environment.yml)
built=$(date +%s)

# A cluster of its own, on ports no test job, fleet or developer's cluster uses (GPUSHARE_EE_*: another pair, for a
# second run beside it).
export GPUSHARE_CLUSTER_DIR=${GPUSHARE_EE_CLUSTER_DIR:-$REPO/.cluster-ee} GPUSHARE_PROFILE=openshift \
    GPUSHARE_ETCD_PORT=${GPUSHARE_EE_ETCD_PORT:-25490} GPUSHARE_APISERVER_PORT=${GPUSHARE_EE_APISERVER_PORT:-19043} \
    GPUSHARE_EE_IMAGE=$ee_image GPUSHARE_DE_IMAGE=$de_image
export PYTHONPATH="$REPO:$REPO/.build${PYTHONPATH:+:$PYTHONPATH}"
trap '"$PY" "$REPO/testbed/cluster.py" down >/dev/null 2>&1' EXIT
"$PY" "$REPO/testbed/cluster.py" down >/dev/null 2>&1 || true
"$PY" "$REPO/testbed/cluster.py" up --profile openshift >"$OUT/cluster.log" 2>&1 || { cat "$OUT/cluster.log"; exit 1; }
"$PY" -m pytest "$REPO/tests/ee" -p no:cacheprovider -q -rfEs --junitxml "$OUT/ee.xml" "$@"
echo "=== test-ee: the jobs and the rulebook ran in $(($(date +%s) - built))s"
