"""NVIDIA's GPU Operator: from the ClusterPolicy, its operands and what they are told.

Everywhere, the operator renders the device plugin's pod template from ``spec.devicePlugin.config`` and
``spec.mig.strategy``; a change there changes the template, which restarts the plugin on every node.
The simulator stores those values as environment variables of the plugin container. The rollout of
``spec.migManager.config`` to mig-manager is not simulated: the simulated mig-manager reads it from
the policy when it handles a change (``mig_manager.py``).

Where the operator's Deployment runs (a Helm install of ``testbed/charts/gpu-operator``; the seeded profiles
have none, their operands are seeded), it also does what it does on a bare cluster (NVIDIA/gpu-operator
v24.3.0, ``controllers/state_manager.go`` and ``object_controls.go``): it creates the DaemonSets of the enabled
policy sections in its own namespace, owned by the policy, and deletes those of sections switched off
(``spec.devicePlugin.enabled: false`` when HAMi replaces the device plugin); it ships the
``default-mig-parted-config`` ConfigMap (owned by the policy too, as everything it creates); it labels the nodes
NFD found an NVIDIA device on (``gpu_node_labels``); it reports ``status.state: ready`` and its namespace. A
deleted operand DaemonSet comes back at once, as the real operator watches what it owns; a changed one is not put
back.
"""

import copy

from kubernetes.client.exceptions import ApiException

from testbed.simulator import mig_parted
from testbed.simulator.kube import CLUSTER_POLICY, MERGE_PATCH, discard, merge_patch
from testbed.simulator.names import (
    CONFIG_DEFAULT_ENV,
    CONFIG_NAME_ENV,
    DEFAULT_MIG_CONFIGMAP,
    DEPLOY_LABEL_PREFIX,
    DEPLOYED_COMPONENTS,
    DEVICE_PLUGIN_DAEMONSET,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    MIG_CONFIG_KEY,
    MIG_CONFIG_LABEL,
    MIG_STRATEGY_ENV,
    MPS_CONTROL_DAEMONSET,
    NFD_NVIDIA_PCI_LABEL,
    OPERAND_DAEMONSETS,
    OPERAND_LABEL,
    OPERAND_POLICY_SECTIONS,
)

DEFAULT_MIG_STRATEGY = "single"
# The operands' built-in toleration, theirs when the policy's spec.daemonsets.tolerations is unset or empty.
GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
# The operator labels MIG-capable nodes with the policy's default MIG config only when it is this one.
MIG_DISABLED_CONFIG = "all-disabled"
OPERAND_IMAGES = {
    "nvidia-driver-daemonset": "nvcr.io/nvidia/driver:550.127.08",
    "nvidia-container-toolkit-daemonset": "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0",
    DEVICE_PLUGIN_DAEMONSET: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    "gpu-feature-discovery": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    "nvidia-mig-manager": "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.10.0",
    "nvidia-dcgm-exporter": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.8-3.6.0",
    MPS_CONTROL_DAEMONSET: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    "nvidia-operator-validator": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.0",
}
READY_STATE = "ready"


def desired_plugin_env(policy):
    """The environment the operator gives the device plugin for this ClusterPolicy."""
    spec = policy.get("spec") or {}
    config = (spec.get("devicePlugin") or {}).get("config") or {}
    return {
        MIG_STRATEGY_ENV: (spec.get("mig") or {}).get("strategy") or DEFAULT_MIG_STRATEGY,
        CONFIG_NAME_ENV: config.get("name") or "",
        CONFIG_DEFAULT_ENV: config.get("default") or "",
    }


def plugin_env(daemonset):
    """The operator-managed environment of the device plugin's first container, as a dict."""
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    managed = (MIG_STRATEGY_ENV, CONFIG_NAME_ENV, CONFIG_DEFAULT_ENV)
    return {item["name"]: item.get("value", "") for item in container.get("env") or [] if item["name"] in managed}


def with_plugin_env(pod_spec, env):
    """A copy of a pod spec whose first container carries ``env`` (other variables kept)."""
    pod_spec = copy.deepcopy(pod_spec)
    container = pod_spec["containers"][0]
    kept = [item for item in container.get("env") or [] if item["name"] not in env]
    container["env"] = kept + [{"name": name, "value": value} for name, value in sorted(env.items())]
    return pod_spec


def sync_device_plugin(kube, policy, daemonset):
    """Patch the device plugin's template when it does not reflect the policy. True if it did."""
    env = desired_plugin_env(policy)
    if plugin_env(daemonset) == env:
        return False
    metadata = daemonset["metadata"]
    pod_spec = with_plugin_env(daemonset["spec"]["template"]["spec"], env)
    merge_patch(
        kube.apps.patch_namespaced_daemon_set,
        metadata["name"],
        metadata["namespace"],
        body={
            "metadata": {"resourceVersion": metadata["resourceVersion"]},
            "spec": {"template": {"spec": {"containers": pod_spec["containers"]}}},
        },
    )
    return True


def daemonset_revision(daemonset):
    """Changes whenever the pod template does (uid covers re-creation), i.e. when the plugin restarts."""
    return "%s/%s" % (daemonset["metadata"]["uid"], daemonset["metadata"]["generation"])


def is_enabled(policy, section):
    """``spec.<section>.enabled`` of the policy, true when unset (the operator's ``IsEnabled``); None: always."""
    if section is None:
        return True
    return ((policy.get("spec") or {}).get(section) or {}).get("enabled") is not False


def node_facing(policy):
    """What of the policy the nodes' operands read directly: a change to it is for every node to look at."""
    if policy is None:
        return None
    mig_config = (((policy.get("spec") or {}).get("migManager") or {}).get("config") or {}).get("default")
    return is_enabled(policy, "devicePlugin"), is_enabled(policy, "migManager"), mig_config


