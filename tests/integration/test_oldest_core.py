"""A platform role and the sharing-plan playbook on the oldest ansible-core meta/runtime.yml admits (issue 38): the
venv ``tools/oldest_core_venv.py --units`` keeps (ansible-core 2.16.19 with kubernetes and highspy, as an Automation
Platform 2.5 execution environment holds them) runs ansible-playbook, and its Python runs the modules (tests/ansible.cfg
makes the controller's Python the modules'). The pinned core runs the same playbooks in test_playbooks.py, the fleet
and Molecule; this file checks that nothing they use is newer than the floor."""

import os
import subprocess
import sys

import pytest
from integration_helpers import REPO, changed_hosts, labels, run_playbook
from test_playbooks import extra_vars
from workloads import create_pods, mig_pod, wait_for_pods

pytestmark = pytest.mark.profiles("openshift")


@pytest.fixture(scope="module")
def oldest_playbook():
    venv = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "oldest_core_venv.py"), "--units"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    version = subprocess.run(
        [os.path.join(venv, "bin", "ansible-playbook"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert version.startswith("ansible-playbook [core 2.16."), version
    return os.path.join(venv, "bin", "ansible-playbook")


def run_ok(cluster, oldest_playbook, playbook, *args):
    code, report, stderr = run_playbook(cluster, playbook, *args, ansible_playbook=oldest_playbook)
    assert code == 0, "%s exited %d on the oldest core: %s" % (playbook, code, stderr)
    return report


def test_the_openshift_role_time_slices_then_changes_nothing_on_the_oldest_core(
    cluster, kube, audit_writes, oldest_playbook
):
    variables = extra_vars({"openshift_nodes": {"names": ["gpu-a100-0"]}})
    with audit_writes() as audit:
        checked = run_ok(cluster, oldest_playbook, "timeslicing.yml", "--check", *variables)
    assert audit.writes == [] and changed_hosts(checked) != {}
    assert changed_hosts(run_ok(cluster, oldest_playbook, "timeslicing.yml", *variables)) != {}
    assert labels(kube.node("gpu-a100-0"))["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    with audit_writes() as audit:
        again = run_ok(cluster, oldest_playbook, "timeslicing.yml", *variables)
    assert changed_hosts(again) == {} and audit.writes == []


def test_the_sharing_plan_playbook_partitions_a_gpu_for_waiting_pods_on_the_oldest_core(
    cluster, api_client, namespace, oldest_playbook
):
    create_pods(api_client, namespace, [mig_pod("small-%d" % n, "1g.10gb", pool=None) for n in range(3)])
    wait_for_pods(api_client, namespace, running=0, waiting=3, timeout=120)
    report = run_ok(cluster, oldest_playbook, "sharing_plan.yml")
    assert changed_hosts(report) != {}
    wait_for_pods(api_client, namespace, running=3, waiting=0, timeout=600)
    assert changed_hosts(run_ok(cluster, oldest_playbook, "sharing_plan.yml")) == {}
