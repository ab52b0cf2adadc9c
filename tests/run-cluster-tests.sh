#!/usr/bin/env bash
# The simulator tests (tests/testbed) and the integration tests (tests/integration), once per
# platform profile, each profile on a freshly started local cluster; `make test-cluster` runs this.
#
#   tests/run-cluster-tests.sh [pytest arguments...]
#
# GPUSHARE_PROFILES chooses the profiles (default: openshift scaleway vks). The cluster lives where
# testbed/cluster.py puts it (GPUSHARE_CLUSTER_DIR, default .cluster; GPUSHARE_ETCD_PORT and
# GPUSHARE_APISERVER_PORT move it to other ports). The tests of a profile are told which one runs
# through GPUSHARE_PROFILE, and both conftests find the cluster through its state folder. pytest's
# exit code 5 (no test collected for a profile) counts as success. The cluster is
# stopped at the end, whatever happened. Logs and JUnit XML: tests/output/cluster/<profile>.*
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
PROFILES=${GPUSHARE_PROFILES:-openshift scaleway vks}
CLUSTER_DIR=${GPUSHARE_CLUSTER_DIR:-$REPO/.cluster}
OUT=$REPO/tests/output/cluster

export PYTHONPATH="$REPO:$REPO/.build${PYTHONPATH:+:$PYTHONPATH}"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.build"
# The Molecule scenario works on whatever KUBECONFIG names: make it this cluster, never whatever
# cluster the caller's shell points at.
export KUBECONFIG="$CLUSTER_DIR/kubeconfig"
unset GPUSHARE_PROFILE
mkdir -p "$OUT"

cluster() { "$PY" "$REPO/testbed/cluster.py" "$@"; }
trap 'cluster down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

declare -A STATUS SUMMARY SECONDS_TAKEN
failed=0
started_all=$(date +%s)

for profile in $PROFILES; do
    echo "=== $profile: starting a fresh cluster"
    started=$(date +%s)
    cluster down >/dev/null 2>&1
    if ! cluster up --profile "$profile" >"$OUT/$profile-cluster.log" 2>&1; then
        cat "$OUT/$profile-cluster.log"
        STATUS[$profile]=FAILED
        SUMMARY[$profile]="the cluster did not start (see $OUT/$profile-cluster.log)"
        SECONDS_TAKEN[$profile]=$(($(date +%s) - started))
        failed=1
        continue
    fi

    # The simulator's own tests use the openshift fleet (and start their own throwaway cluster).
    paths="tests/integration"
    [ "$profile" = openshift ] && paths="tests/testbed tests/integration"
    echo "=== $profile: pytest $paths"
    # shellcheck disable=SC2086 # $paths is a list of paths
    GPUSHARE_PROFILE=$profile "$PY" -u -m pytest $paths -p no:cacheprovider -q -rfEs \
        --junitxml "$OUT/$profile.xml" "$@" 2>&1 | tee "$OUT/$profile.log"
    rc=${PIPESTATUS[0]}
    # pytest's final line, e.g. "41 passed, 3 skipped, 12 deselected in 201.33s (0:03:21)"
    SUMMARY[$profile]=$(grep -E '(passed|failed|error|skipped|deselected|no tests ran)' "$OUT/$profile.log" | tail -n 1 | sed -E 's/^=+ | =+$//g')
    if [ "$rc" = 0 ] || [ "$rc" = 5 ]; then
        echo "=== $profile: molecule test -s timeslicing"
        # From a freshly seeded fleet, not from what the last test left (a node held in MIG pending...).
        "$PY" -m testbed.seed --kubeconfig "$CLUSTER_DIR/kubeconfig-simulator" --profile "$profile" --reset
        if ! (cd "$REPO/extensions" && PATH="$(dirname "$PY"):$PATH" ANSIBLE_CONFIG="$REPO/tests/ansible.cfg" \
                molecule test -s timeslicing >"$OUT/$profile-molecule.log" 2>&1); then
            tail -n 40 "$OUT/$profile-molecule.log"
            rc=1
            SUMMARY[$profile]="molecule failed (see $OUT/$profile-molecule.log)"
        fi
    fi
    SECONDS_TAKEN[$profile]=$(($(date +%s) - started))
    case $rc in
        0) STATUS[$profile]=ok ;;
        5) STATUS[$profile]="ok (no tests for this profile)" ;;
        *) STATUS[$profile]="FAILED (pytest exit $rc)"; failed=1 ;;
    esac
done

cluster down >/dev/null 2>&1

echo
echo "=== cluster tests, $(($(date +%s) - started_all))s in all"
for profile in $PROFILES; do
    printf '%-10s %-32s %5ss  %s\n' "$profile" "${STATUS[$profile]:-not run}" "${SECONDS_TAKEN[$profile]:-0}" "${SUMMARY[$profile]:-}"
done
exit $failed
