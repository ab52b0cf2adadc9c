"""The job templates' playbooks run inside the execution environment as AWX runs a job (issue 21): ansible-runner
with podman process isolation, the project's playbooks in /runner/project, the Kubernetes bearer-token credential
injected as AWX injects it (K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_SSL_CA_CERT, K8S_AUTH_VERIFY_SSL; no
kubeconfig), extra variables as a template and its survey pass them (survey answers as strings), and ``--check`` for
the Check job type. The assertions are on the cluster: the change is made, a Check job and the read-only templates
write nothing (the API server's audit log), and the token never shows in what AWX keeps of a job.

Run by ``make test-ee`` (tests/ee/run.sh), after tests/ee/build.sh built the image, on a cluster of its own."""

import json
import os
import shutil
import subprocess

import ansible_runner
import pytest
import yaml
from integration_helpers import AuditWindow, labels
from kubernetes import client

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

with open(os.path.join(REPO, "extensions", "environments", "execution-environment.yml")) as _stream:
    # The EE's one name (execution-environment.yml's tag), as podman names an image built without a registry.
    IMAGE = os.environ.get("GPUSHARE_EE_IMAGE") or "localhost/" + yaml.safe_load(_stream)["options"]["tags"][0]
NODE = "gpu-t4-0"
# The "GPU sharing on OpenShift" template (awx/gpushare-k8s.yml): its extra variables, then its survey's answers,
# which AWX sends as strings for the multiple-choice booleans and as integers for the integer questions.
TEMPLATE_VARS = {"gpushare_platform": "openshift", "openshift_machinesets": ["gpushare-ocp-gpu-t4-us-east-1a"]}
SURVEY_ANSWERS = {
    "gpushare_mode": "timeslicing",
    "openshift_replicas": 4,
    "openshift_drain": "false",
    "openshift_smoke_test": "false",
    "openshift_autoscaling": "false",
}


@pytest.fixture
def awx_job(cluster, tmp_path):
    """``awx_job(playbook, extravars, check=False)``: one job in the EE; (runner, its private data dir)."""

    jobs = []

    def run(playbook, extravars=None, check=False):
        jobs.append(playbook)
        private = tmp_path / ("job-%d-%s" % (len(jobs), playbook.replace(".yml", "")))
        shutil.copytree(os.path.join(REPO, "playbooks"), private / "project" / "playbooks")
        (private / "inventory").mkdir(parents=True)
        # The AWX file's inventory (awx/gpushare-k8s.yml): the modules run with the EE's own Python.
        (private / "inventory" / "hosts").write_text(
            "localhost ansible_connection=local ansible_python_interpreter='{{ ansible_playbook_python }}'\n"
        )
        # AWX writes the credential's CA data to a file in the job's private data dir and names it in the variable.
        (private / "env").mkdir()
        shutil.copy(cluster.ca_cert, private / "env" / "k8s_ca.crt")
        envvars = {
            "K8S_AUTH_HOST": cluster.server(),
            "K8S_AUTH_API_KEY": cluster.token(),
            "K8S_AUTH_SSL_CA_CERT": "/runner/env/k8s_ca.crt",
            "K8S_AUTH_VERIFY_SSL": "True",
        }
        runner = ansible_runner.run(
            private_data_dir=str(private),
            playbook="playbooks/" + playbook,
            extravars=extravars or {},
            envvars=envvars,
            cmdline="--check" if check else None,
            process_isolation=True,
            process_isolation_executable="podman",
            container_image=IMAGE,
            # ansible-runner makes the private data dir 0700 for the user who runs it; the job's process in the
            # container must be that user (as ansible-runner itself arranges for docker, and AWX's rootless podman
            # does by mapping), here root: the image's default user (1000) could not write the job's events.
            container_options=["--network=host", "--user=%d" % os.getuid()],
            suppress_env_files=True,
            quiet=True,
        )
        return runner, private

    return run


def stdout(runner):
    return runner.stdout.read()


def test_the_image_runs_python_3_13_which_verifies_certificates_strictly():
    shown = subprocess.run(["podman", "run", "--rm", IMAGE, "python3", "--version"], capture_output=True, text=True)
    assert shown.stdout.startswith("Python 3.13"), shown


def podman_run(*command):
    return subprocess.run(["podman", "run", "--rm", IMAGE] + list(command), capture_output=True, text=True)


