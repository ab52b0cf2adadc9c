#!/usr/bin/env bash
# Benchmarks (`make bench`): the local cluster, the modules on a large fleet, then gpushare.k8s against the
# same change written with kubernetes.core (bench_ab.py, at BENCH_SCALES GPU nodes), then the autopilot of issue 30
# on a Kapsule fleet of BENCH_EDA_NODES H100 nodes (bench_eda.py: a burst of MIG pods to Running through the
# gpu_autoplan rulebook, and its CPU while idle).
#
#   benchmarks/run.sh            BENCH_NODES=1000 BENCH_PROFILE=openshift BENCH_SCALES=1,10,100,1000 by default
#   benchmarks/run.sh eda        the autopilot alone (`make bench-eda`, about 5 minutes)
#
# Stops any cluster in the state folder first and stops the benchmark's cluster at the end (the
# folder and ports are testbed/cluster.py's: GPUSHARE_CLUSTER_DIR, GPUSHARE_ETCD_PORT,
# GPUSHARE_APISERVER_PORT). Results: benchmarks/results/{cluster,modules,ab}.{json,md} and summary.md
# (git-ignored), printed at the end; the A/B and autopilot tables, with their date and machine, also replace the
# ones in docs/BENCHMARKS.md (between the bench:ab and bench:eda markers).
set -euo pipefail

cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
OUT=$REPO/benchmarks/results
NODES=${BENCH_NODES:-1000}
PROFILE=${BENCH_PROFILE:-openshift}
SCALES=${BENCH_SCALES:-1,10,100,1000}
SELECTOR_SCALES=${BENCH_SELECTOR_SCALES:-1,10,100}
EDA_NODES=${BENCH_EDA_NODES:-8}  # H100 nodes: 8 x 7 1g.10gb instances hold the burst of 50

export PYTHONPATH="$REPO:$REPO/.build${PYTHONPATH:+:$PYTHONPATH}"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.build"
unset KUBECONFIG
mkdir -p "$OUT"
rm -f "$OUT/ab.md" "$OUT/eda.md"  # a table from an earlier run is never reported as this one's
trap '"$PY" "$REPO/testbed/cluster.py" down >/dev/null 2>&1' EXIT
machine="$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown),\
 $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"

# The autopilot on a fresh Kapsule fleet; its table replaces docs/BENCHMARKS.md's. Returns bench_eda.py's status.
bench_eda() {
    "$PY" testbed/cluster.py down >/dev/null 2>&1
    "$PY" testbed/cluster.py up --profile scaleway --nodes "$EDA_NODES" >/dev/null
    "$PY" benchmarks/bench_eda.py --out "$OUT" >/dev/null || return $?
    "$PY" benchmarks/readme_table.py docs/BENCHMARKS.md "$OUT/eda.md" "$machine, load average $(cut -d' ' -f1-3 /proc/loadavg)" bench:eda
}

if [ "${1:-}" = eda ]; then
    bench_eda
    cat "$OUT/eda.md"
    exit 0
fi

rc=0
# The A/B runs first, on a fresh cluster: its fleets grow from one scale to the next, and a fleet shrunk from
# 1,000 nodes would leave the controller manager deleting thousands of orphaned pods during the small runs.
if [ "$PROFILE" = openshift ]; then  # the reference playbook targets the openshift profile's operator
    "$PY" testbed/cluster.py down >/dev/null 2>&1
    "$PY" testbed/cluster.py up --profile openshift >/dev/null
    "$PY" benchmarks/bench_ab.py --scales "$SCALES" --selector-scales "$SELECTOR_SCALES" --out "$OUT" >/dev/null || rc=$?
fi
"$PY" benchmarks/bench_cluster.py --profile "$PROFILE" --nodes "$NODES" --out "$OUT" >/dev/null
"$PY" benchmarks/bench_modules.py --out "$OUT" >/dev/null || rc=$?
bench_eda || rc=$?

{
    echo "## gpushare.k8s benchmarks"
    echo
    echo "$machine, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    cat "$OUT/cluster.md"
    echo
    cat "$OUT/modules.md"
    if [ -f "$OUT/ab.md" ]; then echo; cat "$OUT/ab.md"; fi
    if [ -f "$OUT/eda.md" ]; then echo; cat "$OUT/eda.md"; fi
} > "$OUT/summary.md"
if [ -f "$OUT/ab.md" ]; then
    "$PY" benchmarks/readme_table.py docs/BENCHMARKS.md "$OUT/ab.md" "$machine"
fi
cat "$OUT/summary.md"
echo
echo "JSON: $OUT/cluster.json $OUT/modules.json $OUT/ab.json $OUT/eda.json"
exit $rc
