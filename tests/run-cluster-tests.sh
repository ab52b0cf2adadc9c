#!/usr/bin/env bash
# The simulator tests (tests/testbed), the integration tests (tests/integration) and the Molecule
# scenario, once per platform profile, each profile on its own freshly started local cluster;
# `make test-cluster` runs this.
#
#   tests/run-cluster-tests.sh [pytest arguments...]
#
# GPUSHARE_PROFILES chooses the profiles (default: openshift scaleway vks). The work is split into
# jobs (the table below) that run at the same time (GPUSHARE_PARALLEL at once, default 7: all of them; four at a
# time took longer, the jobs waiting on watches leaving the cores idle), each on its own cluster, in
# $GPUSHARE_CLUSTER_DIR/<job> (default .cluster-tests/<job>), on its own ports, so nothing one job's tests do can be
# seen by another's; within a job the tests run one after the other and every test starts
# from a freshly seeded fleet. The tests of a job are told their profile through GPUSHARE_PROFILE. pytest's exit
# code 5 (no test collected) counts as success. What installs or builds (Debian's packages, the Kubernetes
# binaries) happens once, before any job starts. Every cluster is stopped at the end, whatever happened. Logs and
# JUnit XML: tests/output/cluster/<job>.*; the jobs' times in summary.txt, the 20 costliest tests in costliest.txt.
# Each job runs as this script again (GPUSHARE_CLUSTER_JOB=<job>) under tools/cpu_time.py, which counts the CPU time
# of the job's whole process tree, its clusters' processes included: the summary shows it beside the wall time.
# GPUSHARE_JOBS picks jobs by name and GPUSHARE_PORT_OFFSET moves every job's ports (to run a job beside the same
# job of someone else's run).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
PROFILES=${GPUSHARE_PROFILES:-openshift scaleway vks}
PARALLEL=${GPUSHARE_PARALLEL:-7}
CLUSTERS=${GPUSHARE_CLUSTER_DIR:-$REPO/.cluster-tests}
OUT=$REPO/tests/output/cluster

export PYTHONPATH="$REPO:$REPO/.build${PYTHONPATH:+:$PYTHONPATH}"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.build"
unset GPUSHARE_PROFILE
mkdir -p "$OUT" "$CLUSTERS"

# The jobs: a job runs on its own cluster of its profile (the name before the first "-"), its pytest paths, then
# its Molecule scenarios (extensions/molecule/, each seeding the fleet afresh). The openshift profile, which has
# the most tests, is split in four jobs: openshift-mig (the simulator's own tests, the MIG tests, the bad-input
# matrix, the action group), openshift-autopilot (the autopilot over time: about 280 s, mostly idle in the
# rulebook's cool-downs, which made openshift-mig the last job by 190 s when it ran there; and capacity end to end,
# through the playbook and the rulebook, about 110 s), openshift-molecule (the
# playbook and rbac role tests through ansible-playbook, then the openshift Molecule scenario) and openshift (every
# other integration test file). The vks job runs the vks tests, then the vks-helm, vks and hami scenarios. The fleet job starts its own three clusters (tests/fleet), which also
# test timeslicing.yml, reset.yml, verify.yml and preflight.yml on each platform, then the cluster lifecycle tests.
# Each cluster costs about 20 CPU-s to start and 2 CPU-s a minute idle (docs/NOTES.md): jobs are as few as keep the
# two cores busy and the longest job within the others' time (session 16: the fleet ended at 566-603 s, openshift,
# last, at 864-867 s; the lifecycle and action group tests, 42 and 62 s of openshift's, moved to the fleet and
# openshift-mig).
MIG_JOB_FILES="tests/integration/test_gpu_mig_config.py tests/integration/test_bad_input.py
    tests/integration/test_action_group.py"
AUTOPILOT_FILES="tests/integration/test_eda_autoplan_over_time.py tests/integration/test_capacity_end_to_end.py"
# The playbooks and the rbac role through ansible-playbook (a role and the sharing plan on the oldest core too):
# beside the openshift Molecule scenario, the other job that drives the controller.
PLAYBOOK_FILES="tests/integration/test_playbooks.py tests/integration/test_rbac_role.py
    tests/integration/test_oldest_core.py"
