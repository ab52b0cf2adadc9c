"""OpenShift's machine API, as a user of the cluster sees it (openshift/machine-api-operator: the MachineSet
controller, the machine controller and nodelink; reference section 5).

- A MachineSet's ``spec.replicas`` become Machines named ``<machineset>-<5 characters>``, labelled with the
  MachineSet's ``spec.template.metadata.labels`` (among them ``machine.openshift.io/cluster-api-machineset``) and
  annotated with its ``spec.template.metadata.annotations``, owned by the MachineSet, with the template's ``spec``
  (provider spec, node labels and taints). A MachineSet counts the Machines its ``spec.selector`` matches that no
  other MachineSet controls (it adopts those no one does), as the real controller's ``shouldExcludeMachine``.
- Each new Machine's instance joins as a Node named as AWS names instances (``ip-10-0-x-y.ec2.internal``), never
  after its Machine or MachineSet, with ``spec.providerID`` and only the labels every kubelet registers (zone and
  instance type from the provider spec) plus the template's ``spec.metadata.labels`` and ``spec.taints``: no
  MachineSet label. nodelink then sets the Machine's ``status.nodeRef`` and annotates the Node
  ``machine.openshift.io/machine: <namespace>/<machine>``.
- Scaling down deletes Machines, each with its Node, in the order of the real MachineSet controller
  (openshift/machine-api-operator, ``pkg/controller/machineset/controller.go``: ``Reconcile`` drops the Machines being
  deleted (``shouldExcludeMachine``) and sorts the rest by name, ``syncReplicas`` deletes the first ``diff`` of
  ``getMachinesToDeletePrioritized`` in ``delete_policy.go``). ``getDeletePriorityFunc`` maps ``spec.deletePolicy``
  to a priority per Machine, highest deleted first: ``Random`` (also when unset: ``randomDeletePolicy``),
  ``Newest`` (``newestDeletePriority``) or ``Oldest`` (``oldestDeletePriority``); any other value is an error and
  nothing is deleted. Every policy puts first a Machine annotated ``machine.openshift.io/delete-machine`` or the older
  ``machine.openshift.io/cluster-api-delete-machine`` (any non-empty value) or whose ``status.errorReason`` or
  ``status.errorMessage`` is set (``phase`` alone counts for nothing). Then Random prefers a Machine without
  ``status.nodeRef`` and has no order among the rest; Oldest and Newest go by ``creationTimestamp`` (whole seconds:
  Machines created in the same second are equal) whether a Machine has a node or not. Among equal priorities the
  real controller's choice follows the Machines' names (generateName's random suffixes) through Go's unstable
  ``sort.Sort``: nothing a user can know beforehand; here ``random.Random()`` draws it, so nothing may rely on an
  order (this test bed's Machine names are not random).

The instance's hardware (the simulator's ``sim.gpushare.k8s/hardware`` annotation, capacity) is that of a node of
the same instance type: what the cloud gives for that type. NFD (OpenShift's Node Feature Discovery operator)
labels a node with NVIDIA's PCI vendor as soon as it joins; the GPU Operator does the rest (``nodes.py``).
Provisioning never fails here: a type no node shows is logged and its Machine stays without a node.
"""

import calendar
import copy
import hashlib
import json
import logging
import math
import random
import time

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

# delete_policy.go: DeleteNodeAnnotation and the older oldDeleteNodeAnnotation, honoured alike by every policy.
DELETE_MACHINE_ANNOTATIONS = ("machine.openshift.io/delete-machine", "machine.openshift.io/cluster-api-delete-machine")
# delete_policy.go's deletePriority values; a higher one is deleted first.
MUST_DELETE, BETTER_DELETE, PREFER_DELETE, COULD_DELETE, MUST_NOT_DELETE = 100.0, 50.0, 40.0, 20.0, 0.0
SECONDS_PER_HUNDRED_DAYS = 8640000.0


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


