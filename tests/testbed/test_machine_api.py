"""OpenShift's Machines on the openshift profile: what the seed makes and what the simulated machine API does when a
MachineSet is scaled (testbed/simulator/machine_api.py; reference section 5), down to which Machines a scale-down
deletes (openshift/machine-api-operator, pkg/controller/machineset/delete_policy.go)."""

import calendar
import random
import time
import uuid

import pytest
from simulator_helpers import labels, wait_for, wait_for_deletion

from testbed import seed
from testbed.seed_openshift import openshift_machineset
from testbed.simulator.kube import as_dict, discard, merge_patch
from testbed.simulator.machine_api import (
    machines_to_delete,
    newest_delete_priority,
    oldest_delete_priority,
    random_delete_priority,
)

GROUP, VERSION, NAMESPACE = "machine.openshift.io", "v1beta1", seed.MACHINE_API_NAMESPACE
MACHINESET_LABEL = "machine.openshift.io/cluster-api-machineset"
MACHINESET = seed.OPENSHIFT_T4_MACHINESET
DELETE_MACHINE = "machine.openshift.io/delete-machine"
OLD_DELETE_MACHINE = "machine.openshift.io/cluster-api-delete-machine"
# Born marked for deletion: a scale-up under a template with this annotation makes Machines that carry it from their
# first version (the MachineSet controller copies the template's annotations). A Machine annotated once it exists
# would race the scale-down: the machine API watches Machines and MachineSets apart (as the real controller's cache
# does) and could see the new replicas before the annotation.
MARKED = {DELETE_MACHINE: "true"}


def machines(kube, **kwargs):
    return as_dict(kube.custom.list_namespaced_custom_object, GROUP, VERSION, NAMESPACE, "machines", **kwargs)["items"]


def list_machines(kube):
    return lambda **kwargs: kube.custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "machines", **kwargs)


def scale(kube, replicas, machineset=MACHINESET, template_annotations=None):
    """Set the MachineSet's replicas (and its template's annotations, a None value removing one); returns it."""
    spec = {"replicas": replicas}
    if template_annotations is not None:
        spec["template"] = {"metadata": {"annotations": template_annotations}}
    return merge_patch(
        kube.custom.patch_namespaced_custom_object,
        GROUP,
        VERSION,
        NAMESPACE,
        "machinesets",
        machineset,
        body={"spec": spec},
    )


def names(objects):
    return {obj["metadata"]["name"] for obj in objects}


def machines_of(kube, machineset):
    return machines(kube, label_selector="%s=%s" % (MACHINESET_LABEL, machineset))


def node_names(kube):
    return names(as_dict(kube.core.list_node)["items"])


def wait_until_scaled(kube, machineset):
    """Wait (with a watch) until the machine API acted on ``machineset`` (the MachineSet as a write returned it): its
    status observed that generation and counts ``spec.replicas``. The machine API writes that status once it created
    or deleted the Machines, and their Nodes."""
    name, generation, replicas = (
        machineset["metadata"]["name"],
        machineset["metadata"]["generation"],
        machineset["spec"]["replicas"],
    )
    wait_for(
        lambda **kwargs: kube.custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "machinesets", **kwargs),
        lambda machineset: (machineset.get("status") or {}).get("observedGeneration", 0) >= generation
        and machineset["status"].get("replicas") == replicas,
        "MachineSet %s to have %d Machines" % (name, replicas),
        field_selector="metadata.name=" + name,
    )


