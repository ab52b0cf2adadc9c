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

The fleets of the three platforms are ``testbed/seed_profiles.py``, what only OpenShift gets (machine API and
autoscaler objects) ``testbed/seed_openshift.py``, how objects are written and reset ``testbed/seed_writer.py``; this
module builds the rest of the desired objects, seeds, resets and is the entry point.
"""

import argparse
import copy
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

# The profiles, the OpenShift objects and the writer live in their own modules; tests and tools keep importing what
# they use of them from here (testbed.seed.PROFILES, .Writer, .openshift_objects...).
from testbed.seed_openshift import OPENSHIFT_CRDS, openshift_machineset, openshift_objects, seed_machine_api
from testbed.seed_profiles import (
    GPU_TAINT,
    MACHINE_API_NAMESPACE,
    OPENSHIFT_NFD_NAMESPACE,
    OPENSHIFT_T4_ACCELERATOR,
    OPENSHIFT_T4_MACHINESET,
    PROFILES,
    NodePool,
    Profile,
)
from testbed.seed_writer import SEED_THREADS, Writer, crd, delete_if_exists, is_control_plane_annotation, wait_for
from testbed.simulator import gpu_operator, nvml
from testbed.simulator.gpu_operator import GPU_TOLERATION
from testbed.simulator.kube import CLUSTER_POLICY, Kube, as_dict, discard
from testbed.simulator.kubelet import healthy_conditions, registered_labels
from testbed.simulator.kubelet_exec import KUBELET_ADDRESS, kubelet_port
from testbed.simulator.machine_api import MACHINE_ANNOTATION, machine_name, provider_id
from testbed.simulator.names import (
    APPLIED_ANNOTATION,
    DEFAULT_MIG_CONFIGMAP,
    DEVICE_PLUGIN_DAEMONSET,
    GFD_TIMESTAMP_LABEL,
    GPU_PRESENT_LABEL,
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


# Helm keeps a release's record in Secrets of this type in the release's namespace.
HELM_RELEASE_SECRET_TYPE = "helm.sh/release.v1"


NFD_IMAGE = "registry.k8s.io/nfd/node-feature-discovery:v0.16.6"


# The gpu-operator Helm chart's values for its NFD dependency (node-feature-discovery.worker.tolerations).
HELM_NFD_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    dict(GPU_TOLERATION),
]


# OpenShift's NFD operator tolerates every NoSchedule taint, but not NoExecute (reference section 5).
OPENSHIFT_NFD_TOLERATIONS = [{"operator": "Exists", "effect": "NoSchedule"}]


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
        seed_machine_api(writer, members)
    return len(members)


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
    discard(kube.apps.delete_collection_namespaced_deployment, namespace, label_selector=OPERATOR_DEPLOYMENT_SELECTOR)
    discard(kube.core.delete_collection_namespaced_secret, namespace, field_selector="type=" + HELM_RELEASE_SECRET_TYPE)


def _delete_operator(kube, profile):
    """Delete the operator's install: Deployment, Helm records, CRD (and so every ClusterPolicy), operands,
    the chart's NFD worker, the MIG ConfigMap. Returns None: no device plugin DaemonSet."""
    _delete_operator_install(kube, profile)
    api, name = kube.extensions, CLUSTER_POLICY_CRD["metadata"]["name"]
    if _exists(api.read_custom_resource_definition, name):
        discard(api.delete_custom_resource_definition, name)
        # Until it is gone, Helm would skip installing the chart's CRD and its policy would go with this one.
        wait_for(lambda: not _exists(api.read_custom_resource_definition, name), "CRD %s to be deleted" % name)
    namespace = profile.operator_namespace
    daemonsets = list(OPERAND_DAEMONSETS)
    if profile.name != "openshift":  # OpenShift's NFD worker belongs to its NFD operator
        daemonsets.append(nfd_worker_daemonset(profile)["metadata"]["name"])
    for daemonset in daemonsets:
        delete_if_exists(kube.apps.delete_namespaced_daemon_set, daemonset, namespace)
    delete_if_exists(kube.core.delete_namespaced_config_map, DEFAULT_MIG_CONFIGMAP, namespace)
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
            discard(writer.kube.core.delete_node, node["metadata"]["name"])


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
            discard(
                kube.core.delete_namespaced_config_map, configmap["metadata"]["name"], profile_spec.operator_namespace
            )
    # Secrets tests wrote there (the vGPU licence): the seeding makes none of type Opaque.
    discard(
        kube.core.delete_collection_namespaced_secret, profile_spec.operator_namespace, field_selector="type=Opaque"
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
        seed_machine_api(writer, members)
    discard(
        kube.core.delete_collection_namespaced_event, NODE_EVENT_NAMESPACE, field_selector="involvedObject.kind=Node"
    )


def _exists(read, name):
    try:
        discard(read, name)
        return True
    except ApiException as exc:
        if exc.status != 404:
            raise
        return False


def _delete_test_namespaces(kube, profile):
    """Delete non-system namespaces and the pods tests made in the others; their pods go at once so no GPU stays
    held by a terminating pod."""
    system = set(SYSTEM_NAMESPACES) | set(profile.namespaces)
    for namespace in as_dict(kube.core.list_namespace)["items"]:
        name = namespace["metadata"]["name"]
        if name in system:
            continue
        if not namespace["metadata"].get("deletionTimestamp"):
            discard(kube.core.delete_namespace, name)
        discard(kube.core.delete_collection_namespaced_pod, name, grace_period_seconds=0)
    discard(kube.core.delete_collection_namespaced_pod, "default", grace_period_seconds=0)
    # A pod a test made in a kept namespace (the operator's own GPU validator, say) would hold its node's GPUs
    # in every later test; the seeded pods all have an owner (DaemonSet, ReplicaSet).
    for namespace in profile.namespaces:
        for pod in as_dict(kube.core.list_namespaced_pod, namespace)["items"]:
            if not pod["metadata"].get("ownerReferences"):
                discard(kube.core.delete_namespaced_pod, pod["metadata"]["name"], namespace, grace_period_seconds=0)


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