def controller_reference(machineset):
    meta = machineset["metadata"]
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "MachineSet",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def machine_of(machineset, name, node_name=None):
    """The Machine ``name`` of ``machineset``, with ``status`` (its node once it joined, else provisioning). Like the
    real controller's ``createMachine``, it carries the template's labels and annotations."""
    meta, template = machineset["metadata"], machineset["spec"]["template"]
    template_meta = template.get("metadata") or {}
    machine = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": dict(template_meta.get("labels") or {}),
            "ownerReferences": [controller_reference(machineset)],
        },
        "spec": dict(copy.deepcopy(template.get("spec") or {}), providerID=provider_id(machineset, name)),
        "status": {"phase": "Provisioning"},
    }
    if template_meta.get("annotations"):
        machine["metadata"]["annotations"] = dict(template_meta["annotations"])
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


def selector_matches(selector, labels):
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``, except that an empty selector matches nothing
    (``hasMatchingLabels``)."""
    selector, labels = selector or {}, labels or {}
    expressions = selector.get("matchExpressions") or []
    if not selector.get("matchLabels") and not expressions:
        return False
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in expressions:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present, value = key in labels, labels.get(key)
        matches = {
            "In": present and value in values,
            "NotIn": not (present and value in values),
            "Exists": present,
            "DoesNotExist": not present,
        }
        if not matches.get(operator, False):  # an unknown operator: the selector does not convert, matches nothing
            return False
    return True


def controller_of(obj):
    return next((ref for ref in obj["metadata"].get("ownerReferences") or [] if ref.get("controller")), None)


def counts_for(machineset, machine):
    """Not left out by the real ``shouldExcludeMachine``: not being deleted, not controlled by another MachineSet (an
    orphan is adopted), labels matching the MachineSet's selector (``hasMatchingLabels``)."""
    controller = controller_of(machine)
    return (
        not machine["metadata"].get("deletionTimestamp")
        and (controller is None or controller.get("uid") == machineset["metadata"]["uid"])
        and selector_matches((machineset.get("spec") or {}).get("selector"), machine["metadata"].get("labels") or {})
    )


# Which Machines a scale-down deletes: delete_policy.go of openshift/machine-api-operator, function by function.


def _being_deleted(machine):
    return bool(machine["metadata"].get("deletionTimestamp"))


def _marked_for_deletion(machine):
    """Annotated to go first: any non-empty value (``Annotations[...] != ""``)."""
    annotations = machine["metadata"].get("annotations") or {}
    return any(annotations.get(key) for key in DELETE_MACHINE_ANNOTATIONS)


def _failed(machine):
    """``Status.ErrorReason`` or ``Status.ErrorMessage`` set (non-nil, even empty)."""
    status = machine.get("status") or {}
    return status.get("errorReason") is not None or status.get("errorMessage") is not None


def _created(machine):
    """``creationTimestamp`` in seconds since the epoch (the API keeps whole seconds), or None."""
    stamp = machine["metadata"].get("creationTimestamp")
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) if stamp else None


def oldest_delete_priority(machine, now):
    """``oldestDeletePriority``: the older, the higher, below ``BETTER_DELETE`` (approached after some ten years)."""
    if _being_deleted(machine) or _marked_for_deletion(machine) or _failed(machine):
        return MUST_DELETE
    created = _created(machine)
    if created is None or now - created < 0:
        return MUST_NOT_DELETE
    return BETTER_DELETE * (1.0 - math.exp(-(now - created) / SECONDS_PER_HUNDRED_DAYS))


def newest_delete_priority(machine, now):
    """``newestDeletePriority``: the newer, the higher, above ``BETTER_DELETE`` and below ``MUST_DELETE``."""
    if _being_deleted(machine) or _marked_for_deletion(machine) or _failed(machine):
        return MUST_DELETE
    return MUST_DELETE - oldest_delete_priority(machine, now)


def random_delete_priority(machine, now):
    """``randomDeletePolicy``: marked or failed, then without a node yet, then any other alike."""
    if _being_deleted(machine):
        return MUST_DELETE
    if _marked_for_deletion(machine) or _failed(machine):
        return BETTER_DELETE
    if not (machine.get("status") or {}).get("nodeRef"):
        return PREFER_DELETE
    return COULD_DELETE


