"""What the seed writes on OpenShift only: the machine API's and autoscaler's CRDs, the GPU MachineSet, its Machines
(one per T4 node, ``status.nodeRef``) and the autoscaler objects; a reset deletes the ones tests added."""

from kubernetes.client.exceptions import ApiException

from testbed.seed_profiles import GPU_TAINT, MACHINE_API_NAMESPACE, OPENSHIFT_T4_ACCELERATOR, OPENSHIFT_T4_MACHINESET
from testbed.seed_writer import crd, delete_if_exists, wait_for
from testbed.simulator.kube import as_dict, discard, merge_patch
from testbed.simulator.machine_api import DELETE_MACHINE_ANNOTATIONS, MACHINESET_LABEL, machine_name, machine_of

OPENSHIFT_CRDS = [
    crd("machine.openshift.io", "machinesets", "MachineSet", "v1beta1", "Namespaced", scale=True),
    crd("machine.openshift.io", "machines", "Machine", "v1beta1", "Namespaced"),
    crd("autoscaling.openshift.io", "clusterautoscalers", "ClusterAutoscaler", "v1", "Cluster"),
    crd("autoscaling.openshift.io", "machineautoscalers", "MachineAutoscaler", "v1beta1", "Namespaced"),
]


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


def seed_machine_api(writer, members):
    """The MachineSet and autoscalers (those a test added deleted), then one Machine per node of the MachineSet's pool
    (its node joined: ``status.nodeRef``), and no other Machine. The simulated machine API (``--machine-api``)
    deletes what a test's scale-up added once the MachineSet is back to its seeded size; tests never scale it below
    that size."""
    machinesets = []
    seeded_objects = openshift_objects(members)
    _back_to_the_seeded_size(writer.kube, members, seeded_objects)
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
        delete_if_exists(
            lambda name, namespace, **kwargs: custom.delete_namespaced_custom_object(
                group, version, namespace, "machines", name, **kwargs
            ),
            name,
            MACHINE_API_NAMESPACE,
        )
    # The machine API may still be deleting (or, on the scale it saw last, creating) a test's Machines.
    wait_for(lambda: not others(), "the Machines of a test's scale-up to be deleted")


def _back_to_the_seeded_size(kube, members, seeded_objects):
    """A seeded MachineSet a test scaled up goes back to its seeded size deleting the test's Machines, never a seeded
    one: the simulated MachineSet picks as OpenShift's does (Random by default), so the test's Machines are first
    annotated machine.openshift.io/delete-machine, and the MachineSet is lowered with deletePolicy Newest too, in case
    its controller acts before it sees an annotation (the seeded Machines are older than a test's). Writing the seeded
    MachineSet afterwards takes deletePolicy away again."""
    custom = kube.custom
    group, version = "machine.openshift.io", "v1beta1"
    seeded_machines = set(machine_name(pool.machineset, name) for name, pool in members if pool.machineset)
    for _group, _version, _plural, body in seeded_objects:
        if body["kind"] != "MachineSet":
            continue
        name, namespace = body["metadata"]["name"], body["metadata"]["namespace"]
        try:
            stored = as_dict(custom.get_namespaced_custom_object, group, version, namespace, "machinesets", name)
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise
        if (stored.get("spec") or {}).get("replicas", 0) <= body["spec"]["replicas"]:
            continue
        listed = as_dict(custom.list_namespaced_custom_object, group, version, namespace, "machines")
        for machine in listed["items"]:
            labels = machine["metadata"].get("labels") or {}
            if labels.get(MACHINESET_LABEL) == name and machine["metadata"]["name"] not in seeded_machines:
                merge_patch(
                    custom.patch_namespaced_custom_object,
                    group,
                    version,
                    namespace,
                    "machines",
                    machine["metadata"]["name"],
                    body={"metadata": {"annotations": {DELETE_MACHINE_ANNOTATIONS[0]: "true"}}},
                )
        merge_patch(
            custom.patch_namespaced_custom_object,
            group,
            version,
            namespace,
            "machinesets",
            name,
            body={"spec": {"replicas": body["spec"]["replicas"], "deletePolicy": "Newest"}},
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
                    discard(kube.custom.delete_namespaced_custom_object, group, version, namespace, plural, name)
                else:
                    discard(kube.custom.delete_cluster_custom_object, group, version, plural, name)
            except ApiException as exc:
                if exc.status != 404:  # another reset deleted it first
                    raise
