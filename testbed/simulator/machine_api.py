"""OpenShift's machine API, as a user of the cluster sees it (openshift/machine-api-operator: the MachineSet
controller, the machine controller and nodelink; reference section 5).

- A MachineSet's ``spec.replicas`` become Machines named ``<machineset>-<5 characters>``, labelled with the
  MachineSet's ``spec.template.metadata.labels`` (among them ``machine.openshift.io/cluster-api-machineset``),
  owned by the MachineSet, with the template's ``spec`` (provider spec, node labels and taints).
- Each new Machine's instance joins as a Node named as AWS names instances (``ip-10-0-x-y.ec2.internal``), never
  after its Machine or MachineSet, with ``spec.providerID`` and only the labels every kubelet registers (zone and
  instance type from the provider spec) plus the template's ``spec.metadata.labels`` and ``spec.taints``: no
  MachineSet label. nodelink then sets the Machine's ``status.nodeRef`` and annotates the Node
  ``machine.openshift.io/machine: <namespace>/<machine>``.
- Scaling down deletes the newest Machines, each with its Node.

The instance's hardware (the simulator's ``sim.gpushare.k8s/hardware`` annotation, capacity) is that of a node of
the same instance type: what the cloud gives for that type. NFD (OpenShift's Node Feature Discovery operator)
labels a node with NVIDIA's PCI vendor as soon as it joins; the GPU Operator does the rest (``nodes.py``).
Provisioning never fails here: a type no node shows is logged and its Machine stays without a node.
"""

import copy
import hashlib
import json
import logging

from kubernetes.client.exceptions import ApiException

from testbed.simulator.kube import as_dict, discard, merge_patch
from testbed.simulator.kubelet import healthy_conditions, registered_labels
from testbed.simulator.names import HARDWARE_ANNOTATION, NFD_NVIDIA_PCI_LABEL

log = logging.getLogger(__name__)

GROUP, VERSION = "machine.openshift.io", "v1beta1"
MACHINESET_LABEL = "machine.openshift.io/cluster-api-machineset"
MACHINE_ANNOTATION = "machine.openshift.io/machine"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' generateName alphabet (no vowels, no 0/1/3)


def _digest(text):
    return int(hashlib.sha1(text.encode()).hexdigest(), 16)


def machine_name(machineset_name, seed):
    """``<machineset>-<5 characters>``, as generateName makes it; deterministic in ``seed``."""
    number, suffix = _digest(seed), ""
    for _ in range(5):
        number, index = divmod(number, len(_SUFFIX_ALPHABET))
        suffix += _SUFFIX_ALPHABET[index]
    return "%s-%s" % (machineset_name, suffix)


def instance_node_name(machine):
    """The node name AWS gives the Machine's instance: its private DNS name."""
    number = _digest(machine)
    return "ip-10-0-%d-%d.ec2.internal" % (number % 250 + 1, number // 250 % 250 + 1)


def provider_spec(machineset):
    return ((((machineset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("providerSpec") or {}).get(
        "value"
    ) or {}


def zone_of(machineset):
    return (provider_spec(machineset).get("placement") or {}).get("availabilityZone")


def provider_id(machineset, machine):
    return "aws:///%s/i-%017x" % (zone_of(machineset), _digest(machine) % (16**17))


def machine_of(machineset, name, node_name=None):
    """The Machine ``name`` of ``machineset``, with ``status`` (its node once it joined, else provisioning)."""
    meta, template = machineset["metadata"], machineset["spec"]["template"]
    machine = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "%s/%s" % (GROUP, VERSION),
                    "kind": "MachineSet",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": dict(copy.deepcopy(template.get("spec") or {}), providerID=provider_id(machineset, name)),
        "status": {"phase": "Provisioning"},
    }
    if node_name:
        machine["status"] = {"phase": "Running", "nodeRef": {"kind": "Node", "name": node_name}}
    return machine


def node_of(machineset, machine, hardware_node):
    """The Node the Machine's instance registers, with the hardware of ``hardware_node`` (same instance type)."""
    spec = machineset["spec"]["template"]["spec"]
    name = instance_node_name(machine["metadata"]["name"])
    labels = registered_labels(name, zone_of(machineset), provider_spec(machineset).get("instanceType"))
    labels.update((spec.get("metadata") or {}).get("labels") or {})
    annotations = {MACHINE_ANNOTATION: "%s/%s" % (machine["metadata"]["namespace"], machine["metadata"]["name"])}
    hardware = (hardware_node["metadata"].get("annotations") or {}).get(HARDWARE_ANNOTATION)
    if hardware:
        annotations[HARDWARE_ANNOTATION] = hardware
        if json.loads(hardware).get("count"):
            labels[NFD_NVIDIA_PCI_LABEL] = "true"  # OpenShift's NFD operator, from the PCI bus
    # What the kubelet registers: the machine's CPU, memory and pods, none of the device plugins' resources.
    capacity = dict(
        (key, value) for key, value in hardware_node["status"]["capacity"].items() if not key.startswith("nvidia.com/")
    )
    status = copy.deepcopy(hardware_node["status"])
    node_info = dict(status.get("nodeInfo") or {}, machineID=name, systemUUID=name, bootID=name)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"providerID": machine["spec"]["providerID"], "taints": copy.deepcopy(spec.get("taints") or [])},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": healthy_conditions(),
            "addresses": [address for address in status.get("addresses") or [] if address["type"] == "InternalIP"]
            + [{"type": "Hostname", "address": name}],
            "daemonEndpoints": status.get("daemonEndpoints"),
            "nodeInfo": node_info,
        },
    }


