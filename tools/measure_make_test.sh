#!/usr/bin/env bash
# How issue 31 measures `make test`: as a newcomer runs it after `make demo` filled the cache. The tools' cached venvs
# (the oldest ansible-core's, awxkit's, galaxy-importer's) are deleted, the Kubernetes build and helm stay; then a
# fresh clone of this repository's HEAD runs `make test` under time(1). Prints the machine's nproc and load first.
#
#   bash tools/measure_make_test.sh [CLONE_DIR]     (default /tmp/gpushare-measure; its log: CLONE_DIR.log)
#
# Run it with nothing else running: the suite is CPU-bound on two cores, so any other load lengthens it.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLONE=${1:-/tmp/gpushare-measure}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/gpushare-k8s

rm -rf "$CACHE"/ansible-core-* "$CACHE"/awxkit-* "$CACHE"/galaxy-importer-*
rm -rf "$CLONE"
git clone -q "$REPO" "$CLONE"
cd "$CLONE"
echo "commit $(git log --oneline -1 | cut -c1-60), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
started=$(date +%s)
status=0
/usr/bin/time -f "make test: %e s wall, %U s user, %S s system" make test >"$CLONE.log" 2>&1 || status=$?
echo "exit $status after $(($(date +%s) - started)) s (log: $CLONE.log)"
tail -n 1 "$CLONE.log"
grep -A 8 "^=== cluster tests" "$CLONE.log" || true
exit "$status"