# The local Helm charts and what the simulator makes of them (testbed/charts/): on the vks fleet only.
HELM_CHART_FILES="tests/testbed/test_helm_charts.py"
# Starts throwaway clusters of its own, needs none of the job's: in the fleet job, after the fleet's clusters stop
# (so, like the fleet, only when every profile is tested).
LIFECYCLE_FILES="tests/testbed/test_cluster_lifecycle.py"
OTHER_FILES="tests/integration $(for file in $MIG_JOB_FILES $AUTOPILOT_FILES $PLAYBOOK_FILES; do
    printf ' --ignore=%s' "$file"
done)"
declare -A JOB_PYTEST=(
    [openshift-mig]="tests/testbed $MIG_JOB_FILES --ignore=$HELM_CHART_FILES --ignore=$LIFECYCLE_FILES"
    [openshift-autopilot]=$AUTOPILOT_FILES
    [openshift]=$OTHER_FILES
    [openshift-molecule]=$PLAYBOOK_FILES
    [scaleway]="tests/integration"
    [vks]="tests/integration $HELM_CHART_FILES"
)
declare -A JOB_MOLECULE=([openshift-molecule]="openshift" [scaleway]="scaleway" [vks]="vks-helm vks hami")

# One block of ports per job: etcd client (+0) and peer (+10), apiserver (+0), controller-manager
# (+1), scheduler (+2), the simulated kubelets (+3). Far from the defaults (23790, 16443) that a
# developer's own cluster uses.
declare -A ETCD_PORT=([openshift]=24790 [openshift-mig]=24690 [openshift-autopilot]=24590 [openshift-molecule]=24490
    [scaleway]=24890 [vks]=24990)
declare -A APISERVER_PORT=([openshift]=17443 [openshift-mig]=17343 [openshift-autopilot]=17243
    [openshift-molecule]=17143 [scaleway]=17543 [vks]=17643)
PORT_OFFSET=${GPUSHARE_PORT_OFFSET:-0}

# Longest first (measured: tests/output/cluster/summary.txt), so that a job left waiting for a free slot is a short
# one. The fleet job runs only when every profile is tested.
JOBS=""
for job in fleet openshift vks openshift-mig openshift-molecule scaleway openshift-autopilot; do
    case " ${GPUSHARE_JOBS:-$job} " in *" $job "*) ;; *) continue ;; esac
    case " $PROFILES " in
        *" ${job%%-*} "*) JOBS="$JOBS $job" ;;
        *) [ "$job" = fleet ] && [ -z "${GPUSHARE_PROFILES:-}" ] && JOBS="$JOBS fleet" ;;
    esac
done

cluster() {
    local job=$1
    shift
    GPUSHARE_CLUSTER_DIR="$CLUSTERS/$job" GPUSHARE_ETCD_PORT=$((ETCD_PORT[$job] + PORT_OFFSET)) \
        GPUSHARE_APISERVER_PORT=$((APISERVER_PORT[$job] + PORT_OFFSET)) "$PY" "$REPO/testbed/cluster.py" "$@"
}