def test_the_image_has_the_collections_of_the_definitions_requirements_and_the_pinned_helm():
    """What the galaxy stage installed by name, and what the helm step installed from the archive it checked."""
    with open(os.path.join(REPO, "extensions", "environments", "requirements.yml")) as stream:
        wanted = dict((entry["name"], str(entry["version"])) for entry in yaml.safe_load(stream)["collections"])
    listed = podman_run("ansible-galaxy", "collection", "list", "--format", "json")
    assert listed.returncode == 0, listed
    found = dict(
        (name, entry["version"]) for path in json.loads(listed.stdout).values() for name, entry in path.items()
    )
    assert dict((name, found.get(name)) for name in wanted) == wanted
    helm = podman_run("helm", "version", "--template", "{{.Version}}")
    assert (helm.returncode, helm.stdout) == (0, "v4.1.4"), helm


def test_the_image_has_the_planners_solver_at_the_pinned_version():
    pinned = [
        line.split("==")[1].strip()
        for line in open(os.path.join(REPO, "extensions", "environments", "ee-requirements.txt"))
        if "highspy" in line
    ]
    script = "import highspy, importlib.metadata as m; highspy.Highs(); print(m.version('highspy'))"
    shown = subprocess.run(["podman", "run", "--rm", IMAGE, "python3", "-c", script], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout.strip() == pinned[0], shown


def test_preflight_and_verify_run_read_only(awx_job, cluster, api_client):
    with AuditWindow(cluster, api_client) as audit:
        preflight, _ = awx_job("preflight.yml", {"gpushare_fail_on": "never"})
        verify, _ = awx_job("verify.yml")
    assert (preflight.rc, verify.rc) == (0, 0), stdout(preflight) + stdout(verify)
    assert audit.writes == []
    assert audit.requests and all(event["user"]["username"] == "gpushare-admin" for event in audit.requests)


def test_the_plan_templates_check_job_plans_and_writes_nothing(awx_job, cluster, api_client):
    # The survey's answers as AWX sends them: strings, an empty text answer included.
    answers = {"sharing_plan_pool_label": "", "sharing_plan_allow_moves": "false", "sharing_plan_method": "mps"}
    with AuditWindow(cluster, api_client) as audit:
        checked, _ = awx_job("sharing_plan.yml", answers, check=True)
    assert checked.rc == 0, stdout(checked)
    assert audit.writes == []
    assert "unserved" in stdout(checked)


def test_a_check_job_writes_nothing_and_a_run_job_shares_the_gpus(awx_job, cluster, api_client):
    before = labels(node(api_client))
    extravars = dict(TEMPLATE_VARS, **SURVEY_ANSWERS)
    with AuditWindow(cluster, api_client) as audit:
        checked, _ = awx_job("site.yml", extravars, check=True)
    assert checked.rc == 0, stdout(checked)
    assert audit.writes == [] and labels(node(api_client)) == before
    assert "openshift: timeslicing checked" in stdout(checked)

    ran, _ = awx_job("site.yml", extravars)
    assert ran.rc == 0, stdout(ran)
    shown = labels(node(api_client))
    assert shown["nvidia.com/gpu.sharing-strategy"] == "time-slicing" and shown["nvidia.com/gpu.replicas"] == "4"
    with AuditWindow(cluster, api_client) as audit:
        again, _ = awx_job("site.yml", extravars)
    assert again.rc == 0 and audit.writes == [] and again.stats["changed"].get("localhost", 0) == 0


def test_the_token_never_shows_in_the_jobs_output_or_events(awx_job, cluster, api_client):
    runner, private = awx_job("verify.yml")
    assert runner.rc == 0, stdout(runner)
    token = cluster.token()
    assert token not in stdout(runner)
    assert all(token not in json.dumps(event) for event in runner.events)
    # Every artifact but ansible-runner's own hand-over of the job's environment to podman (env.list, and command, the
    # command line with that environment): AWX keeps a job's stdout and events, its worker keeps those two files only in
    # the private data dir it deletes when the job ends (docs/AWX.md).
    for root, _dirs, files in os.walk(private / "artifacts"):
        for name in files:
            if name not in ("env.list", "command"):
                with open(os.path.join(root, name), errors="replace") as artifact:
                    assert token not in artifact.read(), os.path.join(root, name)


def node(api_client):
    return json.loads(client.CoreV1Api(api_client).read_node(NODE, _preload_content=False).data)
