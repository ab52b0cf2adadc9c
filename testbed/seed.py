"""Seed the local cluster with a platform's simulated GPU fleet (reference file, section 5).

    python -m testbed.seed --kubeconfig K [--profile openshift|scaleway|vks] [--nodes N] [--without-operator]

Creates, or replaces with their seeded state, the operator's namespace, the ClusterPolicy CRD and
policy, the operand DaemonSets, the shipped MIG ConfigMap (the policy its controller, as the operator
makes it), GPU nodes labelled as GPU Feature Discovery would label them, two CPU-only nodes and, on
OpenShift, the MachineSet and autoscaler objects. ``reset`` puts a seeded cluster back to that state
between tests.

``--without-operator`` seeds the fleet as it is before anyone installed NVIDIA's operator: the GPU nodes
carry their hardware and taint but no NVIDIA label or resource, and there is no ClusterPolicy, CRD, operand
or NFD worker (what a Helm install of ``testbed/charts/gpu-operator`` then brings, see
``testbed/simulator/gpu_operator.py``).
"""

import argparse
import copy
import json
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from testbed.simulator import gpu_operator, nvml
from testbed.simulator.gpu_operator import GPU_TOLERATION
from testbed.simulator.kube import CLUSTER_POLICY, Kube, as_dict, get_or_none, merge_patch
from testbed.simulator.kubelet import healthy_conditions, registered_labels
from testbed.simulator.kubelet_exec import KUBELET_ADDRESS, kubelet_port
from testbed.simulator.machine_api import MACHINE_ANNOTATION, MACHINESET_LABEL, machine_name, machine_of, provider_id
from testbed.simulator.names import (
    APPLIED_ANNOTATION,
    DEFAULT_MIG_CONFIGMAP,
    DEVICE_PLUGIN_DAEMONSET,
    GFD_TIMESTAMP_LABEL,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    HARDWARE_ANNOTATION,
    MIG_CONFIG_LABEL,
    MIG_STATE_LABEL,
    NFD_NVIDIA_PCI_LABEL,
    NODE_EVENT_NAMESPACE,
    OPERAND_DAEMONSETS,
    OPERATOR_DEPLOYMENT_SELECTOR,
)
from testbed.simulator.nodes import fresh_applied, render

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SEED_THREADS = 16
CONFLICT_RETRIES = 20
CONFLICT_FIRST_PAUSE_SECONDS = 0.05
CONFLICT_MAX_PAUSE_SECONDS = 1.0
GPU_TAINT = {"key": GPU_RESOURCE, "effect": "NoSchedule"}
# Helm keeps a release's record in Secrets of this type in the release's namespace.
HELM_RELEASE_SECRET_TYPE = "helm.sh/release.v1"


class NodePool(object):
    """Identical nodes: ``gpus`` x ``product`` (no GPU when ``product`` is None) in a ``machine``."""

    def __init__(self, name, size, machine, cpu, memory, product=None, gpus=0, labels=None, machineset=None):
        """``machineset``: the OpenShift MachineSet whose Machines the nodes are (one Machine per node)."""
        self.name = name
        self.size = size
        self.machine = machine
        self.cpu = cpu
        self.memory = memory
        self.product = product
        self.gpus = gpus
        self.labels = labels or {}
        self.machineset = machineset


class Profile(object):
    def __init__(
        self,
        name,
        operator_namespace,
        policy_name,
        runtime,
        driver,
        cuda,
        zone,
        gpu_pools,
        cpu_pool,
        platform_namespaces=(),
        service_monitor=False,
    ):
        self.name = name
        self.operator_namespace = operator_namespace
        self.policy_name = policy_name
        self.runtime = runtime
        self.driver = driver
        self.cuda = cuda
        self.zone = zone
        self.gpu_pools = gpu_pools
        self.cpu_pool = cpu_pool
        self.platform_namespaces = platform_namespaces
        self.service_monitor = service_monitor

    @property
    def namespaces(self):
        return (self.operator_namespace,) + tuple(self.platform_namespaces)


OPENSHIFT_T4_MACHINESET = "gpushare-ocp-gpu-t4-us-east-1a"
OPENSHIFT_T4_ACCELERATOR = "tesla-t4"
MACHINE_API_NAMESPACE = "openshift-machine-api"
OPENSHIFT_NFD_NAMESPACE = "openshift-nfd"

