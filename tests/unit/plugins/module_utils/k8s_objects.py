# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Builders of Kubernetes API objects shaped exactly like the API's JSON (as ``json.loads`` returns
them), shared by the unit tests of this directory. Quantities and label values are strings, as on
the wire. ``merge_patch`` applies a JSON merge patch (RFC 7386) the way the API server does, so a
test can apply a plan and plan again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import zlib

NODE_CPU_CAPACITY = {
    "cpu": "32",
    "ephemeral-storage": "203056560Ki",
    "hugepages-1Gi": "0",
    "memory": "263842112Ki",
    "pods": "110",
}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
NAMESPACE = "gpu-operator"
CONFIG_MAP = "time-slicing-config"

_resource_version = [1000]


def _next_resource_version():
    _resource_version[0] += 1
    return str(_resource_version[0])


def node(name, labels=None, capacity=None, allocatable=None, taints=None, unschedulable=None, annotations=None):
    """A Node as ``GET /api/v1/nodes/<name>`` returns it."""
    all_labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
    }
    all_labels.update(labels or {})
    all_annotations = {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    all_annotations.update(annotations or {})
    full_capacity = dict(NODE_CPU_CAPACITY, **(capacity or {}))
    spec = {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"], "providerID": "kind://docker/gpushare/%s" % name}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": "4b5d3c2a-0000-4000-8000-%012d" % (zlib.crc32(name.encode()) % 10**12),
            "resourceVersion": _next_resource_version(),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": all_labels,
            "annotations": all_annotations,
        },
        "spec": spec,
        "status": {
            "capacity": full_capacity,
            "allocatable": dict(full_capacity, **(allocatable or {})),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": "2026-01-01T00:05:00Z",
                    "lastTransitionTime": "2026-01-01T00:00:30Z",
                }
            ],
            "nodeInfo": {"architecture": "amd64", "kubeletVersion": "v1.33.1", "operatingSystem": "linux"},
        },
    }


def gfd_labels(product, count, memory, replicas=1, strategy="none", family="ampere", mig_capable=False, **extra):
    """The labels GPU Feature Discovery puts on a GPU node."""
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": str(memory),
        "nvidia.com/gpu.replicas": str(replicas),
        "nvidia.com/gpu.sharing-strategy": strategy,
        "nvidia.com/gpu.family": family,
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/cuda.driver-version.major": "570",
        "nvidia.com/cuda.driver-version.minor": "133",
        "nvidia.com/gfd.timestamp": "1767225600",
        "nvidia.com/mig.capable": "true" if mig_capable else "false",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    }
    labels.update(extra)
    return labels


def t4_node(name, count=1, config=None, **kwargs):
    """An unshared T4 node (no MIG), optionally labelled with a device-plugin config key."""
    extra = {"nvidia.com/device-plugin.config": config} if config else {}
    return node(
        name,
        gfd_labels("Tesla-T4", count, 15360, family="turing", **extra),
        capacity={"nvidia.com/gpu": str(count)},
        **kwargs,
    )


def t4_time_sliced(name, replicas, count=1, config=None):
    """A T4 node on which time-slicing x``replicas`` is in effect."""
    extra = {"nvidia.com/device-plugin.config": config} if config else {}
    return node(
        name,
        gfd_labels(
            "Tesla-T4-SHARED", count, 15360, replicas=replicas, strategy="time-slicing", family="turing", **extra
        ),
        capacity={"nvidia.com/gpu": str(count * replicas)},
    )


def a100_node(name, count=2, config=None):
    """An unshared A100 PCIe 40GB node, MIG capable but disabled."""
    extra = {
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mig.config": "all-disabled",
        "nvidia.com/mig.config.state": "success",
    }
    if config:
        extra["nvidia.com/device-plugin.config"] = config
    # Node Feature Discovery's PCI label with the device field: which of the A100 PCIe 40GB device IDs it is.
    extra["feature.node.kubernetes.io/pci-0302_10de_20f1.present"] = "true"
    return node(
        name,
        gfd_labels("NVIDIA-A100-PCIE-40GB", count, 40960, mig_capable=True, **extra),
        capacity={"nvidia.com/gpu": str(count)},
    )