# Runs one job: cluster, pytest, Molecule. Writes <job>.status ("rc seconds summary").
run_job() {
    local job=$1
    shift
    local profile=${job%%-*} dir="$CLUSTERS/$job" started rc=5 summary="" scenario
    started=$(date +%s)
    if [ "$job" = fleet ]; then
        # Its clusters are its own (not in the CPU file's cluster column), its playbook runs are counted.
        GPUSHARE_FLEET_DIR="$CLUSTERS/fleet" GPUSHARE_TEST_CPU_FILE="$OUT/$job.cpu-tests" \
            "$PY" -u -m pytest tests/fleet "$LIFECYCLE_FILES" -p no:cacheprovider -p tests.cpu_accounting -q -rfEs \
            --junitxml "$OUT/$job.xml" "$@" >"$OUT/$job.log" 2>&1
        rc=$?
        summary=$(grep -E '(passed|failed|error|skipped|no tests ran)' "$OUT/$job.log" | tail -n 1 | sed -E 's/^=+ | =+$//g')
        echo "$rc $(($(date +%s) - started)) $summary" >"$OUT/$job.status"
        return
    fi
    cluster "$job" down >/dev/null 2>&1
    if ! cluster "$job" up --profile "$profile" >"$OUT/$job-cluster.log" 2>&1; then
        echo "1 $(($(date +%s) - started)) the cluster did not start (see $OUT/$job-cluster.log)" >"$OUT/$job.status"
        return
    fi
    if [ -n "${JOB_PYTEST[$job]:-}" ]; then
        # shellcheck disable=SC2086 # a list of paths and options
        GPUSHARE_PROFILE=$profile GPUSHARE_CLUSTER_DIR="$dir" GPUSHARE_TEST_CPU_FILE="$OUT/$job.cpu-tests" \
            "$PY" -u -m pytest ${JOB_PYTEST[$job]} -p no:cacheprovider -p tests.cpu_accounting -q -rfEs \
            --junitxml "$OUT/$job.xml" "$@" >"$OUT/$job.log" 2>&1
        rc=$?
        # pytest's final line, e.g. "41 passed, 3 skipped, 12 deselected in 201.33s (0:03:21)"
        summary=$(grep -E '(passed|failed|error|skipped|deselected|no tests ran)' "$OUT/$job.log" | tail -n 1 | sed -E 's/^=+ | =+$//g')
    fi
    if [ "$rc" = 0 ] || [ "$rc" = 5 ]; then
        # Each scenario's prepare seeds the fleet afresh (GPUSHARE_CLUSTER_DIR), not from what the last test left,
        # and keeps its state in an ephemeral directory of its own (one scenario's "prepared" is not another's).
        # The scenario works on whatever KUBECONFIG names: this job's cluster, never the caller's.
        for scenario in ${JOB_MOLECULE[$job]:-}; do
            local scenario_started
            scenario_started=$(date +%s)
            echo "=== molecule test -s $scenario" >>"$OUT/$job-molecule.log"
            # Its CPU time (Molecule and the playbooks it runs; the cluster's is in the job's) for the costliest list.
            if (cd "$REPO" && PATH="$(dirname "$PY"):$PATH" ANSIBLE_CONFIG="$REPO/tests/ansible.cfg" \
                    KUBECONFIG="$dir/kubeconfig" MOLECULE_EPHEMERAL_DIRECTORY="$dir/molecule/$scenario" \
                    GPUSHARE_CLUSTER_DIR="$dir" "$PY" tools/cpu_time.py "$OUT/$job.molecule-$scenario.cpu" \
                    molecule test -s "$scenario" >>"$OUT/$job-molecule.log" 2>&1); then
                [ "$rc" = 5 ] && rc=0
                summary="${summary:+$summary; }molecule $scenario passed in $(($(date +%s) - scenario_started))s"
            else
                rc=1
                summary="${summary:+$summary; }molecule $scenario failed (see $OUT/$job-molecule.log)"
            fi
        done
    fi
    cluster "$job" down >/dev/null 2>&1
    echo "$rc $(($(date +%s) - started)) $summary" >"$OUT/$job.status"
}

# One job, run by the loop below (as this script again, under tools/cpu_time.py): it stops its own cluster.
if [ -n "${GPUSHARE_CLUSTER_JOB:-}" ]; then
    run_job "$GPUSHARE_CLUSTER_JOB" "$@"
    exit 0
fi