PROFILES = {
    "openshift": Profile(
        "openshift",
        "nvidia-gpu-operator",
        "gpu-cluster-policy",
        "cri-o://1.20.0",
        "550.127.08",
        "12.4",
        "us-east-1a",
        gpu_pools=[
            NodePool("gpu-a100", 2, "PowerEdge-R750xa", "64", "512Gi", "NVIDIA-A100-PCIE-40GB", 2),
            NodePool("gpu-h100", 2, "PowerEdge-XE9680", "224", "2Ti", "NVIDIA-H100-80GB-HBM3", 8),
            NodePool(
                "gpu-t4",
                2,
                "g4dn.xlarge",
                "4",
                "16Gi",
                "Tesla-T4",
                1,
                # The MachineSet's node template labels; the MachineSet's own name is on its Machines only.
                labels={"cluster-api/accelerator": OPENSHIFT_T4_ACCELERATOR},
                machineset=OPENSHIFT_T4_MACHINESET,
            ),
        ],
        cpu_pool=NodePool("worker", 2, "m5.2xlarge", "8", "32Gi"),
        platform_namespaces=(MACHINE_API_NAMESPACE, OPENSHIFT_NFD_NAMESPACE),
    ),
    "scaleway": Profile(
        "scaleway",
        "kube-system",
        "cluster-policy",
        "containerd://1.7.22",
        "560.35.03",
        "12.6",
        "fr-par-2",
        gpu_pools=[
            NodePool(
                "scw-gpu-h100",
                3,
                "SCW-H100-1-80G",
                "24",
                "240Gi",
                "NVIDIA-H100-PCIe",
                1,
                labels={
                    "k8s.scaleway.com/pool-name": "gpu-h100",
                    "node.kubernetes.io/instance-type": "H100-1-80G",
                    # The label Kapsule's autoscaler reads for GPU pools (reference section 5); value unchecked.
                    "k8s.scw.cloud/gpu": "true",
                },
            )
        ],
        cpu_pool=NodePool(
            "scw-default",
            2,
            "PRO2-S",
            "8",
            "32Gi",
            labels={"k8s.scaleway.com/pool-name": "default", "node.kubernetes.io/instance-type": "PRO2-S"},
        ),
    ),
    "vks": Profile(
        "vks",
        "gpu-operator",
        "cluster-policy",
        "containerd://1.7.13",
        "550.54.15",
        "12.4",
        "HCM03-1A",
        gpu_pools=[
            NodePool("vks-gpu-a10", 2, "OpenStack-Nova", "16", "64Gi", "NVIDIA-A10", 1),
            NodePool("vks-gpu-t4", 1, "OpenStack-Nova", "16", "64Gi", "Tesla-T4", 2),
            NodePool("vks-gpu-l4", 1, "OpenStack-Nova", "16", "64Gi", "NVIDIA-L4", 1),
        ],
        cpu_pool=NodePool("vks-cpu", 2, "OpenStack-Nova", "8", "32Gi"),
        service_monitor=True,
    ),
}

NFD_IMAGE = "registry.k8s.io/nfd/node-feature-discovery:v0.16.6"
# The gpu-operator Helm chart's values for its NFD dependency (node-feature-discovery.worker.tolerations).
HELM_NFD_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    dict(GPU_TOLERATION),
]
# OpenShift's NFD operator tolerates every NoSchedule taint, but not NoExecute (reference section 5).
OPENSHIFT_NFD_TOLERATIONS = [{"operator": "Exists", "effect": "NoSchedule"}]


# desired objects -----------------------------------------------------------------------------


def crd(group, plural, kind, version, scope, scale=False, defaults=None):
    """A CRD that keeps any field (the real schemas are large and not what the tests exercise), with the real
    schema's ``defaults`` (``{field: default or {field: ...}}``), which the API server fills in as it does for the
    real CRD."""
    subresources = {"status": {}}
    if scale:
        subresources["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (plural, group)},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": subresources,
                    "schema": {"openAPIV3Schema": _schema_keeping_any_field(defaults or {})},
                }
            ],
        },
    }


def _schema_keeping_any_field(defaults):
    """An object schema that keeps every field and declares only the defaulted ones (a structural schema)."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if defaults:
        schema["properties"] = {
            field: (
                _schema_keeping_any_field(value) if isinstance(value, dict) else {"type": "string", "default": value}
            )
            for field, value in sorted(defaults.items())
        }
    return schema


# The defaults of NVIDIA's ClusterPolicy CRD v24.3.0 (NVIDIA/gpu-operator@0fe1e8db32b05ddab8bbd4d5bcc3f492b75cfee4,
# deployments/gpu-operator/crds/nvidia.com_clusterpolicies_crd.yaml, the `default:` of each field) in the sections
# the simulator and the collection model. Left out with their sections: driver.upgradePolicy, cdi, sandboxWorkloads,
# kataManager, vgpuDeviceManager and dcgmExporter.serviceMonitor.relabelings. The API server fills a default in only
# where the enclosing object is present (a policy without `migManager.config` gets no config).
CLUSTER_POLICY_DEFAULTS = {
    "spec": {
        "operator": {"defaultRuntime": "docker", "runtimeClass": "nvidia"},
        "daemonsets": {"updateStrategy": "RollingUpdate"},
        "toolkit": {"installDir": "/usr/local/nvidia"},
        "devicePlugin": {"mps": {"root": "/run/nvidia/mps"}},
        "migManager": {"config": {"name": DEFAULT_MIG_CONFIGMAP, "default": "all-disabled"}},
    }
}
CLUSTER_POLICY_CRD = crd(
    CLUSTER_POLICY["group"],
    CLUSTER_POLICY["plural"],
    "ClusterPolicy",
    CLUSTER_POLICY["version"],
    "Cluster",
    defaults=CLUSTER_POLICY_DEFAULTS,
)
OPENSHIFT_CRDS = [
    crd("machine.openshift.io", "machinesets", "MachineSet", "v1beta1", "Namespaced", scale=True),
    crd("machine.openshift.io", "machines", "Machine", "v1beta1", "Namespaced"),
    crd("autoscaling.openshift.io", "clusterautoscalers", "ClusterAutoscaler", "v1", "Cluster"),
    crd("autoscaling.openshift.io", "machineautoscalers", "MachineAutoscaler", "v1beta1", "Namespaced"),
]


def cluster_policy(profile):
    """The policy as the operator's Helm chart or OLM installs it: sharing off, MIG single, all-disabled."""
    metadata = {"name": profile.policy_name}
    if profile.name != "openshift":  # Helm installs it (release gpu-operator); OLM does on OpenShift
        metadata["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
        metadata["annotations"] = {
            "meta.helm.sh/release-name": "gpu-operator",
            "meta.helm.sh/release-namespace": profile.operator_namespace,
        }
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": metadata,
        "spec": {
            "operator": {
                "defaultRuntime": profile.runtime.split(":")[0],
                "runtimeClass": "nvidia",
                "use_ocp_driver_toolkit": profile.name == "openshift",
            },
            "daemonsets": {
                "tolerations": [dict(GPU_TOLERATION)],
                "priorityClassName": "system-node-critical",
                "updateStrategy": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "1"},
            },
            "driver": {"enabled": True, "version": profile.driver, "licensingConfig": {"nlsEnabled": True}},
            "toolkit": {"enabled": True, "installDir": "/usr/local/nvidia"},
            "devicePlugin": {"enabled": True},
            "dcgm": {"enabled": True},
            "dcgmExporter": {"enabled": True, "serviceMonitor": {"enabled": profile.service_monitor}},
            "gfd": {"enabled": True},
            "mig": {"strategy": "single"},
            "migManager": {
                "enabled": True,
                "config": {"name": DEFAULT_MIG_CONFIGMAP, "default": "all-disabled"},
                "env": [{"name": "WITH_REBOOT", "value": "false"}],
            },
            "nodeStatusExporter": {"enabled": True},
            "validator": {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}},
        },
    }