# the objects the operator creates -------------------------------------------------------------------


def operand_daemonset(namespace, name, policy, owner=None):
    """An operand DaemonSet as the operator renders it for ``policy``; ``owner``: the policy that owns it."""
    component = OPERAND_DAEMONSETS[name]
    selector = {"nvidia.com/mps.capable": "true"} if component is None else {DEPLOY_LABEL_PREFIX + component: "true"}
    daemonsets_spec = (policy.get("spec") or {}).get("daemonsets") or {}
    pod_spec = {
        "nodeSelector": selector,
        "tolerations": copy.deepcopy(daemonsets_spec.get("tolerations") or [GPU_TOLERATION]),
        "containers": [{"name": name, "image": OPERAND_IMAGES[name]}],
    }
    if name == DEVICE_PLUGIN_DAEMONSET:
        pod_spec = with_plugin_env(pod_spec, desired_plugin_env(policy))
    labels = dict(daemonsets_spec.get("labels") or {})
    labels.update({"app": name, OPERAND_LABEL[0]: OPERAND_LABEL[1]})
    metadata = {"name": name, "namespace": namespace, "labels": labels}
    if owner is not None:
        # Deleting the policy (helm uninstall) deletes the operands, through Kubernetes' garbage collector.
        metadata["ownerReferences"] = controller_reference(owner)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata,
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, OPERAND_LABEL[0]: OPERAND_LABEL[1]}}, "spec": pod_spec},
        },
    }


def controller_reference(owner):
    """``metadata.ownerReferences`` naming ``owner`` (the ClusterPolicy) as controller, as controller-runtime's
    ``SetControllerReference`` writes it for everything the operator creates."""
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def default_mig_configmap(namespace, policy):
    """The ConfigMap the operator ships (``default-mig-parted-config``): NVIDIA's 81 configs, as they are, owned by
    the ClusterPolicy (gpu-operator ``controllers/object_controls.go``, ``ConfigMap()``:
    ``controllerutil.SetControllerReference(n.singleton, obj, ...)`` before it creates the object)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DEFAULT_MIG_CONFIGMAP,
            "namespace": namespace,
            "ownerReferences": controller_reference(policy),
        },
        "data": {MIG_CONFIG_KEY: mig_parted.shipped_config_yaml()},
    }


def deploy_labels(mig_capable):
    """The ``nvidia.com/gpu.deploy.<component>=true`` labels of a GPU node (mig-manager only where MIG can run)."""
    return {
        DEPLOY_LABEL_PREFIX + component: "true"
        for component in DEPLOYED_COMPONENTS
        if component != "mig-manager" or mig_capable
    }


def gpu_node_labels(labels, mig_capable, policy):
    """The labels the operator adds to a node NFD labelled as having an NVIDIA device; pure.

    ``gpu.present=true``, the deploy labels it does not have yet (a user's ``gpu.deploy.<component>=false``
    stays, as ``addGPUStateLabels`` keeps existing values) and, on MIG-capable nodes without one, the
    ``mig.config`` label when the policy's default MIG config is ``all-disabled``.
    """
    if labels.get(NFD_NVIDIA_PCI_LABEL) != "true":
        return {}
    added = {GPU_PRESENT_LABEL: "true"} if labels.get(GPU_PRESENT_LABEL) != "true" else {}
    added.update({key: value for key, value in deploy_labels(mig_capable).items() if key not in labels})
    mig_config = (((policy.get("spec") or {}).get("migManager") or {}).get("config") or {}).get("default")
    if (
        mig_capable
        and is_enabled(policy, "migManager")
        and MIG_CONFIG_LABEL not in labels
        and mig_config == MIG_DISABLED_CONFIG
    ):
        added[MIG_CONFIG_LABEL] = MIG_DISABLED_CONFIG
    return added


# the operator's pass ------------------------------------------------------------------------------


def run_operator(kube, cluster, policy, namespace):
    """One pass of the operator installed in ``namespace``: operands, MIG ConfigMap, status. True if it wrote."""
    existing = {
        daemonset["metadata"]["name"]
        for daemonset in cluster.operand_daemonsets()
        if daemonset["metadata"]["namespace"] == namespace
    }
    wrote = False
    for name, section in OPERAND_POLICY_SECTIONS.items():
        wanted = is_enabled(policy, section)
        if wanted and name not in existing:
            wrote |= _ignoring(
                409,
                kube.apps.create_namespaced_daemon_set,
                namespace,
                operand_daemonset(namespace, name, policy, policy),
            )
        elif not wanted and name in existing:
            wrote |= _ignoring(404, kube.apps.delete_namespaced_daemon_set, name, namespace)
    if cluster.configmap(DEFAULT_MIG_CONFIGMAP, namespace) is None:
        wrote |= _ignoring(
            409, kube.core.create_namespaced_config_map, namespace, default_mig_configmap(namespace, policy)
        )
    status = {"state": READY_STATE, "namespace": namespace}
    if {key: (policy.get("status") or {}).get(key) for key in status} != status:
        discard(
            kube.custom.patch_cluster_custom_object_status,
            CLUSTER_POLICY["group"],
            CLUSTER_POLICY["version"],
            CLUSTER_POLICY["plural"],
            policy["metadata"]["name"],
            {"status": status},
            _content_type=MERGE_PATCH,
        )
        wrote = True
    return wrote


def _ignoring(status, call, *args):
    """Make the call; True if it happened, False if it failed with ``status`` (already done by someone else)."""
    try:
        discard(call, *args)
        return True
    except ApiException as exc:
        if exc.status != status:
            raise
        return False