# shellcheck disable=SC2317 # called by the EXIT trap
stop_all() {
    for job in $JOBS; do [ "$job" = fleet ] || cluster "$job" down >/dev/null 2>&1; done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

started_all=$(date +%s)
# Everything the jobs need that installs or builds (Debian's packages, the Kubernetes binaries) happens here, once,
# before any job starts: the jobs then find it all in place (build-kubernetes.sh also locks, for clusters started
# by hand).
if ! bash "$REPO/testbed/build-kubernetes.sh" >/dev/null; then
    echo "=== the Kubernetes binaries could not be installed or built (messages above)"
    exit 1
fi
running=0
for job in $JOBS; do
    rm -f "$OUT/$job.status" "$OUT/$job.cpu" "$OUT/$job-molecule.log" "$OUT/$job.cpu-tests" "$OUT/$job".molecule-*.cpu
    case $job in
        fleet) what="three clusters and the fleet playbooks" ;;
        *-molecule) what="cluster and molecule" ;;
        *) what="cluster, pytest${JOB_MOLECULE[$job]:+ and molecule}" ;;
    esac
    echo "=== $job: $what (log: $OUT/$job.log)"
    GPUSHARE_CLUSTER_JOB=$job "$PY" "$REPO/tools/cpu_time.py" "$OUT/$job.cpu" \
        bash "$REPO/tests/run-cluster-tests.sh" "$@" &
    running=$((running + 1))
    if [ "$running" -ge "$PARALLEL" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

failed=0
echo
rm -f "$OUT/summary.txt.new"
for job in $JOBS; do
    read -r rc seconds summary <"$OUT/$job.status" 2>/dev/null || { rc=1; seconds=0; summary="did not finish"; }
    read -r cpu_seconds <"$OUT/$job.cpu" 2>/dev/null || cpu_seconds="?"
    case $rc in
        0) status=ok ;;
        5) status="ok (no tests for this job)" ;;
        *) status="FAILED (exit $rc)"; failed=1
           echo "=== $job: failures"
           grep -E '^(FAILED|ERROR) ' "$OUT/$job.log" | head -n 40
           [ -s "$OUT/$job-molecule.log" ] && tail -n 40 "$OUT/$job-molecule.log"
           [ -s "$OUT/$job.log" ] || cat "$OUT/$job-cluster.log" ;;
    esac
    printf '%-14s %-28s %5ss %8s CPU-s  %s\n' "$job" "$status" "$seconds" "$cpu_seconds" "$summary" \
        >>"$OUT/summary.txt.new"
done
cpu_all=$(for job in $JOBS; do cat "$OUT/$job.cpu" 2>/dev/null; done | awk '{total += $1} END {printf "%.0f", total}')
echo "=== cluster tests, $(($(date +%s) - started_all))s and ${cpu_all:-?} CPU-s in all (per job: wall time, CPU time)"
cat "$OUT/summary.txt.new"
mv "$OUT/summary.txt.new" "$OUT/summary.txt"
# The budget, kept in view (never asserted by a test): the costliest tests and Molecule scenarios of this run by CPU
# time (tests/cpu_accounting.py), which the load of the machine changes little, with their wall time from the JUnit XML.
echo "=== the 20 costliest tests (CPU-s: in all, pytest, what it started, the cluster; wall s; job; test)"
# shellcheck disable=SC2086 # $JOBS is a list of job names
"$PY" - "$OUT" $JOBS <<'COSTLIEST' | tee "$OUT/costliest.txt"
import glob
import os
import sys
import xml.etree.ElementTree as ElementTree

out, jobs = sys.argv[1], sys.argv[2:]
rows = []
for job in jobs:
    wall = {}
    path = os.path.join(out, job + ".xml")
    if os.path.exists(path):
        for case in ElementTree.parse(path).iter("testcase"):
            wall["%s::%s" % (case.get("classname", "").rpartition(".")[2], case.get("name"))] = float(case.get("time") or 0)
    path = os.path.join(out, job + ".cpu-tests")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                own, children, cluster, total, nodeid = line.rstrip("\n").split("\t")
                module, _, name = nodeid.partition("::")
                key = "%s::%s" % (os.path.basename(module)[: -len(".py")], name)
                rows.append((float(total), "%6s %6s %6s" % (own, children, cluster), wall.get(key, 0.0), job, key))
    for path in glob.glob(os.path.join(out, job + ".molecule-*.cpu")):
        with open(path) as f:
            total = float(f.read())
        scenario = os.path.basename(path)[len(job + ".molecule-") : -len(".cpu")]
        rows.append((total, "%6s %6s %6s" % ("", "%.1f" % total, ""), 0.0, job, "molecule test -s " + scenario))
for total, parts, wall, job, name in sorted(rows, reverse=True)[:20]:
    print("%7.1f %s %7.1f  %-18s %s" % (total, parts, wall, job, name))
COSTLIEST
exit $failed
