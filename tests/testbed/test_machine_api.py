"""OpenShift's Machines on the openshift profile: what the seed makes and what the simulated machine API does when a
MachineSet is scaled (testbed/simulator/machine_api.py; reference section 5)."""

from simulator_helpers import labels, wait_for, wait_for_deletion

from testbed import seed
from testbed.simulator.kube import as_dict, merge_patch

GROUP, VERSION, NAMESPACE = "machine.openshift.io", "v1beta1", seed.MACHINE_API_NAMESPACE
MACHINESET_LABEL = "machine.openshift.io/cluster-api-machineset"
MACHINESET = seed.OPENSHIFT_T4_MACHINESET


def machines(kube, **kwargs):
    return as_dict(kube.custom.list_namespaced_custom_object, GROUP, VERSION, NAMESPACE, "machines", **kwargs)["items"]


def list_machines(kube):
    return lambda **kwargs: kube.custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "machines", **kwargs)


def scale(kube, replicas):
    merge_patch(
        kube.custom.patch_namespaced_custom_object,
        GROUP,
        VERSION,
        NAMESPACE,
        "machinesets",
        MACHINESET,
        body={"spec": {"replicas": replicas}},
    )


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
    scale(kube, 3)
    joined = wait_for(
        list_machines(kube),
        lambda machine: machine["metadata"]["name"] not in seeded and (machine.get("status") or {}).get("nodeRef"),
        "a third Machine whose node joined",
    )
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
        list_machines(kube), "the newest Machine", field_selector="metadata.name=" + joined["metadata"]["name"]
    )
    wait_for_deletion(kube.core.list_node, "its node", field_selector="metadata.name=" + node_name)
    assert {machine["metadata"]["name"] for machine in machines(kube)} == seeded


def test_reset_deletes_what_a_scale_up_added(api_client, kube):
    seeded = {machine["metadata"]["name"] for machine in machines(kube)}
    scale(kube, 3)
    wait_for(
        list_machines(kube),
        lambda machine: machine["metadata"]["name"] not in seeded and (machine.get("status") or {}).get("nodeRef"),
        "a third Machine whose node joined",
    )
    seed.reset(api_client, "openshift")
    assert {machine["metadata"]["name"] for machine in machines(kube)} == seeded
    assert not [node for node in as_dict(kube.core.list_node)["items"] if node["metadata"]["name"].startswith("ip-")]