@pytest.fixture
def machineset(kube):
    """Makes a T4 MachineSet of its own (``make(delete_policy)``, no replicas) and returns its name; a test scales it
    as it likes, below the seeded one's size too, and it goes at the end of the test. Down to no Machine first: the
    reset deletes a test's MachineSets then their Machines, and the machine API, not yet seeing the first deletion,
    would replace the Machines it sees go."""
    made = []

    def make(delete_policy=None):
        name = "gpushare-ocp-test-%s" % uuid.uuid4().hex[:6]
        body = openshift_machineset(0)
        body["metadata"]["name"] = name
        selector = {"machine.openshift.io/cluster-api-cluster": "gpushare-ocp", MACHINESET_LABEL: name}
        body["spec"]["selector"] = {"matchLabels": dict(selector)}
        body["spec"]["template"]["metadata"] = {"labels": dict(selector)}
        if delete_policy:
            body["spec"]["deletePolicy"] = delete_policy
        wait_until_scaled(
            kube, as_dict(kube.custom.create_namespaced_custom_object, GROUP, VERSION, NAMESPACE, "machinesets", body)
        )
        made.append(name)
        return name

    yield make
    for name in made:
        wait_until_scaled(kube, scale(kube, 0, name))
        discard(kube.custom.delete_namespaced_custom_object, GROUP, VERSION, NAMESPACE, "machinesets", name)


def grow(kube, machineset, replicas, mark=None):
    """Scale ``machineset`` up to ``replicas``; the Machines this adds carry the annotation ``mark`` (``MARKED``'s
    way), or none. Returns them."""
    before = names(machines_of(kube, machineset))
    annotations = dict((key, "true" if key == mark else None) for key in (DELETE_MACHINE, OLD_DELETE_MACHINE))
    wait_until_scaled(kube, scale(kube, replicas, machineset, annotations))
    added = [machine for machine in machines_of(kube, machineset) if machine["metadata"]["name"] not in before]
    assert len(added) == replicas - len(before)
    nodes = node_names(kube)
    for machine in added:
        marks = [key for key in (machine["metadata"].get("annotations") or {}) if key in annotations]
        assert marks == ([mark] if mark else []), machine["metadata"]
        assert machine["status"]["nodeRef"]["name"] in nodes
    return added


def shrink(kube, machineset, replicas):
    """Scale ``machineset`` down to ``replicas``; returns the Machines deleted, whose Nodes must be gone with them."""
    before = machines_of(kube, machineset)
    wait_until_scaled(kube, scale(kube, replicas, machineset))
    left, nodes = names(machines_of(kube, machineset)), node_names(kube)
    deleted = [machine for machine in before if machine["metadata"]["name"] not in left]
    assert len(deleted) == len(before) - replicas
    for machine in before:
        kept = machine["metadata"]["name"] in left
        assert (machine["status"]["nodeRef"]["name"] in nodes) == kept, (machine["metadata"]["name"], kept)
    return deleted


