# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``module_defaults`` for ``group/gpushare.k8s.gpushare`` reaches every kubernetes.core module the roles call
that talks to a cluster, kubernetes.core.helm included (issue 29: the vks and hami roles installed their charts on
whatever cluster the default kubeconfig named). No cluster: ansible-playbook runs kubernetes.core.helm with a
stand-in ``helm`` that records what the module hands it (kubernetes.core passes the connection to helm in
``HELM_KUBE*`` variables and a kubeconfig file), then fails. tests/integration/test_action_group.py runs the
collection's modules and kubernetes.core.k8s_info against a cluster with the same group defaults."""

import glob
import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.dirname(sys.executable)
KUBERNETES_CORE = os.path.join(ROOT, ".build", "ansible_collections", "kubernetes", "core")

FAKE_HELM = """#!/bin/sh
# helm as kubernetes.core.helm sees it: a version, then whatever it is asked is recorded and fails.
if [ "$1" = version ]; then
    echo 'version.BuildInfo{Version:"v3.17.0", GitCommit:"", GitTreeState:"clean", GoVersion:"go1.23.0"}'
    exit 0
fi
{
    echo "args=$*"
    for name in HELM_KUBECONTEXT HELM_KUBEAPISERVER HELM_KUBETOKEN HELM_KUBECAFILE HELM_KUBEINSECURE_SKIP_TLS_VERIFY; do
        eval "echo $name=\\${$name:-}"
    done
    echo "kubeconfig=$(cat "$KUBECONFIG" 2>/dev/null)"
} >> "$(dirname "$0")/calls.log"
echo "stand-in helm: nothing installed" >&2
exit 3
"""


def runtime():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as stream:
        return yaml.safe_load(stream)


def kubernetes_core_groups():
    with open(os.path.join(KUBERNETES_CORE, "meta", "runtime.yml")) as stream:
        return yaml.safe_load(stream)["action_groups"]


def group_members():
    """The full names of the actions in group/gpushare.k8s.gpushare, extended groups included."""
    members = set()
    for entry in runtime()["action_groups"]["gpushare"]:
        if isinstance(entry, dict):
            for group in entry["metadata"]["extend_group"]:
                collection, name = group.rsplit(".", 1)
                assert collection == "kubernetes.core", group
                members.update("kubernetes.core." + action for action in kubernetes_core_groups()[name])
        else:
            members.add(entry if "." in entry else "gpushare.k8s." + entry)
    return members


# kubernetes.core modules that never talk to a cluster (helm's local repository list).
LOCAL_ONLY = {"kubernetes.core.helm_repository"}


def task_actions(tasks):
    for task in tasks or []:
        for key in ("block", "rescue", "always"):
            for action in task_actions(task.get(key)):
                yield action
        for key in task:
            if key.startswith("kubernetes.core."):
                yield key


def test_every_kubernetes_core_module_the_roles_call_is_in_the_group():
    called = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")):
        with open(path) as stream:
            called.update(task_actions(yaml.safe_load(stream)))

    assert "kubernetes.core.helm" in called and "kubernetes.core.k8s_info" in called
    assert sorted(called - LOCAL_ONLY - group_members()) == []


def run_helm_with_group_defaults(tmp_path, defaults):
    """One kubernetes.core.helm task (check mode) under ``defaults`` for the group; its result and the stand-in's
    log."""
    tmp_path.mkdir(exist_ok=True)
    helm = tmp_path / "helm"
    helm.write_text(FAKE_HELM)
    helm.chmod(0o755)
    play = {
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "module_defaults": {"group/gpushare.k8s.gpushare": defaults},
        "tasks": [
            {
                "name": "helm",
                "kubernetes.core.helm": {
                    "name": "gpu-operator",
                    "chart_ref": str(tmp_path / "no-chart"),
                    "release_namespace": "gpu-operator",
                    "binary_path": str(helm),
                },
                "check_mode": True,
                "register": "installed",
                "ignore_errors": True,
            },
            {"ansible.builtin.copy": {"content": "{{ installed | to_json }}", "dest": str(tmp_path / "result.json")}},
        ],
    }
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(json.dumps([play]))
    env = dict((key, value) for key, value in os.environ.items() if not key.startswith(("K8S_AUTH_", "ANSIBLE_")))
    env.update(
        ANSIBLE_CONFIG=os.path.join(ROOT, "tests", "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build"),
        ANSIBLE_NOCOLOR="1",
        KUBECONFIG=str(tmp_path / "no-default-kubeconfig"),
    )
    completed = subprocess.run(
        [os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", str(playbook)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout
    calls = tmp_path / "calls.log"
    return json.loads((tmp_path / "result.json").read_text()), calls.read_text() if calls.exists() else ""


def test_group_module_defaults_reach_kubernetes_core_helm_kubeconfig_and_context(tmp_path):
    kubeconfig = tmp_path / "prod.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "prod", "cluster": {"server": "https://prod.example:6443"}}],
                "users": [{"name": "admin", "user": {}}],
                "contexts": [{"name": "prod-admin", "context": {"cluster": "prod", "user": "admin"}}],
                "current-context": "prod-admin",
            }
        )
    )

    result, calls = run_helm_with_group_defaults(tmp_path, {"kubeconfig": str(kubeconfig), "context": "prod-admin"})

    assert result["failed"] and "stand-in helm: nothing installed" in result["msg"]
    assert "HELM_KUBECONTEXT=prod-admin\n" in calls
    assert '"server": "https://prod.example:6443"' in calls  # the kubeconfig given, as the file helm reads


def test_group_module_defaults_reach_kubernetes_core_helm_bearer_token(tmp_path):
    """What AWX's bearer-token credential gives (host, api_key, a CA or no verification), here as group defaults."""
    ca_cert = tmp_path / "ca.crt"
    ca_cert.write_text("not read by the stand-in\n")
    defaults = {"host": "https://prod.example:6443", "api_key": "token-from-module-defaults", "ca_cert": str(ca_cert)}

    result, calls = run_helm_with_group_defaults(tmp_path, defaults)
    insecure, insecure_calls = run_helm_with_group_defaults(tmp_path / "insecure", dict(defaults, validate_certs=False))

    assert result["failed"] and "stand-in helm: nothing installed" in result["msg"]
    assert "HELM_KUBEAPISERVER=https://prod.example:6443\n" in calls
    assert "HELM_KUBETOKEN=token-from-module-defaults\n" in calls
    assert "HELM_KUBECAFILE=%s\n" % ca_cert in calls
    assert "HELM_KUBEINSECURE_SKIP_TLS_VERIFY=\n" in calls
    assert "HELM_KUBEINSECURE_SKIP_TLS_VERIFY=true\n" in insecure_calls


def test_a_connection_option_helm_does_not_take_stops_the_task_before_helm_runs(tmp_path):
    """kubernetes.core.helm takes kubeconfig, context, host, api_key, ca_cert and validate_certs (context and ca_cert
    not together); group defaults with another connection option (a client certificate) fail the helm task instead of
    letting helm fall back to the default kubeconfig's cluster."""
    result, calls = run_helm_with_group_defaults(tmp_path, {"client_cert": str(tmp_path / "admin.crt")})

    assert result["failed"] and "Unsupported parameters" in result["msg"] and "client_cert" in result["msg"]
    assert calls == ""