def nfd_worker_daemonset(profile):
    """Node Feature Discovery's worker, on every node: OpenShift's NFD operator's, else the operator's Helm chart's."""
    if profile.name == "openshift":
        name, namespace, tolerations = "nfd-worker", OPENSHIFT_NFD_NAMESPACE, OPENSHIFT_NFD_TOLERATIONS
        labels, annotations = {"app": name}, {}
    else:
        name, namespace, tolerations = (
            "gpu-operator-node-feature-discovery-worker",
            profile.operator_namespace,
            HELM_NFD_TOLERATIONS,
        )
        labels = {
            "app": name,
            "app.kubernetes.io/managed-by": "Helm",
            "app.kubernetes.io/name": "node-feature-discovery",
        }
        annotations = {"meta.helm.sh/release-name": "gpu-operator", "meta.helm.sh/release-namespace": namespace}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "tolerations": copy.deepcopy(tolerations),
                    "containers": [{"name": "worker", "image": NFD_IMAGE}],
                },
            },
        },
    }


def hardware_of(profile, product, gpus, machine=""):
    """The physical truth of a node (``sim.gpushare.k8s/hardware``), from the simulated GPU table (nvml.py)."""
    gpu = nvml.gpu(product)
    return {
        "product": product,
        "count": gpus,
        "memory_mib": gpu.memory_mib,
        "family": gpu.family,
        "compute_major": gpu.compute[0],
        "compute_minor": gpu.compute[1],
        "machine": machine,
        "pci_device_id": gpu.pci_device_id,
        "driver_version": profile.driver,
        "cuda_version": profile.cuda,
    }


def fleet(profile, gpu_nodes=None):
    """[(node name, pool)]: the profile's pools, or ``gpu_nodes`` GPU nodes spread over its GPU pools."""
    members = []
    pools = profile.gpu_pools
    for index, pool in enumerate(pools):
        if gpu_nodes:
            size = gpu_nodes // len(pools) + (index < gpu_nodes % len(pools))
            members += [("%s-%04d" % (pool.name, number), pool) for number in range(size)]
        else:
            members += [("%s-%d" % (pool.name, number), pool) for number in range(pool.size)]
    return members + [
        ("%s-%d" % (profile.cpu_pool.name, number), profile.cpu_pool) for number in range(profile.cpu_pool.size)
    ]


