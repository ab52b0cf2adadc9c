# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The objects gpu_preflight's checks read (tainted nodes, the operator's DaemonSets and their pods, NFD's worker),
and ``only``, the findings of one check or object: shared by the tests of ``plan/preflight/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from k8s_objects import GPU_TOLERATION, NAMESPACE, container, pod

NFD_PCI = {"feature.node.kubernetes.io/pci-10de.present": "true"}
VALIDATOR = "nvidia-operator-validator"


def tainted(obj, *taints):
    obj = copy.deepcopy(obj)
    obj["spec"]["taints"] = list(taints)
    return obj


def daemonset(name, namespace=NAMESPACE, tolerations=None, labels=None, annotations=None):
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {"app": name},
            "annotations": annotations or {},
            "generation": 1,
        },
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"spec": {"tolerations": tolerations or [], "containers": [{"name": "c", "image": "i"}]}},
        },
    }


def helm_nfd(tolerations):
    return daemonset(
        "gpu-operator-node-feature-discovery-worker",
        tolerations=tolerations,
        labels={"app.kubernetes.io/managed-by": "Helm"},
        annotations={"meta.helm.sh/release-name": "gpu-operator"},
    )


def ds_pod(ds, node_name, ready=True, deleting=False):
    result = pod("%s-%s" % (ds["metadata"]["name"], node_name), [container()], namespace=ds["metadata"]["namespace"])
    result["spec"]["nodeName"] = node_name
    result["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": ds["metadata"]["name"]}]
    result["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    if deleting:
        result["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return result


OPERAND_NAMES = [
    "gpu-feature-discovery",
    "nvidia-device-plugin-daemonset",
    "nvidia-dcgm-exporter",
    "nvidia-mig-manager",
    "nvidia-device-plugin-mps-control-daemon",
    VALIDATOR,
]


def healthy_operator(nodes, names=OPERAND_NAMES):
    """Every operand DaemonSet and NFD's worker, with a ready pod on every node that needs it."""
    daemonsets = [daemonset(name) for name in names]
    nfd = helm_nfd([GPU_TOLERATION])
    pods = []
    for gpu_node in nodes:
        labels = gpu_node["metadata"]["labels"]
        for ds in daemonsets + [nfd]:
            name = ds["metadata"]["name"]
            if name == "nvidia-mig-manager" and labels.get("nvidia.com/mig.capable") != "true":
                continue
            if name.endswith("mps-control-daemon") and labels.get("nvidia.com/mps.capable") != "true":
                continue
            pods.append(ds_pod(ds, gpu_node["metadata"]["name"]))
    return daemonsets, nfd, pods


def only(findings, check=None, obj=None):
    return [f for f in findings if (check is None or f["check"] == check) and (obj is None or f["object"] == obj)]


def with_labels(obj, labels):
    obj["metadata"]["labels"].update(labels)
    return obj
