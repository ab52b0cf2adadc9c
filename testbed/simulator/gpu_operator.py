"""NVIDIA's GPU Operator: it rolls ClusterPolicy fields out to its operands.

The operator renders the device plugin's pod template from ``spec.devicePlugin.config`` and
``spec.mig.strategy``; a change there changes the template, which restarts the plugin on every node.
The simulator stores those values as environment variables of the plugin container. The rollout of
``spec.migManager.config`` to mig-manager is not simulated: the simulated mig-manager reads it from
the policy when it handles a change (``mig_manager.py``).
"""

import copy

from testbed.simulator.kube import merge_patch
from testbed.simulator.names import CONFIG_DEFAULT_ENV, CONFIG_NAME_ENV, MIG_STRATEGY_ENV

DEFAULT_MIG_STRATEGY = "single"


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