def node_body(profile, name, pool, port, daemonset):
    """A Node as a kubelet registers it and GFD, the device plugin and the operator label it.

    Its kubelet is the simulator's exec endpoint: the API server reaches it at the InternalIP and ``port``.

    ``daemonset`` is the device plugin's; None seeds the node as it is before the operator was installed.
    """
    labels = dict(registered_labels(name, profile.zone, pool.machine), **{"node-role.kubernetes.io/worker": ""})
    labels.update(pool.labels)
    capacity = {"cpu": pool.cpu, "memory": pool.memory, "pods": "110", "ephemeral-storage": "500Gi"}
    allocatable = dict(capacity)
    annotations = {}
    spec = {}
    if pool.machineset:
        # What OpenShift's nodelink controller writes on the node of a Machine (reference section 5).
        machine = machine_name(pool.machineset, name)
        annotations[MACHINE_ANNOTATION] = "%s/%s" % (MACHINE_API_NAMESPACE, machine)
        spec["providerID"] = provider_id(openshift_machineset(0), machine)
    taints = []
    if pool.product:
        hardware = hardware_of(profile, pool.product, pool.gpus, pool.machine)
        annotations[HARDWARE_ANNOTATION] = json.dumps(hardware, sort_keys=True)
        taints.append(dict(GPU_TAINT))
        if daemonset is not None or profile.name == "openshift":  # OpenShift's NFD is not the operator chart's
            labels[NFD_NVIDIA_PCI_LABEL] = "true"
    if pool.product and daemonset is not None:
        mig_capable = nvml.gpu(pool.product).mig_capable
        applied = fresh_applied(hardware, daemonset, "all-disabled" if mig_capable else None)
        view = render(hardware, applied["migLayout"], applied["migStrategy"], None)
        labels.update(view.labels)
        labels[GFD_TIMESTAMP_LABEL] = str(int(time.time()))
        labels[GPU_PRESENT_LABEL] = "true"
        labels.update(gpu_operator.deploy_labels(mig_capable))
        if mig_capable:
            labels.update({MIG_CONFIG_LABEL: "all-disabled", MIG_STATE_LABEL: "success"})
        capacity.update(view.capacity)
        allocatable.update(view.allocatable)
        annotations[APPLIED_ANNOTATION] = json.dumps(applied, sort_keys=True)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": dict(spec, taints=taints) if taints else spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": healthy_conditions(),
            "addresses": [{"type": "InternalIP", "address": KUBELET_ADDRESS}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "nodeInfo": {
                "machineID": name,
                "systemUUID": name,
                "bootID": name,
                "kernelVersion": "5.14.0",
                "osImage": "simulated",
                "containerRuntimeVersion": profile.runtime,
                "kubeletVersion": "v1.20.2",
                "kubeProxyVersion": "v1.20.2",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def openshift_machineset(replicas):
    """The T4 pool's MachineSet (reference section 5): its node template carries the accelerator label and the GPU
    taint its nodes have."""
    node_labels = {"cluster-api/accelerator": OPENSHIFT_T4_ACCELERATOR, "node-role.kubernetes.io/worker": ""}
    selector = {
        "machine.openshift.io/cluster-api-cluster": "gpushare-ocp",
        MACHINESET_LABEL: OPENSHIFT_T4_MACHINESET,
    }
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {
            "name": OPENSHIFT_T4_MACHINESET,
            "namespace": MACHINE_API_NAMESPACE,
            "annotations": {
                "machine.openshift.io/GPU": "1",
                "machine.openshift.io/vCPU": "4",
                "machine.openshift.io/memoryMb": "16384",
            },
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {
                    "metadata": {"labels": node_labels},
                    "taints": [dict(GPU_TAINT)],
                    "providerSpec": {
                        "value": {
                            "instanceType": "g4dn.xlarge",
                            "placement": {"availabilityZone": "us-east-1a", "region": "us-east-1"},
                        }
                    },
                },
            },
        },
    }


def openshift_objects(members):
    """MachineSet of the T4 pool, its MachineAutoscaler and the ClusterAutoscaler (reference section 5)."""
    machineset = openshift_machineset(sum(1 for _name, pool in members if pool.machineset == OPENSHIFT_T4_MACHINESET))
    cluster_autoscaler = {
        "apiVersion": "autoscaling.openshift.io/v1",
        "kind": "ClusterAutoscaler",
        "metadata": {"name": "default"},
        "spec": {
            "resourceLimits": {"gpus": [{"type": OPENSHIFT_T4_ACCELERATOR, "min": 0, "max": 4}], "maxNodesTotal": 24},
            "scaleDown": {"enabled": True, "delayAfterAdd": "15m", "unneededTime": "10m"},
        },
    }
    machine_autoscaler = {
        "apiVersion": "autoscaling.openshift.io/v1beta1",
        "kind": "MachineAutoscaler",
        "metadata": {"name": OPENSHIFT_T4_MACHINESET, "namespace": MACHINE_API_NAMESPACE},
        "spec": {
            "minReplicas": 1,
            "maxReplicas": 4,
            "scaleTargetRef": {
                "apiVersion": "machine.openshift.io/v1beta1",
                "kind": "MachineSet",
                "name": OPENSHIFT_T4_MACHINESET,
            },
        },
    }
    return [
        ("machine.openshift.io", "v1beta1", "machinesets", machineset),
        ("autoscaling.openshift.io", "v1", "clusterautoscalers", cluster_autoscaler),
        ("autoscaling.openshift.io", "v1beta1", "machineautoscalers", machine_autoscaler),
    ]


# writing ---------------------------------------------------------------------------------------