def created(machine):
    return calendar.timegm(time.strptime(machine["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))


def wait_for_a_later_second(machines_made):
    """Oldest and Newest compare creationTimestamps, which keep whole seconds: Machines made in the same second are
    equal. Wait until the clock (the API server's is this machine's) is past the second the last of ``machines_made``
    was created in, so that the next Machines are newer. A wait on the clock, not on the cluster: at most a second."""
    later = max(created(machine) for machine in machines_made) + 1
    while time.time() < later:
        time.sleep(later - time.time())


def test_the_seeded_machineset_has_one_machine_per_node_and_nodes_carry_no_machineset_label(kube):
    seeded = machines(kube)
    assert sorted(machine["status"]["nodeRef"]["name"] for machine in seeded) == ["gpu-t4-0", "gpu-t4-1"]
    for machine in seeded:
        assert machine["metadata"]["labels"][MACHINESET_LABEL] == MACHINESET
        assert machine["metadata"]["name"].startswith(MACHINESET + "-")
        assert machine["metadata"]["ownerReferences"][0]["kind"] == "MachineSet"
        node = as_dict(kube.core.read_node, machine["status"]["nodeRef"]["name"])
        assert MACHINESET_LABEL not in labels(node)
        assert node["metadata"]["annotations"]["machine.openshift.io/machine"] == "%s/%s" % (
            NAMESPACE,
            machine["metadata"]["name"],
        )
        assert node["spec"]["providerID"] == machine["spec"]["providerID"]
    assert not any(MACHINESET_LABEL in labels(node) for node in as_dict(kube.core.list_node)["items"])


def test_a_scaled_up_machineset_gets_a_machine_then_a_gpu_node_from_its_template(kube):
    seeded = {machine["metadata"]["name"] for machine in machines(kube)}
    # Born marked for deletion: OpenShift's default delete policy, Random, could take a seeded Machine on the way down.
    scale(kube, 3, template_annotations=MARKED)
    joined = wait_for(
        list_machines(kube),
        lambda machine: machine["metadata"]["name"] not in seeded and (machine.get("status") or {}).get("nodeRef"),
        "a third Machine whose node joined",
    )
    assert joined["metadata"]["annotations"] == MARKED  # the template's annotations
    node_name = joined["status"]["nodeRef"]["name"]
    assert node_name.startswith("ip-10-0-") and node_name.endswith(".ec2.internal")
    # The operator then labels the new GPU node and its device plugin advertises the T4.
    node = wait_for(
        kube.core.list_node,
        lambda node: node["metadata"]["name"] == node_name
        and labels(node).get("nvidia.com/gpu.present") == "true"
        and node["status"].get("allocatable", {}).get("nvidia.com/gpu") == "1",
        "the new node to be labelled by the operator and advertise its GPU",
    )
    node_labels = labels(node)
    assert node_labels["cluster-api/accelerator"] == "tesla-t4"
    assert node_labels["node.kubernetes.io/instance-type"] == "g4dn.xlarge"
    assert node_labels["nvidia.com/gpu.present"] == "true"
    assert MACHINESET_LABEL not in node_labels
    # The template's taint (the node lifecycle controller may still show its not-ready taint for a moment).
    assert {"key": "nvidia.com/gpu", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert node["metadata"]["annotations"]["machine.openshift.io/machine"].endswith("/" + joined["metadata"]["name"])

    scale(kube, 2)
    wait_for_deletion(
        list_machines(kube), "the marked Machine", field_selector="metadata.name=" + joined["metadata"]["name"]
    )
    wait_for_deletion(kube.core.list_node, "its node", field_selector="metadata.name=" + node_name)
    assert {machine["metadata"]["name"] for machine in machines(kube)} == seeded


def test_reset_deletes_what_a_scale_up_added(api_client, kube):
    seeded = {machine["metadata"]["name"] for machine in machines(kube)}
    # Born marked for deletion: the reset puts the seeded replicas back before it deletes the Machines tests added
    # (seed_openshift.seed_machine_api), and the default delete policy, Random, could then take a seeded Machine.
    scale(kube, 3, template_annotations=MARKED)
    wait_for(
        list_machines(kube),
        lambda machine: machine["metadata"]["name"] not in seeded and (machine.get("status") or {}).get("nodeRef"),
        "a third Machine whose node joined",
    )
    seed.reset(api_client, "openshift")
    assert {machine["metadata"]["name"] for machine in machines(kube)} == seeded
    assert not [node for node in as_dict(kube.core.list_node)["items"] if node["metadata"]["name"].startswith("ip-")]


@pytest.mark.parametrize(
    "policy, annotation",
    [
        (None, DELETE_MACHINE),
        ("Random", DELETE_MACHINE),
        ("Newest", DELETE_MACHINE),
        ("Oldest", DELETE_MACHINE),
        (None, OLD_DELETE_MACHINE),  # the annotation's older name, still honoured
    ],
)
def test_a_scale_down_deletes_the_machine_marked_for_deletion_with_its_node_whatever_the_policy(
    kube, machineset, policy, annotation
):
    name = machineset(policy)
    # The marked Machine is one the policy would not pick first: the oldest under Newest, else a newer one.
    first = grow(kube, name, 1, mark=annotation if policy == "Newest" else None)
    second = grow(kube, name, 2, mark=None if policy == "Newest" else annotation)
    grow(kube, name, 3)
    marked = first if policy == "Newest" else second
    assert names(shrink(kube, name, 2)) == names(marked)


@pytest.mark.parametrize("policy", ["Newest", "Oldest"])
def test_the_newest_and_oldest_delete_policies_delete_as_named(kube, machineset, policy):
    name = machineset(policy)
    first = grow(kube, name, 1)
    wait_for_a_later_second(first)
    second = grow(kube, name, 2)
    wait_for_a_later_second(second)
    third = grow(kube, name, 3)
    assert names(shrink(kube, name, 2)) == names(third if policy == "Newest" else first)
    assert names(shrink(kube, name, 1)) == names(second)


# The priorities of delete_policy.go, without a cluster.

NOW = 1767225600.0  # 2026-01-01T00:00:00Z


def machine(name, age=0, annotations=None, node=True, deleting=False, **status):
    meta = {
        "name": name,
        "creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - age)),
        "annotations": annotations or {},
    }
    if deleting:
        meta["deletionTimestamp"] = meta["creationTimestamp"]
    if node:
        status["nodeRef"] = {"kind": "Node", "name": name}
    return {"metadata": meta, "status": status}


def picks(machines_, priority, diff=1):
    return [
        machine_["metadata"]["name"] for machine_ in machines_to_delete(machines_, diff, priority, random.Random(), NOW)
    ]


def test_random_puts_the_marked_and_the_failed_then_those_without_a_node_before_the_rest():
    healthy = [machine("healthy-%d" % number, age=number) for number in range(3)]
    assert picks(healthy + [machine("nodeless", node=False)], random_delete_priority) == ["nodeless"]
    for marked in (
        machine("marked", annotations={DELETE_MACHINE: "yes"}),
        machine("marked", annotations={OLD_DELETE_MACHINE: "true"}),
        machine("marked", errorReason=""),  # set, even empty
        machine("marked", errorMessage="boom"),
    ):
        assert picks([machine("nodeless", node=False)] + healthy + [marked], random_delete_priority) == ["marked"]
    # An empty annotation and a Failed phase alone mark nothing.
    unmarked = machine("unmarked", node=True, annotations={DELETE_MACHINE: ""}, phase="Failed")
    assert picks(healthy + [unmarked, machine("nodeless", node=False)], random_delete_priority) == ["nodeless"]
    assert picks(healthy + [machine("deleting", deleting=True)], random_delete_priority) == ["deleting"]


def test_random_draws_among_equals():
    equals = [machine("equal-%d" % number, age=number) for number in range(3)]
    drawn = set()
    for _ in range(300):  # each is missed 300 times in a row with a chance of (2/3)**300
        drawn.update(picks(equals, random_delete_priority))
    assert drawn == names(equals)


def test_newest_and_oldest_go_by_age_whatever_the_node_after_the_marked_and_the_failed():
    aged = [machine("day", age=86400), machine("year", age=365 * 86400, node=False), machine("minute", age=60)]
    assert picks(aged, newest_delete_priority, 2) == ["minute", "day"]
    assert picks(aged, oldest_delete_priority, 2) == ["year", "day"]
    for priority in (newest_delete_priority, oldest_delete_priority):
        for marked in (
            machine("marked", age=3600, annotations={DELETE_MACHINE: "1"}),
            machine("marked", age=3600, annotations={OLD_DELETE_MACHINE: "1"}),
            machine("marked", age=3600, errorMessage="boom"),
        ):
            assert picks(aged + [marked], priority) == ["marked"]
    # creationTimestamps keep whole seconds: two Machines of the same second are equal, drawn at random.
    twins = [machine("twin-a", age=5), machine("twin-b", age=5)]
    for priority in (newest_delete_priority, oldest_delete_priority):
        drawn = set()
        for _ in range(200):
            drawn.update(picks(twins, priority))
        assert drawn == {"twin-a", "twin-b"}