class MachineApi(object):
    """Reconciles one MachineSet at a time: Machines and their Nodes up or down to ``spec.replicas``, then the
    MachineSet's status.

    ``cluster`` gives the cached objects: ``.machinesets``, ``.machines`` and ``.nodes`` informers. The cache may not
    show a Machine just created or deleted yet: ``_pending`` remembers them until it does (what client-go's
    controllers call expectations), so a second pass never creates or deletes one twice."""

    def __init__(self, kube, cluster):
        self.kube = kube
        self.cluster = cluster
        self._pending = {}  # (namespace, machineset) -> {machine name: the Machine created, or None: deleted}

    def _machines(self, namespace, name):
        """The MachineSet's live Machines, oldest first, as the cache and the writes not yet in it show them."""
        cached = dict(
            (machine["metadata"]["name"], machine)
            for machine in self.cluster.machines.values()
            if machine["metadata"]["namespace"] == namespace
            and (machine["metadata"].get("labels") or {}).get(MACHINESET_LABEL) == name
            and not machine["metadata"].get("deletionTimestamp")
        )
        pending = self._pending.setdefault((namespace, name), {})
        for written_name, written in list(pending.items()):
            if (written is not None) == (written_name in cached):
                del pending[written_name]  # the cache caught up
            elif written is not None:
                cached[written_name] = written
            else:
                cached.pop(written_name, None)
        return sorted(
            cached.values(), key=lambda machine: (machine["metadata"]["creationTimestamp"], machine["metadata"]["name"])
        )

    def reconcile(self, namespace, name):
        machineset = self.cluster.machinesets.get(name, namespace)
        if machineset is None:
            self._pending.pop((namespace, name), None)
            return None
        machines = self._machines(namespace, name)
        wanted = int((machineset.get("spec") or {}).get("replicas") or 0)
        for machine in reversed(machines[wanted:]):
            self._delete(machine)
            self._pending[(namespace, name)][machine["metadata"]["name"]] = None
        for number in range(len(machines), wanted):
            machine = self._create(machineset, machines, number)
            self._pending[(namespace, name)][machine["metadata"]["name"]] = machine
            machines.append(machine)
        self._write_status(machineset, min(len(machines), wanted))
        return None

    def _write_status(self, machineset, replicas):
        meta = machineset["metadata"]
        status = dict(
            replicas=replicas,
            fullyLabeledReplicas=replicas,
            readyReplicas=replicas,
            availableReplicas=replicas,
            observedGeneration=meta.get("generation"),
        )
        if dict((key, (machineset.get("status") or {}).get(key)) for key in status) != status:
            merge_patch(
                self.kube.custom.patch_namespaced_custom_object_status,
                GROUP,
                VERSION,
                meta["namespace"],
                "machinesets",
                meta["name"],
                body={"status": status},
            )

    def _hardware_node(self, machineset, machines):
        """A node of this MachineSet, else any node of its instance type: the hardware its new instances get."""
        own = set(((machine.get("status") or {}).get("nodeRef") or {}).get("name") for machine in machines)
        instance_type = provider_spec(machineset).get("instanceType")
        candidates = [
            node
            for node in self.cluster.nodes.values()
            if node["metadata"]["name"] in own
            or (node["metadata"].get("labels") or {}).get(INSTANCE_TYPE_LABEL) == instance_type
        ]
        candidates.sort(key=lambda node: node["metadata"]["name"] not in own)
        return candidates[0] if candidates else None

    def _create(self, machineset, machines, number):
        meta = machineset["metadata"]
        taken = set(machine["metadata"]["name"] for machine in machines)
        name = machine_name(meta["name"], "%s/%d" % (meta["uid"], number))
        while name in taken:
            name = machine_name(meta["name"], name)
        body = machine_of(machineset, name)
        custom = self.kube.custom
        machine = as_dict(custom.create_namespaced_custom_object, GROUP, VERSION, meta["namespace"], "machines", body)
        hardware_node = self._hardware_node(machineset, machines)
        if hardware_node is None:
            instance_type = provider_spec(machineset).get("instanceType")
            log.warning(
                "machine %s: no node of instance type %s shows its hardware; it gets no node", name, instance_type
            )
            return machine
        node = as_dict(self.kube.core.create_node, node_of(machineset, machine, hardware_node))
        status = machine_of(machineset, name, node["metadata"]["name"])["status"]
        status["nodeRef"]["uid"] = node["metadata"]["uid"]
        machine = merge_patch(
            custom.patch_namespaced_custom_object_status,
            GROUP,
            VERSION,
            meta["namespace"],
            "machines",
            name,
            body={"status": status},
        )
        log.info("machineset %s: machine %s joined as node %s", meta["name"], name, node["metadata"]["name"])
        return machine

    def _delete(self, machine):
        meta = machine["metadata"]
        node_name = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
        for delete, args in (
            (self.kube.core.delete_node, (node_name,)),
            (
                self.kube.custom.delete_namespaced_custom_object,
                (GROUP, VERSION, meta["namespace"], "machines", meta["name"]),
            ),
        ):
            if not args[-1]:
                continue
            try:
                discard(delete, *args)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        log.info("machine %s deleted with its node %s", meta["name"], node_name)