def h100_mig_single(name):
    """An H100 with every GPU in 1g.10gb MIG mode under the single strategy."""
    return node(
        name,
        gfd_labels(
            "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
            14,
            9984,
            family="hopper",
            mig_capable=True,
            **{
                "nvidia.com/mig.strategy": "single",
                "nvidia.com/mig.config": "all-1g.10gb",
                "nvidia.com/mig.config.state": "success",
            },
        ),
        capacity={"nvidia.com/gpu": "14"},
    )


def h100_mig_mixed(name, config=None):
    """An H100 x2 in all-balanced MIG under the mixed strategy: 4x 1g.10gb, 2x 2g.20gb, 2x 3g.40gb."""
    extra = {
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "all-balanced",
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/mig-1g.10gb.count": "4",
        "nvidia.com/mig-1g.10gb.memory": "9984",
        "nvidia.com/mig-1g.10gb.replicas": "1",
        "nvidia.com/mig-1g.10gb.slices.gi": "1",
        "nvidia.com/mig-1g.10gb.slices.ci": "1",
        "nvidia.com/mig-2g.20gb.count": "2",
        "nvidia.com/mig-2g.20gb.memory": "20096",
        "nvidia.com/mig-2g.20gb.replicas": "1",
        "nvidia.com/mig-3g.40gb.count": "2",
        "nvidia.com/mig-3g.40gb.memory": "40320",
        "nvidia.com/mig-3g.40gb.replicas": "1",
    }
    if config:
        extra["nvidia.com/device-plugin.config"] = config
    return node(
        name,
        gfd_labels("NVIDIA-H100-80GB-HBM3", 2, 81559, family="hopper", mig_capable=True, **extra),
        capacity={
            "nvidia.com/gpu": "0",
            "nvidia.com/mig-1g.10gb": "4",
            "nvidia.com/mig-2g.20gb": "2",
            "nvidia.com/mig-3g.40gb": "2",
        },
    )


def cpu_node(name):
    return node(name, {"node-role.kubernetes.io/worker": ""})


def cluster_policy(
    name="cluster-policy",
    config_name=None,
    default=None,
    tolerations=None,
    mig_strategy="single",
    annotations=None,
    namespace=NAMESPACE,
):
    """A ClusterPolicy (nvidia.com/v1) as the Helm chart creates it; ``tolerations=None`` leaves the field unset."""
    device_plugin = {
        "enabled": True,
        "repository": "nvcr.io/nvidia",
        "image": "k8s-device-plugin",
        "version": "v0.17.1",
    }
    if config_name is not None or default is not None:
        device_plugin["config"] = {}
        if config_name is not None:
            device_plugin["config"]["name"] = config_name
        if default is not None:
            device_plugin["config"]["default"] = default
    daemonsets = {"priorityClassName": "system-node-critical", "updateStrategy": "RollingUpdate"}
    if tolerations is not None:
        daemonsets["tolerations"] = tolerations
    metadata = {
        "name": name,
        "uid": "9f1c0000-0000-4000-8000-000000000001",
        "resourceVersion": _next_resource_version(),
        "generation": 1,
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"app.kubernetes.io/component": "gpu-operator"},
    }
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": metadata,
        "spec": {
            "operator": {"defaultRuntime": "containerd"},
            "daemonsets": daemonsets,
            "devicePlugin": device_plugin,
            "mig": {"strategy": mig_strategy},
            "migManager": {"enabled": True, "config": {"name": "default-mig-parted-config", "default": "all-disabled"}},
            "driver": {"enabled": True},
            "dcgmExporter": {"enabled": True},
        },
        "status": {"state": "ready", "namespace": namespace},
    }


