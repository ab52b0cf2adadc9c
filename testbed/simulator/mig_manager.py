"""nvidia-mig-manager on one node: the ``nvidia.com/mig.config`` label drives a change of MIG layout.

Reference ``nvidia-gpu-sharing.md`` section 4 and ``mig-parted-rules.md`` sections 4-6. It runs only
where the operator deployed it (``nvidia.com/gpu.deploy.mig-manager=true``, i.e. MIG-capable nodes);
elsewhere the label is left alone. Its config is ``config.yaml`` of the ConfigMap the ClusterPolicy
names (``spec.migManager.config.name``), by default ``default-mig-parted-config``, which the seeding
fills with NVIDIA's shipped configs. (The real mig-manager without a custom ConfigMap first generates
the same names from the hardware; the result is the same for the shipped names.)

Flow: 1. already applied: ``state=success``; 2. ``state=pending`` and the operands paused
(``paused-for-mig-change``); 3. apply with mig-parted; 4. ``state=success`` with the operands back, or
``state=failed`` with a ``MigConfigFailed`` Event. A label that was handled is not retried until it
changes (#891).

A MIG mode change (a GPU going into or out of MIG) needs a GPU reset. Where the node cannot reset its GPUs in
place (``sim.gpushare.k8s/mig-mode-needs-reboot``), step 3's mode change does not take effect: with
``WITH_REBOOT=true`` in ``spec.migManager.env`` mig-manager sets ``state=rebooting`` and reboots the node (the
mode is applied across the reboot; the kubelet stand-in keeps the node down a moment and brings it back with a new
boot ID), then starts over and finishes; without it the change fails (mig-parted's
``deployments/gpu-operator/reconfigure-mig.sh``: ``apply --mode-only``, then ``rebooting`` and ``reboot``, or
the config apply failing).
"""

import time

from testbed.simulator import mig_parted
from testbed.simulator.kube import as_dict, get_or_none
from testbed.simulator.names import (
    DEFAULT_MIG_CONFIGMAP,
    DEPLOY_LABEL_PREFIX,
    DOWN_UNTIL_ANNOTATION,
    MIG_CONFIG_FAILED,
    MIG_CONFIG_KEY,
    MIG_CONFIG_LABEL,
    MIG_FAIL_ANNOTATION,
    MIG_MODE_NEEDS_REBOOT_ANNOTATION,
    MIG_PAUSED_COMPONENTS,
    MIG_STATE_LABEL,
    MIG_STUCK_ANNOTATION,
    NVIDIA,
    PAUSED_FOR_MIG_CHANGE,
)

MIG_MANAGER = "nvidia-mig-manager"
DEPLOY_LABEL = DEPLOY_LABEL_PREFIX + "mig-manager"
MIG_STATE_REBOOTING = "rebooting"
# How many step delays a simulated reboot keeps the node down.
REBOOT_STEPS = 10