class Writer(object):
    """Create-or-replace for each kind the seeding writes, retrying replaces that race a writer."""

    def __init__(self, kube):
        self.kube = kube

    def _apply(self, create, read, replace, body, keep=None, unconditional=False):
        """Create ``body``, or replace the existing object with it unless that would change nothing the seeding
        sets: a reset between tests then costs a read per object the test left alone, not a write that the
        controllers and the simulator would all react to. Returns (object, CREATED, REPLACED or UNCHANGED).
        ``unconditional``: see ``_replace``."""
        current = get_or_none(read, name=body["metadata"]["name"])
        if current is None:
            try:
                return as_dict(create, body=body), CREATED
            except ApiException as exc:
                if exc.status != 409:  # 409: created meanwhile
                    raise
        elif _unchanged(current, body, keep):
            return current, UNCHANGED
        if unconditional:
            return as_dict(replace, name=body["metadata"]["name"], body=body), REPLACED
        return self._replace(read, replace, body, keep), REPLACED

    @staticmethod
    def _replace(read, replace, body, keep=None):
        """Replace at the current resourceVersion, again if another writer got there first.

        ``keep(current, body)``, if given, copies into ``body`` what the replace must not drop. A kind whose
        API allows an update without a resourceVersion (a DaemonSet) is replaced unconditionally instead
        (``_apply``'s ``unconditional``): its controller writes its status while its pods change, so a replace
        at the version just read loses to it again and again on a busy machine.
        """
        name = body["metadata"]["name"]
        pause = CONFLICT_FIRST_PAUSE_SECONDS
        for _attempt in range(CONFLICT_RETRIES):
            current = as_dict(read, name=name)
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            if keep:
                keep(current, body)
            try:
                return as_dict(replace, name=name, body=body)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            time.sleep(random.uniform(0, pause))
            pause = min(pause * 2, CONFLICT_MAX_PAUSE_SECONDS)
        raise RuntimeError("%s keeps changing: could not replace it" % name)

    def namespace(self, name):
        core = self.kube.core
        return self._apply(
            core.create_namespace, core.read_namespace, core.replace_namespace, {"metadata": {"name": name}}
        )[0]

    def crd(self, body):
        api = self.kube.extensions
        result = self._apply(
            api.create_custom_resource_definition,
            api.read_custom_resource_definition,
            api.replace_custom_resource_definition,
            body,
        )[0]
        wait_for(
            lambda: _established(as_dict(api.read_custom_resource_definition, body["metadata"]["name"]))
            and _served(self.kube.custom, body),
            "CRD %s to be established and served in discovery" % body["metadata"]["name"],
        )
        return result

    def custom(self, group, version, plural, body):
        api, namespace = self.kube.custom, body["metadata"].get("namespace")
        if namespace:
            scope = dict(group=group, version=version, namespace=namespace, plural=plural)
            calls = (
                api.create_namespaced_custom_object,
                api.get_namespaced_custom_object,
                api.replace_namespaced_custom_object,
            )
        else:
            scope = dict(group=group, version=version, plural=plural)
            calls = (api.create_cluster_custom_object, api.get_cluster_custom_object, api.replace_cluster_custom_object)
        return self._apply(*(_bind(call, scope) for call in calls), body)[0]

    def custom_with_status(self, group, version, plural, body):
        """A namespaced custom object and its status (a separate write with the status subresource)."""
        body = copy.deepcopy(body)
        status = body.pop("status")
        stored = self.custom(group, version, plural, body)
        if stored.get("status") == status:
            return stored
        return merge_patch(
            self.kube.custom.patch_namespaced_custom_object_status,
            group,
            version,
            body["metadata"]["namespace"],
            plural,
            body["metadata"]["name"],
            body={"status": status},
        )

    def configmap(self, body):
        core, scope = self.kube.core, {"namespace": body["metadata"]["namespace"]}
        return self._apply(
            _bind(core.create_namespaced_config_map, scope),
            _bind(core.read_namespaced_config_map, scope),
            _bind(core.replace_namespaced_config_map, scope),
            body,
        )[0]

    def daemonset(self, body):
        """Create or replace; one of another shape (a Helm install's NFD worker has the NFD chart's selector,
        which a replace cannot change) is deleted and created again. One this process wrote and nobody changed
        since is left as it is: a replace would make the DaemonSet controller sync it again, for every test."""
        apps, scope = self.kube.apps, {"namespace": body["metadata"]["namespace"]}
        current = get_or_none(apps.read_namespaced_daemon_set, body["metadata"]["name"], scope["namespace"])
        if current is not None and _unchanged_since_written(current, body):
            return current
        calls = (
            _bind(apps.create_namespaced_daemon_set, scope),
            _bind(apps.read_namespaced_daemon_set, scope),
            _bind(apps.replace_namespaced_daemon_set, scope),
        )
        try:
            written = self._apply(*calls, copy.deepcopy(body), unconditional=True)[0]
        except ApiException as exc:
            if exc.status != 422:
                raise
            _delete_if_exists(apps.delete_namespaced_daemon_set, body["metadata"]["name"], scope["namespace"])
            written = self._apply(*calls, copy.deepcopy(body), unconditional=True)[0]
        _WRITTEN[written["metadata"]["uid"]] = (written["metadata"].get("generation"), _fingerprint(body))
        return written

    def node(self, body):
        """Nodes keep their status on create but not on replace, which needs the status subresource.

        Both replaces keep the annotations Kubernetes' own controllers put on the node and GFD's timestamp
        (``keep_node_fields``) and drop every other annotation the seed does not set.
        """
        core = self.kube.core
        status = body["status"]
        node, outcome = self._apply(
            core.create_node, core.read_node, core.replace_node, copy.deepcopy(body), keep_node_fields
        )
        if outcome != REPLACED:
            return node
        # A node status update takes its metadata from the body (only the spec is kept): send the labels too.
        status_body = {
            "metadata": {
                "name": node["metadata"]["name"],
                "labels": body["metadata"]["labels"],
                "annotations": body["metadata"]["annotations"],
            },
            "status": status,
        }
        return self._replace(core.read_node_status, core.replace_node_status, status_body, keep_node_fields)


CREATED, REPLACED, UNCHANGED = "created", "replaced", "unchanged"


def _unchanged(current, body, keep=None):
    """Whether replacing ``current`` with ``body`` would change nothing the seeding sets: the same labels, annotations
    (with what ``keep`` carries over), owner references and finalizers, and the same value of every other top-level
    field of the body (a node's status compared without its conditions' timestamps, which each seeding writes anew)."""
    body = copy.deepcopy(body)
    if keep:
        keep(current, body)
    for field, empty in (("labels", {}), ("annotations", {}), ("ownerReferences", []), ("finalizers", [])):
        if (current["metadata"].get(field) or empty) != (body["metadata"].get(field) or empty):
            return False
    return all(
        _without_timestamps(current.get(key)) == _without_timestamps(value)
        for key, value in body.items()
        if key not in ("apiVersion", "kind", "metadata")
    )