def config_map(data, name=CONFIG_MAP, namespace=NAMESPACE, annotations=None):
    metadata = {
        "name": name,
        "namespace": namespace,
        "uid": "1c2b0000-0000-4000-8000-000000000002",
        "resourceVersion": _next_resource_version(),
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": dict(data)}


def created_config_map(data, annotations, name=CONFIG_MAP, namespace=NAMESPACE):
    """What ``KubeApi.create_config_map`` leaves in the API."""
    return config_map(data, name=name, namespace=namespace, annotations=annotations)


def container(name="main", image="nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", requests=None, limits=None):
    result = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "resources": {}}
    if requests is not None:
        result["resources"]["requests"] = requests
    if limits is not None:
        result["resources"]["limits"] = limits
    return result


# One container asking for one whole GPU.
GPU_CONTAINER = [container(limits={"nvidia.com/gpu": "1"})]


def pod(name, containers, namespace="ml", node_name=None, phase="Running", init_containers=None):
    spec = {
        "containers": containers,
        "restartPolicy": "Never",
        "schedulerName": "default-scheduler",
        "tolerations": [dict(GPU_TOLERATION)],
    }
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if node_name is not None:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": "7e3d0000-0000-4000-8000-000000000003",
            "resourceVersion": _next_resource_version(),
        },
        "spec": spec,
        "status": {"phase": phase, "qosClass": "BestEffort"},
    }


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch, as the API server applies ``application/merge-patch+json``; returns a new object."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def labels_of(obj):
    return obj["metadata"].get("labels") or {}


def annotations_of(obj):
    return obj["metadata"].get("annotations") or {}


# --- OpenShift's MachineSets and autoscalers (reference section 5) ---


def machineset(name="gpu-t4", labels=None, annotations=None, namespace="openshift-machine-api"):
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": annotations or {},
            "resourceVersion": _next_resource_version(),
        },
        "spec": {"replicas": 1, "template": {"spec": {"metadata": {"labels": labels or {}}}}},
    }


def machine_autoscaler(target="gpu-t4", minimum=1, namespace="openshift-machine-api"):
    return {
        "metadata": {"name": target, "namespace": namespace},
        "spec": {"minReplicas": minimum, "maxReplicas": 4, "scaleTargetRef": {"kind": "MachineSet", "name": target}},
    }


def cluster_autoscaler(types=("tesla-t4",), delay="15m"):
    spec = {"resourceLimits": {"gpus": [{"type": t, "min": 0, "max": 4} for t in types]}}
    if delay is not None:
        spec["scaleDown"] = {"delayAfterAdd": delay}
    return {"metadata": {"name": "default", "resourceVersion": _next_resource_version()}, "spec": spec}


def machine(name, machineset_name="gpu-t4", node_name=None, namespace="openshift-machine-api"):
    """A Machine of ``machineset_name`` (its label), whose node (``status.nodeRef``) is ``node_name``, if any."""
    body = {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"machine.openshift.io/cluster-api-machineset": machineset_name},
        },
        "status": {"phase": "Provisioning"},
    }
    if node_name:
        body["status"] = {"phase": "Running", "nodeRef": {"kind": "Node", "name": node_name}}
    return body


def t4_pool(*node_names, **kwargs):
    """``(machines, nodes)`` of a T4 MachineSet (``machineset_name``, default ``gpu-t4``): as on OpenShift, the nodes
    carry only the annotation naming their Machine, never the MachineSet's label."""
    machineset_name = kwargs.pop("machineset_name", "gpu-t4")
    machines, nodes = [], []
    for index, node_name in enumerate(node_names or ("gpu-t4-0",)):
        machine_name = "%s-m%d" % (machineset_name, index)
        node = t4_node(node_name, **kwargs)
        node["metadata"].setdefault("annotations", {})["machine.openshift.io/machine"] = (
            "openshift-machine-api/" + machine_name
        )
        machines.append(machine(machine_name, machineset_name, node_name))
        nodes.append(node)
    return machines, nodes