class MigManager(object):
    def __init__(self, kube, cluster, step_delay):
        """``cluster`` gives the cached objects (``.operator_namespace()``)."""
        self.kube = kube
        self.cluster = cluster
        self.step_delay = step_delay

    def step(self, change, hardware, policy):
        """Run the flow one step on a ``NodeChange``; True when it finished and the operands came back."""
        label = change.labels.get(MIG_CONFIG_LABEL)
        if change.labels.get(DEPLOY_LABEL) != "true" or label is None or label == change.applied.get("migLabel"):
            return False
        if change.labels.get(MIG_STATE_LABEL) != "pending":
            return self._start(change, label, hardware, policy)
        if change.annotations.get(MIG_STUCK_ANNOTATION) == "true":
            return False  # gpu-operator #2833: a timed-out shutdown leaves the node pending and paused
        try:
            layout = self._apply(change, label, hardware, policy)
        except mig_parted.MigConfigError as exc:
            self._finish(change, label, "failed")
            change.event(MIG_CONFIG_FAILED, "Failed to apply MIG configuration '%s': %s" % (label, exc), MIG_MANAGER)
            return False
        if _mode_changes(change.applied["migLayout"], layout) and _needs_reboot(change):
            if not _with_reboot(policy):
                self._finish(change, label, "failed")
                change.event(
                    MIG_CONFIG_FAILED,
                    "Failed to apply MIG configuration '%s': the MIG mode change did not take effect (the GPUs need a "
                    "reset this node cannot do in place; WITH_REBOOT is not true)" % label,
                    MIG_MANAGER,
                )
                return False
            self._reboot(change, layout)
            return False
        change.applied["migLayout"] = layout
        self._finish(change, label, "success")
        return True

    def _start(self, change, label, hardware, policy):
        """Steps 1-2: done at once if the layout is already there, else pause the operands."""
        try:
            layout = self._resolve(label, hardware, policy, change.applied["migLayout"])
        except mig_parted.MigConfigError:
            layout = None  # reported after the pause, as mig-manager does
        if layout == change.applied["migLayout"] and MIG_FAIL_ANNOTATION not in change.annotations:
            self._finish(change, label, "success")
            return False
        change.labels[MIG_STATE_LABEL] = "pending"
        for component in MIG_PAUSED_COMPONENTS:
            change.labels[DEPLOY_LABEL_PREFIX + component] = PAUSED_FOR_MIG_CHANGE
        change.requeue_after = self.step_delay
        return False

    def _apply(self, change, label, hardware, policy):
        """Step 3: the new layout, or MigConfigError for why mig-parted could not apply it."""
        reason = change.annotations.pop(MIG_FAIL_ANNOTATION, None)
        if reason is not None:
            raise mig_parted.MigConfigError(reason)
        layout = self._resolve(label, hardware, policy, change.applied["migLayout"])
        if layout != change.applied["migLayout"]:
            self._check_gpus_idle(change.node["metadata"]["name"])
        return layout

    def _resolve(self, label, hardware, policy, current_layout):
        """Parse the active ``config.yaml`` (strictly, as mig-parted does) and apply config ``label`` to the node."""
        mig_manager = (policy.get("spec") or {}).get("migManager") or {}
        configmap_name = (mig_manager.get("config") or {}).get("name") or DEFAULT_MIG_CONFIGMAP
        namespace = self.cluster.operator_namespace()
        configmap = get_or_none(self.kube.core.read_namespaced_config_map, configmap_name, namespace)
        if configmap is None:
            raise mig_parted.MigConfigError("ConfigMap %s/%s not found" % (namespace, configmap_name))
        text = (configmap.get("data") or {}).get(MIG_CONFIG_KEY)
        if text is None:
            raise mig_parted.MigConfigError("ConfigMap %s has no key %s" % (configmap_name, MIG_CONFIG_KEY))
        return mig_parted.apply_config(mig_parted.parse_config(text), label, hardware, current_layout)

    def _check_gpus_idle(self, node_name):
        """mig-manager never evicts workloads: a running pod holding a GPU makes the change fail (#1845)."""
        pods = as_dict(
            self.kube.core.list_pod_for_all_namespaces,
            field_selector="spec.nodeName=%s,status.phase=Running" % node_name,
        )["items"]
        for pod in pods:
            for container in pod["spec"]["containers"]:
                resources = container.get("resources") or {}
                requested = dict(resources.get("limits") or {}, **(resources.get("requests") or {}))
                if any(resource.startswith(NVIDIA) for resource in requested):
                    raise mig_parted.MigConfigError(
                        "In use by another client (pod %s/%s)" % (pod["metadata"]["namespace"], pod["metadata"]["name"])
                    )

    def _reboot(self, change, layout):
        """``state=rebooting`` and the node goes down; the MIG mode the reboot applies persists (a GPU going into MIG
        comes back with no MIG devices yet, one leaving it without MIG). mig-manager starts over once it is up."""
        change.labels[MIG_STATE_LABEL] = MIG_STATE_REBOOTING
        change.applied["migLayout"] = [None if gpu is None else [] for gpu in layout]
        change.annotations[DOWN_UNTIL_ANNOTATION] = "%.3f" % (time.time() + REBOOT_STEPS * self.step_delay)
        change.requeue_after = REBOOT_STEPS * self.step_delay

    @staticmethod
    def _finish(change, label, state):
        """Step 4: restore the operands and report; the label is not retried until it changes (#891)."""
        change.applied["migLabel"] = label
        change.labels[MIG_STATE_LABEL] = state
        for component in MIG_PAUSED_COMPONENTS:
            if change.labels.get(DEPLOY_LABEL_PREFIX + component) == PAUSED_FOR_MIG_CHANGE:
                change.labels[DEPLOY_LABEL_PREFIX + component] = "true"


def _mode_changes(current_layout, layout):
    """Whether some GPU goes into or out of MIG mode (``None`` per GPU: MIG disabled)."""
    return any((old is None) != (new is None) for old, new in zip(current_layout, layout))


def _needs_reboot(change):
    return change.annotations.get(MIG_MODE_NEEDS_REBOOT_ANNOTATION) == "true"


def _with_reboot(policy):
    env = ((policy.get("spec") or {}).get("migManager") or {}).get("env") or []
    return any(item.get("name") == "WITH_REBOOT" and str(item.get("value")).lower() == "true" for item in env)
