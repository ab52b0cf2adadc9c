#!/usr/bin/env bash
# The autopilot scene of `make demo` (issue 30, docs/EDA.md): ansible-rulebook runs the gpu_autoplan rulebook in the
# background against the demo cluster (KUBECONFIG) while playbooks/demo_autopilot.yml creates pods that wait for MIG
# instances and waits for them to run; the rulebook plans and applies the layout. ansible-rulebook is stopped at the
# end, and what its source decided and its playbook runs are shown.
#
#   KUBECONFIG=... tools/demo_autopilot.sh VENV_DIR WORK_DIR
set -euo pipefail

VENV=$1
WORK=$2
REPO=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$VENV/bin:$PATH"  # ansible-rulebook runs ansible-playbook from PATH

bash "$REPO/tools/install_java.sh"
mkdir -p "$WORK"
cat > "$WORK/inventory.yml" <<INVENTORY
all:
  hosts:
    localhost: {ansible_connection: local, ansible_python_interpreter: "$VENV/bin/python"}
INVENTORY
# One pool (the demo's pods name none), a short settle time: the scene stays short.
echo "gpu_autoplan_settle_seconds: 5" > "$WORK/vars.yml"

# setsid: the rulebook and the playbooks it starts are one process group, stopped together by its ID.
ANSIBLE_NOCOLOR=1 setsid ansible-rulebook --rulebook gpushare.k8s.gpu_autoplan \
    -i "$WORK/inventory.yml" --vars "$WORK/vars.yml" -v > "$WORK/ansible-rulebook.log" 2>&1 &
rulebook=$!
stop_rulebook() {
    kill -TERM -- "-$rulebook" 2>/dev/null || true
    wait "$rulebook" 2>/dev/null || true
}
trap stop_rulebook EXIT
echo "ansible-rulebook (pid $rulebook) follows the cluster; its output: $WORK/ansible-rulebook.log"

ansible-playbook "$REPO/playbooks/demo_autopilot.yml"
stop_rulebook
trap - EXIT
echo "What the rulebook did:"
grep -E "gpu_demand: |PLAY \[|PLAY RECAP|localhost +:" "$WORK/ansible-rulebook.log" | sed 's/^/  /'