# getDeletePriorityFunc: spec.deletePolicy unset is Random; another value is an error.
DELETE_POLICIES = {
    "": random_delete_priority,
    "Random": random_delete_priority,
    "Newest": newest_delete_priority,
    "Oldest": oldest_delete_priority,
}


def machines_to_delete(machines, diff, priority, rng, now=None):
    """``getMachinesToDeletePrioritized``: the ``diff`` Machines of highest ``priority``; ``rng`` orders equal ones."""
    if diff >= len(machines):
        return list(machines)
    if diff <= 0:
        return []
    now = time.time() if now is None else now
    shuffled = list(machines)
    rng.shuffle(shuffled)
    return sorted(shuffled, key=lambda machine: -priority(machine, now))[:diff]


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
        self._random = random.Random()  # seeded from the system: no two runs delete in the same order

    def _machines(self, machineset):
        """The Machines the MachineSet counts (``counts_for``; orphans adopted), by name as the real controller sorts
        them, as the cache and the writes not yet in it show them."""
        namespace, name = machineset["metadata"]["namespace"], machineset["metadata"]["name"]
        cached = dict(
            (machine["metadata"]["name"], machine)
            for machine in self.cluster.machines.values()
            if machine["metadata"]["namespace"] == namespace and counts_for(machineset, machine)
        )
        pending = self._pending.setdefault((namespace, name), {})
        for written_name, written in list(pending.items()):
            if (written is not None) == (written_name in cached):
                del pending[written_name]  # the cache caught up
            elif written is not None:
                cached[written_name] = written
            else:
                cached.pop(written_name, None)
        for name_, machine in list(cached.items()):
            if controller_of(machine) is None:
                cached[name_] = self._adopt(machineset, machine)
        return sorted(cached.values(), key=lambda machine: machine["metadata"]["name"])

    def _adopt(self, machineset, machine):
        """``adoptOrphan``: the MachineSet becomes the orphan's controller."""
        meta = machineset["metadata"]
        references = list(machine["metadata"].get("ownerReferences") or []) + [controller_reference(machineset)]
        log.info("machineset %s adopts machine %s", meta["name"], machine["metadata"]["name"])
        return merge_patch(
            self.kube.custom.patch_namespaced_custom_object,
            GROUP,
            VERSION,
            meta["namespace"],
            "machines",
            machine["metadata"]["name"],
            body={"metadata": {"ownerReferences": references}},
        )

    def reconcile(self, namespace, name):
        machineset = self.cluster.machinesets.get(name, namespace)
        if machineset is None:
            self._pending.pop((namespace, name), None)
            return None
        spec = machineset.get("spec") or {}
        if not selector_matches(
            spec.get("selector"), ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        ):
            # Reconcile's "failed validation on MachineSet %q label selector, cannot match any machines" (an empty
            # selector too here: it would count none of the Machines it makes, and make them without end).
            log.error("machineset %s: its selector does not match its template's labels; it does nothing", name)
            return None
        machines = self._machines(machineset)
        wanted = int(spec.get("replicas") or 0)
        for machine in self._to_delete(machineset, machines, len(machines) - wanted):
            self._delete(machine)
            self._pending[(namespace, name)][machine["metadata"]["name"]] = None
        for number in range(len(machines), wanted):
            machine = self._create(machineset, machines, number)
            self._pending[(namespace, name)][machine["metadata"]["name"]] = machine
            machines.append(machine)
        self._write_status(machineset, min(len(machines), wanted))
        return None

    def _to_delete(self, machineset, machines, diff):
        """The ``diff`` Machines the MachineSet's ``spec.deletePolicy`` picks (``syncReplicas``); none if it is not
        one the controller knows (it returns an error and deletes nothing)."""
        if diff <= 0:
            return []
        policy = (machineset.get("spec") or {}).get("deletePolicy") or ""
        priority = DELETE_POLICIES.get(policy)
        if priority is None:
            log.error(
                "machineset %s: unsupported delete policy %s, must be one of 'Random', 'Newest', or 'Oldest'",
                machineset["metadata"]["name"],
                policy,
            )
            return []
        return machines_to_delete(machines, diff, priority, self._random)

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
