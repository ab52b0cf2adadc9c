"""The collection as users install it: the tarball built by ``ansible-galaxy collection build``, installed offline
into a fresh collections path, runs a playbook against the local cluster from that copy only, with the variables
AWX's bearer-token credential injects and no kubeconfig (issue 11, "Collection packaging").

The tarball's contents, the offline install and the execution environment are checked without a cluster in
``tests/packaging`` (``make test-package``). Packaging does not depend on the platform: one profile is enough.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "packaging"))
from collection_package import build, install  # noqa: E402 (tests/packaging, on the path just above)

pytestmark = pytest.mark.profiles("vks")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh collections path with the installed tarball and kubernetes.core, nothing else."""
    work = str(tmp_path_factory.mktemp("package"))
    tarball = build(os.path.join(work, "dist"))
    path = os.path.join(work, "collections")
    install(tarball, path, work)
    return path


def test_a_playbook_runs_gpu_info_from_the_installed_tarball(installed, kube, run_module_via_playbook, awx_env):
    env = dict(
        awx_env(),
        ANSIBLE_COLLECTIONS_PATH=installed,
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",  # .build must not be found on sys.path either
        PYTHONPATH=None,
        ANSIBLE_VERBOSITY="3",  # "Using module file <path>": where the module was taken from
    )
    result = run_module_via_playbook("gpushare.k8s.gpu_info", {}, env=env)

    assert not result["failed"], "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    assert result["changed"] is False
    assert sorted(result["nodes"]) == sorted(kube.gpu_nodes())
    module_file = os.path.join(installed, "ansible_collections", "gpushare", "k8s", "plugins", "modules", "gpu_info.py")
    assert "Using module file %s" % module_file in result["_stdout"]
