#!/usr/bin/env bash
# Benchmarks (`make bench`): the local cluster, then the modules on a large fleet.
#
#   benchmarks/run.sh            BENCH_NODES=1000 BENCH_PROFILE=openshift by default
#
# Stops any cluster in the state folder first and stops the benchmark's cluster at the end (the
# folder and ports are testbed/cluster.py's: GPUSHARE_CLUSTER_DIR, GPUSHARE_ETCD_PORT,
# GPUSHARE_APISERVER_PORT). Results: benchmarks/results/{cluster,modules}.{json,md} and summary.md
# (git-ignored), printed at the end.
set -euo pipefail

cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
OUT=$REPO/benchmarks/results
NODES=${BENCH_NODES:-1000}
PROFILE=${BENCH_PROFILE:-openshift}

export PYTHONPATH="$REPO:$REPO/.build${PYTHONPATH:+:$PYTHONPATH}"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.build"
unset KUBECONFIG
mkdir -p "$OUT"
trap '"$PY" "$REPO/testbed/cluster.py" down >/dev/null 2>&1' EXIT

"$PY" benchmarks/bench_cluster.py --profile "$PROFILE" --nodes "$NODES" --out "$OUT" >/dev/null
rc=0
"$PY" benchmarks/bench_modules.py --out "$OUT" >/dev/null || rc=$?

{
    echo "## gpushare.k8s benchmarks"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
         "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    cat "$OUT/cluster.md"
    echo
    cat "$OUT/modules.md"
} > "$OUT/summary.md"
cat "$OUT/summary.md"
echo
echo "JSON: $OUT/cluster.json $OUT/modules.json"
exit $rc
