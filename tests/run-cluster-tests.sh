#!/usr/bin/env bash
# The simulator tests (tests/testbed), the integration tests (tests/integration) and the Molecule
# scenario, once per platform profile, each profile on its own freshly started local cluster;
# `make test-cluster` runs this.
#
#   tests/run-cluster-tests.sh [pytest arguments...]
#
# GPUSHARE_PROFILES chooses the profiles (default: openshift scaleway vks). The profiles run at the
# same time (GPUSHARE_PARALLEL at once, default 3): each on its own cluster, in
# $GPUSHARE_CLUSTER_DIR/<profile> (default .cluster-tests/<profile>), on its own block of ports, so
# nothing one profile's tests do can be seen by another's; within a profile the tests run one after
# the other and every test starts from a freshly seeded fleet. The tests of a profile are told which
# one runs through GPUSHARE_PROFILE. pytest's exit code 5 (no test collected for a profile) counts
# as success. Every cluster is stopped at the end, whatever happened.
# Logs and JUnit XML: tests/output/cluster/<profile>.*
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
PROFILES=${GPUSHARE_PROFILES:-openshift scaleway vks}
PARALLEL=${GPUSHARE_PARALLEL:-3}
CLUSTERS=${GPUSHARE_CLUSTER_DIR:-$REPO/.cluster-tests}
OUT=$REPO/tests/output/cluster

export PYTHONPATH="$REPO:$REPO/.build${PYTHONPATH:+:$PYTHONPATH}"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.build"
unset GPUSHARE_PROFILE
mkdir -p "$OUT" "$CLUSTERS"

# One block of ports per profile: etcd client (+0) and peer (+10), apiserver (+0), controller-manager
# (+1), scheduler (+2). Far from the defaults (23790, 16443) that a developer's own cluster uses.
declare -A ETCD_PORT=([openshift]=24790 [scaleway]=24890 [vks]=24990)
declare -A APISERVER_PORT=([openshift]=17443 [scaleway]=17543 [vks]=17643)

cluster() {
    local profile=$1
    shift
    GPUSHARE_CLUSTER_DIR="$CLUSTERS/$profile" GPUSHARE_ETCD_PORT=${ETCD_PORT[$profile]} \
        GPUSHARE_APISERVER_PORT=${APISERVER_PORT[$profile]} "$PY" "$REPO/testbed/cluster.py" "$@"
}

# shellcheck disable=SC2317 # called by the EXIT trap
stop_all() {
    for profile in $PROFILES; do cluster "$profile" down >/dev/null 2>&1; done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# Runs one profile: cluster, pytest, Molecule. Writes <profile>.status ("rc seconds summary").
run_profile() {
    local profile=$1
    shift
    local dir="$CLUSTERS/$profile" started rc summary
    started=$(date +%s)
    cluster "$profile" down >/dev/null 2>&1
    if ! cluster "$profile" up --profile "$profile" >"$OUT/$profile-cluster.log" 2>&1; then
        echo "1 $(($(date +%s) - started)) the cluster did not start (see $OUT/$profile-cluster.log)" >"$OUT/$profile.status"
        return
    fi
    # The simulator's own tests use the openshift fleet (and start their own throwaway cluster).
    local paths="tests/integration"
    [ "$profile" = openshift ] && paths="tests/testbed tests/integration"
    # shellcheck disable=SC2086 # $paths is a list of paths
    GPUSHARE_PROFILE=$profile GPUSHARE_CLUSTER_DIR="$dir" "$PY" -u -m pytest $paths -p no:cacheprovider -q -rfEs \
        --junitxml "$OUT/$profile.xml" "$@" >"$OUT/$profile.log" 2>&1
    rc=$?
    # pytest's final line, e.g. "41 passed, 3 skipped, 12 deselected in 201.33s (0:03:21)"
    summary=$(grep -E '(passed|failed|error|skipped|deselected|no tests ran)' "$OUT/$profile.log" | tail -n 1 | sed -E 's/^=+ | =+$//g')
    if [ "$rc" = 0 ] || [ "$rc" = 5 ]; then
        # From a freshly seeded fleet, not from what the last test left (a node held in MIG pending...).
        "$PY" -m testbed.seed --kubeconfig "$dir/kubeconfig-simulator" --profile "$profile" --reset >>"$OUT/$profile-molecule.log" 2>&1
        # The scenario works on whatever KUBECONFIG names: this profile's cluster, never the caller's.
        if ! (cd "$REPO/extensions" && PATH="$(dirname "$PY"):$PATH" ANSIBLE_CONFIG="$REPO/tests/ansible.cfg" \
                KUBECONFIG="$dir/kubeconfig" MOLECULE_EPHEMERAL_DIRECTORY="$dir/molecule" \
                molecule test -s timeslicing >>"$OUT/$profile-molecule.log" 2>&1); then
            rc=1
            summary="$summary; molecule failed (see $OUT/$profile-molecule.log)"
        fi
    fi
    cluster "$profile" down >/dev/null 2>&1
    echo "$rc $(($(date +%s) - started)) $summary" >"$OUT/$profile.status"
}

started_all=$(date +%s)
running=0
for profile in $PROFILES; do
    rm -f "$OUT/$profile.status" "$OUT/$profile-molecule.log"
    echo "=== $profile: cluster, pytest and molecule (log: $OUT/$profile.log)"
    run_profile "$profile" "$@" &
    running=$((running + 1))
    if [ "$running" -ge "$PARALLEL" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

failed=0
echo
for profile in $PROFILES; do
    read -r rc seconds summary <"$OUT/$profile.status" 2>/dev/null || { rc=1; seconds=0; summary="did not finish"; }
    case $rc in
        0) status=ok ;;
        5) status="ok (no tests for this profile)" ;;
        *) status="FAILED (exit $rc)"; failed=1
           echo "=== $profile: failures"
           grep -E '^(FAILED|ERROR) ' "$OUT/$profile.log" | head -n 40
           [ -s "$OUT/$profile-molecule.log" ] && tail -n 40 "$OUT/$profile-molecule.log"
           [ -s "$OUT/$profile.log" ] || cat "$OUT/$profile-cluster.log" ;;
    esac
    printf '%-10s %-32s %5ss  %s\n' "$profile" "$status" "$seconds" "$summary" >>"$OUT/summary.txt.new"
done
echo "=== cluster tests, $(($(date +%s) - started_all))s in all"
cat "$OUT/summary.txt.new"
mv "$OUT/summary.txt.new" "$OUT/summary.txt"
exit $failed
