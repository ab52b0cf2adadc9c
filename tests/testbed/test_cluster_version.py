"""The version the local cluster reports: Kubernetes v1.20.2, the upstream release Debian's source package
(1.20.5+really1.20.2) holds, as ``kubectl version`` and Helm read it (testbed/build-kubernetes.sh stamps it).

Nothing here writes to the cluster: Helm renders against it (``--dry-run=server``) and installs nothing.
"""

import os
import subprocess

import pytest
import yaml
from kubernetes import client

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_DIR = os.environ.get("GPUSHARE_CLUSTER_DIR", os.path.join(REPO, ".cluster"))
HELM = os.path.join(REPO, ".venv", "bin", "helm")
# What upstream's hack/lib/version.sh derives from the `git archive` of kubernetes/kubernetes's tag v1.20.2 that
# Debian packages (its commit, its tag, tree state "archive").
RELEASE = {
    "git_version": "v1.20.2",
    "major": "1",
    "minor": "20",
    "git_commit": "faecb196815e248d3ecfb03c680a4507229c2a56",
    "git_tree_state": "archive",
}


def test_the_api_server_reports_the_release_it_was_built_from(api_client):
    # GET /version, what `kubectl version` shows as the server's version.
    version = client.VersionApi(api_client).get_code().to_dict()
    assert {key: version[key] for key in RELEASE} == RELEASE


def kube_version_chart(directory, kube_version):
    """A chart declaring ``kube_version`` whose one ConfigMap shows the Kubernetes version Helm sees."""
    os.makedirs(os.path.join(directory, "templates"))
    chart = {"apiVersion": "v2", "name": "kube-version", "version": "0.1.0", "kubeVersion": kube_version}
    with open(os.path.join(directory, "Chart.yaml"), "w") as chart_file:
        yaml.safe_dump(chart, chart_file)
    with open(os.path.join(directory, "templates", "configmap.yaml"), "w") as template:
        template.write(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-version\n"
            "data:\n  version: {{ .Capabilities.KubeVersion.Version | quote }}\n"
        )
    return directory


def helm_render(chart):
    """``helm template`` against the cluster (its discovery and version, as ``helm install`` reads them)."""
    if not os.access(HELM, os.X_OK):
        pytest.fail("%s is missing: run 'make venv' (tools/install_helm.py installs the pinned helm)" % HELM)
    return subprocess.run(
        [HELM, "template", chart, "--dry-run=server", "--kubeconfig", os.path.join(CLUSTER_DIR, "kubeconfig")],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_helm_sees_the_release_and_accepts_nvidias_kube_version_constraint(api_client, tmp_path):
    # NVIDIA's gpu-operator chart v24.3.0 declares ">= 1.16.0-0" (deployments/gpu-operator/Chart.yaml).
    rendered = helm_render(kube_version_chart(str(tmp_path / "chart"), ">= 1.16.0-0"))
    assert rendered.returncode == 0, rendered.stderr
    assert yaml.safe_load(rendered.stdout)["data"] == {"version": RELEASE["git_version"]}


def test_helm_refuses_a_chart_for_a_later_kubernetes(api_client, tmp_path):
    # NVIDIA's NVIDIADriver CRD, for one, needs 1.25 (CEL validation rules): docs/PLATFORM_FACTS.md.
    refused = helm_render(kube_version_chart(str(tmp_path / "chart"), ">= 1.25.0-0"))
    assert refused.returncode != 0
    assert "incompatible with Kubernetes v1.20.2" in refused.stderr