def _without_timestamps(value):
    if isinstance(value, dict) and "conditions" in value:
        conditions = [(c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in value["conditions"]]
        return dict(value, conditions=sorted(conditions))
    return value


# DaemonSets this process wrote: uid -> (the generation the write left, the body's fingerprint). A spec change by
# anyone (the operator's answer to a policy edit, a module, a test) raises the generation.
_WRITTEN = {}
# The API server adds this annotation to every DaemonSet.
DAEMONSET_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def _fingerprint(body):
    return json.dumps(body, sort_keys=True)


def _unchanged_since_written(current, body):
    """True when ``current`` is the DaemonSet this process wrote from ``body``, with the same spec generation and
    exactly the body's labels and annotations."""
    meta = current["metadata"]
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(DAEMONSET_GENERATION_ANNOTATION, None)
    return (
        _WRITTEN.get(meta["uid"]) == (meta.get("generation"), _fingerprint(body))
        and (meta.get("labels") or {}) == (body["metadata"].get("labels") or {})
        and annotations == (body["metadata"].get("annotations") or {})
    )


def is_control_plane_annotation(key):
    """True for an annotation key under a prefix Kubernetes reserves for its own components.

    Those are ``kubernetes.io/`` and ``k8s.io/`` and their subdomains (Kubernetes docs, "Labels and
    Selectors" and "Annotations": "The kubernetes.io/ and k8s.io/ prefixes are reserved for Kubernetes
    core components"): on a node, ``node.alpha.kubernetes.io/ttl`` (kube-controller-manager's TTL
    controller) and ``volumes.kubernetes.io/controller-managed-attach-detach`` (the kubelet).
    ``kubectl.kubernetes.io/`` is excluded: kubectl writes it for a user (``last-applied-configuration``).
    """
    prefix, _slash, _name = key.rpartition("/")
    if not prefix or prefix == "kubectl.kubernetes.io":
        return False
    return prefix in ("kubernetes.io", "k8s.io") or prefix.endswith((".kubernetes.io", ".k8s.io"))


def keep_node_fields(current, body):
    """What a node replace keeps of ``current``: the control plane's annotations, and GFD's timestamp, which says
    when GFD last wrote its labels (it stamps only a change of them), not when the seed ran."""
    keep_control_plane_annotations(current, body)
    stamp = (current["metadata"].get("labels") or {}).get(GFD_TIMESTAMP_LABEL)
    if stamp and GFD_TIMESTAMP_LABEL in (body["metadata"].get("labels") or {}):
        body["metadata"]["labels"][GFD_TIMESTAMP_LABEL] = stamp


def keep_control_plane_annotations(current, body):
    """Copy the control plane's annotations of ``current`` into ``body`` (the body's own values win).

    In Kubernetes 1.20 a PUT of a node (or of its status) writes ``metadata.annotations`` from the
    body: without this, a reset would remove ``node.alpha.kubernetes.io/ttl`` and the TTL controller
    would put it back a moment later, so what a test reads right after a reset would depend on timing.
    """
    kept = {
        key: value
        for key, value in (current["metadata"].get("annotations") or {}).items()
        if is_control_plane_annotation(key)
    }
    body["metadata"]["annotations"] = dict(kept, **(body["metadata"].get("annotations") or {}))


def _bind(call, scope):
    return lambda *args, **kwargs: call(*args, **dict(scope, **kwargs))


def _served(custom, body):
    """Whether the API server lists the CRD's resource in its group version's discovery. kube-apiserver sets
    Established, then serves the version's discovery a moment later (another controller); a client that builds its
    REST mapping in between, as Helm does right after installing a chart's CRDs, finds no such kind."""
    spec = body["spec"]
    try:
        listed = custom.get_api_resources(spec["group"], spec["versions"][0]["name"])
    except ApiException as exc:
        if exc.status != 404:
            raise
        return False
    return any(resource.name == spec["names"]["plural"] for resource in listed.resources or [])


def _established(crd_object):
    return any(
        condition["type"] == "Established" and condition["status"] == "True"
        for condition in (crd_object.get("status") or {}).get("conditions") or []
    )


def wait_for(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for " + what)
        time.sleep(0.1)


# seed and reset -------------------------------------------------------------------------------


def seed(api_client, profile, nodes=None, operator=True):
    """Create or replace everything the profile has (without its operator when ``operator`` is false, see the
    module's doc); returns the number of nodes seeded."""
    profile = PROFILES[profile]
    writer = Writer(Kube(api_client))
    for namespace in profile.namespaces:
        writer.namespace(namespace)
    for definition in ([CLUSTER_POLICY_CRD] if operator else []) + (
        OPENSHIFT_CRDS if profile.name == "openshift" else []
    ):
        writer.crd(definition)
    members = fleet(profile, nodes)
    daemonset = _seed_operator(writer, profile) if operator else _delete_operator(writer.kube, profile)
    _seed_nodes(writer, profile, members, daemonset)
    if profile.name == "openshift":
        _seed_openshift(writer, members)
    return len(members)


def _seed_openshift(writer, members):
    """The MachineSet and autoscalers (those a test added deleted), then one Machine per node of the MachineSet's pool
    (its node joined: ``status.nodeRef``), and no other Machine. The simulated machine API (``--machine-api``)
    deletes what a test's scale-up added once the MachineSet is back to its seeded size; tests never scale it below
    that size."""
    machinesets = []
    seeded_objects = openshift_objects(members)
    for group, version, plural, body in seeded_objects:
        stored = writer.custom(group, version, plural, body)
        if body["kind"] == "MachineSet":
            machinesets.append(stored)
    _delete_unseeded_openshift_objects(writer.kube, seeded_objects)
    seeded = set()
    for machineset in machinesets:
        for name, pool in members:
            if pool.machineset == machineset["metadata"]["name"]:
                machine = machine_of(machineset, machine_name(pool.machineset, name), name)
                writer.custom_with_status("machine.openshift.io", "v1beta1", "machines", machine)
                seeded.add(machine["metadata"]["name"])
    custom = writer.kube.custom
    group, version = "machine.openshift.io", "v1beta1"

    def others():
        listed = as_dict(custom.list_namespaced_custom_object, group, version, MACHINE_API_NAMESPACE, "machines")
        return [machine["metadata"]["name"] for machine in listed["items"] if machine["metadata"]["name"] not in seeded]

    for name in others():
        _delete_if_exists(
            lambda name, namespace, **kwargs: custom.delete_namespaced_custom_object(
                group, version, namespace, "machines", name, **kwargs
            ),
            name,
            MACHINE_API_NAMESPACE,
        )
    # The machine API may still be deleting (or, on the scale it saw last, creating) a test's Machines.
    wait_for(lambda: not others(), "the Machines of a test's scale-up to be deleted")


def _seed_operator(writer, profile):
    """Policy (status ready), operand DaemonSets and the shipped MIG ConfigMap (owned by the policy), and no operator
    Deployment (the seeded operands stay as the tests leave them); returns the plugin's DaemonSet."""
    _delete_operator_install(writer.kube, profile)
    policy = cluster_policy(profile)
    stored = writer.custom(
        CLUSTER_POLICY["group"], CLUSTER_POLICY["version"], CLUSTER_POLICY["plural"], copy.deepcopy(policy)
    )
    ready = {"state": "ready", "namespace": profile.operator_namespace}
    if any((stored.get("status") or {}).get(key) != value for key, value in ready.items()):
        writer.kube.custom.patch_cluster_custom_object_status(
            CLUSTER_POLICY["group"],
            CLUSTER_POLICY["version"],
            CLUSTER_POLICY["plural"],
            stored["metadata"]["name"],
            {"status": ready},
            _content_type="application/merge-patch+json",
        )
    namespace = profile.operator_namespace
    daemonsets = {
        name: writer.daemonset(gpu_operator.operand_daemonset(namespace, name, policy)) for name in OPERAND_DAEMONSETS
    }
    writer.daemonset(nfd_worker_daemonset(profile))
    writer.configmap(gpu_operator.default_mig_configmap(namespace, stored))
    return daemonsets[DEVICE_PLUGIN_DAEMONSET]


def _delete_operator_install(kube, profile):
    """Delete what a Helm install of the operator (``testbed/charts/gpu-operator``) leaves that seeding does not
    replace: its Deployment, while which the simulator plays the operator, and Helm's release records."""
    namespace = profile.operator_namespace
    kube.apps.delete_collection_namespaced_deployment(
        namespace, label_selector=OPERATOR_DEPLOYMENT_SELECTOR, _preload_content=False
    )
    kube.core.delete_collection_namespaced_secret(
        namespace, field_selector="type=" + HELM_RELEASE_SECRET_TYPE, _preload_content=False
    )


def _delete_operator(kube, profile):
    """Delete the operator's install: Deployment, Helm records, CRD (and so every ClusterPolicy), operands,
    the chart's NFD worker, the MIG ConfigMap. Returns None: no device plugin DaemonSet."""
    _delete_operator_install(kube, profile)
    api, name = kube.extensions, CLUSTER_POLICY_CRD["metadata"]["name"]
    if _exists(api.read_custom_resource_definition, name):
        api.delete_custom_resource_definition(name, _preload_content=False)
        # Until it is gone, Helm would skip installing the chart's CRD and its policy would go with this one.
        wait_for(lambda: not _exists(api.read_custom_resource_definition, name), "CRD %s to be deleted" % name)
    namespace = profile.operator_namespace
    daemonsets = list(OPERAND_DAEMONSETS)
    if profile.name != "openshift":  # OpenShift's NFD worker belongs to its NFD operator
        daemonsets.append(nfd_worker_daemonset(profile)["metadata"]["name"])
    for daemonset in daemonsets:
        _delete_if_exists(kube.apps.delete_namespaced_daemon_set, daemonset, namespace)
    _delete_if_exists(kube.core.delete_namespaced_config_map, DEFAULT_MIG_CONFIGMAP, namespace)
    return None


def _seed_nodes(writer, profile, members, daemonset):
    """Create or replace the fleet's nodes in parallel and delete any other node."""
    port = kubelet_port(writer.kube.api_client.configuration.host)
    bodies = [node_body(profile, name, pool, port, daemonset) for name, pool in members]
    with ThreadPoolExecutor(max_workers=SEED_THREADS) as pool:
        list(pool.map(writer.node, bodies))
    wanted = {name for name, _pool in members}
    for node in as_dict(writer.kube.core.list_node)["items"]:
        if node["metadata"]["name"] not in wanted:
            writer.kube.core.delete_node(node["metadata"]["name"], _preload_content=False)


def reset(api_client, profile, nodes=None, operator=True):
    """Put a seeded cluster back to its seeded state, quickly, and delete what tests created.

    Tests call it between tests: the policy, the operator namespace's ConfigMaps and Secrets, the operand
    DaemonSets and every node are as seeded; namespaces other than the system's and the profile's
    are deleted (their pods at once), as are node Events, and what a Helm install of the operator
    left. With ``operator`` false, the fleet is put back as it is before the operator was installed.
    """
    kube = Kube(api_client)
    writer = Writer(kube)
    profile_spec = PROFILES[profile]
    _delete_test_namespaces(kube, profile_spec)
    kept = {DEFAULT_MIG_CONFIGMAP, "kube-root-ca.crt"} if operator else {"kube-root-ca.crt"}
    for configmap in as_dict(kube.core.list_namespaced_config_map, profile_spec.operator_namespace)["items"]:
        if configmap["metadata"]["name"] not in kept:
            kube.core.delete_namespaced_config_map(
                configmap["metadata"]["name"], profile_spec.operator_namespace, _preload_content=False
            )
    # Secrets tests wrote there (the vGPU licence): the seeding makes none of type Opaque.
    kube.core.delete_collection_namespaced_secret(
        profile_spec.operator_namespace, field_selector="type=Opaque", _preload_content=False
    )
    for namespace in profile_spec.namespaces:  # a cluster seeded before a profile gained one
        if not _exists(kube.core.read_namespace, namespace):
            writer.namespace(namespace)
    if operator:
        if not _exists(kube.extensions.read_custom_resource_definition, CLUSTER_POLICY_CRD["metadata"]["name"]):
            writer.crd(CLUSTER_POLICY_CRD)  # reset without the operator before
        daemonset = _seed_operator(writer, profile_spec)
    else:
        daemonset = _delete_operator(kube, profile_spec)
    members = fleet(profile_spec, nodes)
    _seed_nodes(writer, profile_spec, members, daemonset)
    if profile_spec.name == "openshift":
        _seed_openshift(writer, members)
    kube.core.delete_collection_namespaced_event(
        NODE_EVENT_NAMESPACE, field_selector="involvedObject.kind=Node", _preload_content=False
    )


def _delete_unseeded_openshift_objects(kube, seeded):
    """MachineSets and autoscalers a test created (another vendor's GPU MachineSet, say): the seeded ones stay."""
    kept = set((plural, body["metadata"].get("namespace"), body["metadata"]["name"]) for _g, _v, plural, body in seeded)
    for group, version, plural in sorted(set((group, version, plural) for group, version, plural, _b in seeded)):
        for obj in as_dict(kube.custom.list_cluster_custom_object, group, version, plural)["items"]:
            name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace")
            if (plural, namespace, name) in kept:
                continue
            try:
                if namespace:
                    kube.custom.delete_namespaced_custom_object(
                        group, version, namespace, plural, name, _preload_content=False
                    )
                else:
                    kube.custom.delete_cluster_custom_object(group, version, plural, name, _preload_content=False)
            except ApiException as exc:
                if exc.status != 404:  # another reset deleted it first
                    raise


def _exists(read, name):
    try:
        read(name, _preload_content=False)
        return True
    except ApiException as exc:
        if exc.status != 404:
            raise
        return False


def _delete_if_exists(delete, name, namespace):
    try:
        delete(name, namespace, _preload_content=False)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _delete_test_namespaces(kube, profile):
    """Delete non-system namespaces and the pods tests made in the others; their pods go at once so no GPU stays
    held by a terminating pod."""
    system = set(SYSTEM_NAMESPACES) | set(profile.namespaces)
    for namespace in as_dict(kube.core.list_namespace)["items"]:
        name = namespace["metadata"]["name"]
        if name in system:
            continue
        if not namespace["metadata"].get("deletionTimestamp"):
            kube.core.delete_namespace(name, _preload_content=False)
        kube.core.delete_collection_namespaced_pod(name, grace_period_seconds=0, _preload_content=False)
    kube.core.delete_collection_namespaced_pod("default", grace_period_seconds=0, _preload_content=False)
    # A pod a test made in a kept namespace (the operator's own GPU validator, say) would hold its node's GPUs
    # in every later test; the seeded pods all have an owner (DaemonSet, ReplicaSet).
    for namespace in profile.namespaces:
        for pod in as_dict(kube.core.list_namespaced_pod, namespace)["items"]:
            if not pod["metadata"].get("ownerReferences"):
                kube.core.delete_namespaced_pod(
                    pod["metadata"]["name"], namespace, grace_period_seconds=0, _preload_content=False
                )


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m testbed.seed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="openshift")
    parser.add_argument(
        "--nodes", type=int, help="seed this many GPU nodes instead of the profile's fleet (benchmarks)"
    )
    parser.add_argument(
        "--reset", action="store_true", help="put an already seeded profile back to its freshly seeded state"
    )
    parser.add_argument(
        "--without-operator",
        dest="operator",
        action="store_false",
        help="the fleet before NVIDIA's operator is installed (then: helm install testbed/charts/gpu-operator)",
    )
    args = parser.parse_args(argv)
    configuration = client.Configuration()
    config.load_kube_config(config_file=args.kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = SEED_THREADS
    started = time.monotonic()
    if args.reset:
        reset(client.ApiClient(configuration), args.profile, args.nodes, args.operator)
        print("reset the %s profile in %.1fs" % (args.profile, time.monotonic() - started), file=sys.stderr)
        return
    count = seed(client.ApiClient(configuration), args.profile, args.nodes, args.operator)
    print(
        "seeded the %s profile: %d nodes in %.1fs" % (args.profile, count, time.monotonic() - started), file=sys.stderr
    )


if __name__ == "__main__":
    main()
