"""The collection's action group (meta/runtime.yml): one ``module_defaults`` for ``group/gpushare.k8s.gpushare``
gives the connection options to the collection's modules and, through ``extend_group``, to kubernetes.core's."""

import json
import os
import tempfile

from integration_helpers import ONE_PROFILE, run_playbook


@ONE_PROFILE
def test_group_module_defaults_reach_the_collections_and_kubernetes_cores_modules(cluster):
    play = {
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "module_defaults": {"group/gpushare.k8s.gpushare": {"kubeconfig": cluster.kubeconfig}},
        "tasks": [
            {"name": "gpu_info", "gpushare.k8s.gpu_info": {}, "register": "info"},
            {"name": "k8s_info", "kubernetes.core.k8s_info": {"kind": "Node"}, "register": "listed"},
        ],
    }
    with tempfile.TemporaryDirectory(prefix="gpushare-group-") as work:
        path = os.path.join(work, "playbook.yml")
        with open(path, "w") as stream:
            json.dump([play], stream)
        # No kubeconfig anywhere else: only module_defaults can bring the modules to the cluster.
        code, report, stderr = run_playbook(cluster, path, env={"KUBECONFIG": os.path.join(work, "none")})
    results = dict((task["task"]["name"], task["hosts"]["localhost"]) for task in report["plays"][0]["tasks"])
    assert code == 0, (results, stderr)
    assert results["gpu_info"]["nodes"] and results["k8s_info"]["resources"]
