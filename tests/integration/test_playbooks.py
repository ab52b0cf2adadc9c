"""The playbooks as a user runs them against one cluster (issue 11, "Done when"): ``--check`` writes nothing
(audit log), the real run changes the cluster, the same run again changes nothing and writes nothing. VKS refuses
``mig.yml`` before any write, with the reason. ``timeslicing.yml``, ``reset.yml``, ``verify.yml`` and
``preflight.yml`` get the same treatment on every platform at once in the fleet test (tests/fleet).

MPS on VKS is not run here: the vks Molecule scenario converges the vks role with MPS and runs it again (nothing
changes), and the fleet test runs ``site.yml``'s platform detection and check mode on VKS; ``mps.yml`` differs from
``timeslicing.yml`` only by ``gpushare_mode``."""

import json
import os
import subprocess

import pytest
from integration_helpers import ANSIBLE_PLAYBOOK, REPO, changed_hosts, labels, module_env, run_playbook

from testbed.simulator.names import MIG_STUCK_ANNOTATION

# profile -> playbook -> (its role variables, a node it changes, the strategy that node shows afterwards)
# Booleans as an AWX survey passes them, strings ("false"): the roles must read them as booleans (issue 21).
RUNS = {
    "openshift": {
        "mps.yml": ({"openshift_nodes": {"names": ["gpu-a100-0"]}}, "gpu-a100-0", "mps"),
        "mig.yml": (
            {
                "openshift_nodes": {"names": ["gpu-h100-0"]},
                "openshift_mig_strategy": "mixed",
                "openshift_mig_config": "all-1g.10gb",
            },
            "gpu-h100-0",
            None,
        ),
    },
}


def extra_vars(variables):
    return ["-e", json.dumps(variables)]


def run_ok(cluster, playbook, *args):
    code, report, stderr = run_playbook(cluster, playbook, *args)
    assert code == 0, "%s exited %d: %s" % (playbook, code, stderr)
    return report


@pytest.mark.parametrize(
    "playbook",
    [
        pytest.param(playbook, marks=pytest.mark.profiles(profile), id="%s-%s" % (profile, playbook))
        for profile, runs in sorted(RUNS.items())
        for playbook in sorted(runs)
    ],
)
def test_check_then_run_then_run_again(cluster, kube, profile, audit_writes, playbook):
    variables, node, strategy = RUNS[profile.name][playbook]
    before = labels(kube.node(node))
    with audit_writes() as audit:
        checked = run_ok(cluster, playbook, "--check", *extra_vars(variables))
    assert audit.writes == [] and changed_hosts(checked) != {}
    assert labels(kube.node(node)) == before

    assert changed_hosts(run_ok(cluster, playbook, *extra_vars(variables))) != {}
    shown = labels(kube.node(node))
    if strategy:
        assert shown["nvidia.com/gpu.sharing-strategy"] == strategy
    else:
        assert shown["nvidia.com/mig.config"] == variables["openshift_mig_config"]
    with audit_writes() as audit:
        again = run_ok(cluster, playbook, *extra_vars(variables))
    assert changed_hosts(again) == {} and audit.writes == []


@pytest.mark.profiles("vks")
def test_mig_on_vks_is_refused_before_any_write(cluster, audit_writes):
    with audit_writes() as audit:
        code, report, _stderr = run_playbook(cluster, "mig.yml")
    assert code == 2 and audit.writes == []
    # The only cluster failed, so the run ends there (no summary play): the failure is the rescue's message.
    [message] = [
        task["hosts"]["localhost"]["msg"]
        for play in report["plays"]
        for task in play["tasks"]
        if task["task"]["name"] == "Fail this cluster only"
    ]
    assert "FAILED at 'Refuse MIG, which the role does not do on VKS'" in message and "not MIG" in message, message


@pytest.mark.profiles("openshift")
def test_a_mig_change_shows_the_nodes_still_pending_round_after_round(cluster, kube):
    """Issue 38: a MIG change without a drain is waited for in rounds (sharing_progress_seconds), each naming the nodes
    still pending, so that a job's output shows progress. gpu-h100-1's mig-manager stays pending (gpu-operator
    #2833, the simulator's mig-stuck) until, two rounds later, it is let go: the next round sees both nodes done."""
    kube.annotate_node("gpu-h100-1", {MIG_STUCK_ANNOTATION: "true"})
    variables = {
        "openshift_nodes": {"names": ["gpu-h100-0", "gpu-h100-1"]},
        "openshift_mig_strategy": "mixed",
        "openshift_mig_config": "all-1g.10gb",
        "openshift_wait_timeout": 120,
        "sharing_progress_seconds": 3,
    }
    playbook = subprocess.Popen(
        [ANSIBLE_PLAYBOOK, "-i", "localhost,", os.path.join(REPO, "playbooks", "mig.yml")] + extra_vars(variables),
        env=module_env(cluster, {"ANSIBLE_CONFIG": os.path.join(REPO, "tests", "ansible.cfg")}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output, pending_rounds = [], 0
    try:
        for line in playbook.stdout:  # the role's rounds end by sharing_wait_timeout at the latest
            output.append(line)
            if line.startswith("ok: [localhost]") and "(item=gpu-h100-1)" in line:
                pending_rounds += 1
                if pending_rounds == 2:
                    kube.annotate_node("gpu-h100-1", {MIG_STUCK_ANNOTATION: None})
        assert playbook.wait(timeout=60) == 0, "".join(output)
    finally:
        if playbook.poll() is None:
            playbook.kill()
    text = "".join(output)
    assert pending_rounds == 2, text
    assert "TASK [gpushare.k8s.sharing : Show the nodes still pending after round 2]" in text
    assert "nvidia.com/mig.config.state=pending" in text
    for node in ("gpu-h100-0", "gpu-h100-1"):
        assert labels(kube.node(node))["nvidia.com/mig.config.state"] == "success"
