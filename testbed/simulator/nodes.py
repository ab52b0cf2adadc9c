"""Per-node reconcile: mig-manager, then the device plugin and GPU Feature Discovery.

Level-triggered and stateless: everything is derived from the Node (its labels, its
``sim.gpushare.k8s/hardware`` truth and ``sim.gpushare.k8s/applied`` record), the ClusterPolicy, the
device plugin DaemonSet and ConfigMaps, and written back with the resourceVersion it was read at, so
a concurrent change makes the write fail and the node is simply reconciled again.
"""

import json
import logging
import time

from testbed.simulator import gfd, mig, operands
from testbed.simulator.kube import as_dict, get_or_none, merge_patch
from testbed.simulator.names import (
    APPLIED_ANNOTATION,
    CONFIG_DEFAULT_ENV,
    CONFIG_NAME_ENV,
    DEFAULT_MIG_CONFIGMAP,
    DEPLOY_LABEL_PREFIX,
    DEVICE_PLUGIN_CONFIG_LABEL,
    HARDWARE_ANNOTATION,
    INVALID_DEVICE_PLUGIN_CONFIG,
    MIG_CONFIG_FAILED,
    MIG_CONFIG_KEY,
    MIG_CONFIG_LABEL,
    MIG_FAIL_ANNOTATION,
    MIG_PAUSED_COMPONENTS,
    MIG_STATE_LABEL,
    MIG_STRATEGY_ENV,
    MIG_STUCK_ANNOTATION,
    NVIDIA,
    PAUSED_FOR_MIG_CHANGE,
    is_gfd_label,
)
from testbed.simulator.sharing import MPS, InvalidConfig, Sharing, parse_config

log = logging.getLogger(__name__)

DEVICE_PLUGIN = "nvidia-device-plugin"
MIG_MANAGER = "nvidia-mig-manager"


def fresh_applied(hardware, daemonset, mig_label):
    """The record of a node whose operands just started on the seeded state: unshared, MIG disabled."""
    return {
        "configLabel": None,
        "daemonSet": operands.daemonset_revision(daemonset),
        "migStrategy": operands.plugin_env(daemonset)[MIG_STRATEGY_ENV],
        "sharing": None,
        "waitingForConfigMap": None,
        "migLabel": mig_label,
        "migLayout": [None] * hardware["count"],
    }


class NodeChange(object):
    """What one reconcile writes: label and annotation edits, node status resources, and Events."""

    def __init__(self, node):
        self.node = node
        self.labels = dict(node["metadata"].get("labels") or {})
        self.annotations = dict(node["metadata"].get("annotations") or {})
        self.applied = json.loads(self.annotations.get(APPLIED_ANNOTATION) or "{}")
        self.events = []  # (reason, message, component)
        self.requeue_after = None
        self.resources = None  # GpuView to advertise, when the plugin (re)started

    def event(self, reason, message, component):
        log.info("%s: %s: %s", self.node["metadata"]["name"], reason, message)
        self.events.append((reason, message, component))


class NodeReconciler(object):
    def __init__(self, kube, cluster, step_delay):
        """``cluster`` gives the cached objects: ``.policy()``, ``.device_plugin()``, ``.node(name)``."""
        self.kube = kube
        self.cluster = cluster
        self.step_delay = step_delay

    def reconcile(self, name):
        """Bring one node in line; returns seconds after which to look again, or None."""
        node = self.cluster.node(name)
        policy, daemonset = self.cluster.policy(), self.cluster.device_plugin()
        if (
            node is None
            or HARDWARE_ANNOTATION not in (node["metadata"].get("annotations") or {})
            or not policy
            or not daemonset
        ):
            return None
        hardware = json.loads(node["metadata"]["annotations"][HARDWARE_ANNOTATION])
        change = NodeChange(node)
        if not change.applied:
            change.applied = fresh_applied(hardware, daemonset, None)
        plugin_restarts = self._manage_mig(change, hardware, policy)
        if change.labels.get(MIG_STATE_LABEL) != "pending":
            self._run_device_plugin(change, hardware, daemonset, plugin_restarts)
        self._write(change)
        return change.requeue_after

    # mig-manager (reference section 4) --------------------------------------------------------

    def _manage_mig(self, change, hardware, policy):
        """Run mig-manager's flow one step; True when it finished and the operands came back."""
        label = change.labels.get(MIG_CONFIG_LABEL)
        if label is None or label == change.applied.get("migLabel"):
            return False
        if change.labels.get(MIG_STATE_LABEL) != "pending":
            return self._start_mig_change(change, label, hardware, policy)
        if change.annotations.get(MIG_STUCK_ANNOTATION) == "true":
            return False  # gpu-operator #2833: a timed-out shutdown leaves the node pending and paused
        try:
            layout = self._apply_mig_config(change, label, hardware, policy)
        except mig.MigConfigError as exc:
            self._finish_mig_change(change, label, "failed")
            change.event(MIG_CONFIG_FAILED, "Failed to apply MIG configuration '%s': %s" % (label, exc), MIG_MANAGER)
            return False
        change.applied["migLayout"] = layout
        self._finish_mig_change(change, label, "success")
        return True

    def _start_mig_change(self, change, label, hardware, policy):
        """Step 1-2: done at once if the layout is already there, else pause the operands."""
        try:
            layout = self._resolve_mig_config(label, hardware, policy, change.applied["migLayout"])
        except mig.MigConfigError:
            layout = None  # reported after the pause, as mig-manager does
        if layout == change.applied["migLayout"] and MIG_FAIL_ANNOTATION not in change.annotations:
            self._finish_mig_change(change, label, "success")
            return False
        change.labels[MIG_STATE_LABEL] = "pending"
        for component in MIG_PAUSED_COMPONENTS:
            change.labels[DEPLOY_LABEL_PREFIX + component] = PAUSED_FOR_MIG_CHANGE
        change.requeue_after = self.step_delay
        return False

    def _apply_mig_config(self, change, label, hardware, policy):
        """Step 3: the new layout, or MigConfigError for why mig-parted could not apply it."""
        reason = change.annotations.pop(MIG_FAIL_ANNOTATION, None)
        if reason is not None:
            raise mig.MigConfigError(reason)
        layout = self._resolve_mig_config(label, hardware, policy, change.applied["migLayout"])
        mig.check_layout(layout, hardware)
        if layout != change.applied["migLayout"]:
            self._check_gpus_idle(change.node["metadata"]["name"])
        return layout

    def _resolve_mig_config(self, label, hardware, policy, current_layout):
        mig_manager = (policy.get("spec") or {}).get("migManager") or {}
        configmap_name = (mig_manager.get("config") or {}).get("name") or DEFAULT_MIG_CONFIGMAP
        if configmap_name == DEFAULT_MIG_CONFIGMAP:
            return mig.shipped_layout(label, hardware)
        configmap = get_or_none(
            self.kube.core.read_namespaced_config_map, configmap_name, self.cluster.operator_namespace()
        )
        text = ((configmap or {}).get("data") or {}).get(MIG_CONFIG_KEY)
        if text is None:
            raise mig.MigConfigError("ConfigMap %s has no key %s" % (configmap_name, MIG_CONFIG_KEY))
        return mig.custom_layout(label, text, hardware, current_layout)

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
                    raise mig.MigConfigError(
                        "In use by another client (pod %s/%s)" % (pod["metadata"]["namespace"], pod["metadata"]["name"])
                    )

    def _finish_mig_change(self, change, label, state):
        """Step 4: restore the operands and report; the label is not retried until it changes (#891)."""
        change.applied["migLabel"] = label
        change.labels[MIG_STATE_LABEL] = state
        for component in MIG_PAUSED_COMPONENTS:
            if change.labels.get(DEPLOY_LABEL_PREFIX + component) == PAUSED_FOR_MIG_CHANGE:
                change.labels[DEPLOY_LABEL_PREFIX + component] = "true"

    # device plugin + GFD (reference sections 1-2) ---------------------------------------------

    def _run_device_plugin(self, change, hardware, daemonset, restarted):
        applied = change.applied
        config_label = change.labels.get(DEVICE_PLUGIN_CONFIG_LABEL)
        revision = operands.daemonset_revision(daemonset)
        waiting_for = applied.get("waitingForConfigMap")
        if waiting_for and self.cluster.configmap(waiting_for) is not None:
            restarted = True  # the hung plugin's ConfigMap volume finally mounts
        if restarted or config_label != applied.get("configLabel") or revision != applied.get("daemonSet"):
            env = operands.plugin_env(daemonset)
            applied.update(
                configLabel=config_label,
                daemonSet=revision,
                migStrategy=env[MIG_STRATEGY_ENV],
                waitingForConfigMap=None,
            )
            self._load_config(change, hardware, env, config_label)
        change.resources = gfd.render(
            hardware, applied["migLayout"], applied["migStrategy"], Sharing.from_dict(applied["sharing"])
        )

    def _load_config(self, change, hardware, env, config_label):
        """Read the plugin's config as it starts; on any problem the node keeps what it had."""
        configmap_name = env[CONFIG_NAME_ENV]
        if not configmap_name:
            change.applied["sharing"] = None  # no config: the plugin's defaults, nothing shared
            return
        # Read live, not from the cache: the watch may not have delivered an edit made just before the restart.
        configmap = get_or_none(
            self.kube.core.read_namespaced_config_map, configmap_name, self.cluster.operator_namespace()
        )
        if configmap is None:
            change.applied["waitingForConfigMap"] = configmap_name
            change.event(
                INVALID_DEVICE_PLUGIN_CONFIG,
                "ConfigMap %s/%s not found: the device plugin waits for it"
                % (self.cluster.operator_namespace(), configmap_name),
                DEVICE_PLUGIN,
            )
            return
        key = config_label or env[CONFIG_DEFAULT_ENV]
        data = configmap.get("data") or {}
        if not key:
            change.applied["sharing"] = None
            return
        if key not in data:
            change.event(
                INVALID_DEVICE_PLUGIN_CONFIG,
                "config '%s' not found in ConfigMap %s: skipped" % (key, configmap_name),
                DEVICE_PLUGIN,
            )
            return
        try:
            sharing = parse_config(data[key], env[MIG_STRATEGY_ENV])
            if sharing and sharing.strategy == MPS and any(gpu is not None for gpu in change.applied["migLayout"]):
                raise InvalidConfig("MPS sharing is not supported on MIG devices")
        except InvalidConfig as exc:
            change.event(
                INVALID_DEVICE_PLUGIN_CONFIG,
                "invalid config '%s' in ConfigMap %s: %s" % (key, configmap_name, exc),
                DEVICE_PLUGIN,
            )
            return
        change.applied["sharing"] = sharing.to_dict() if sharing else None

    # writing -------------------------------------------------------------------------------------

    def _write(self, change):
        """Write status resources, then labels and annotations; both only when they differ."""
        node = change.node
        metadata = node["metadata"]
        resource_version = metadata["resourceVersion"]
        if change.resources is not None:
            resource_version = self._write_resources(node, change.resources, resource_version)
            self._render_labels(change, change.resources.labels)
        change.annotations[APPLIED_ANNOTATION] = json.dumps(change.applied, sort_keys=True)
        label_patch = _dict_patch(metadata.get("labels") or {}, change.labels)
        annotation_patch = _dict_patch(metadata.get("annotations") or {}, change.annotations)
        if label_patch or annotation_patch:
            merge_patch(
                self.kube.core.patch_node,
                metadata["name"],
                body={
                    "metadata": {
                        "resourceVersion": resource_version,
                        "labels": label_patch,
                        "annotations": annotation_patch,
                    }
                },
            )
        for reason, message, component in change.events:
            self.kube.node_event(node, reason, message, component)

    def _render_labels(self, change, gfd_labels):
        """Replace the GFD labels; stamp gfd.timestamp only when they changed, as GFD's rewrite does."""
        current = {
            key: value
            for key, value in change.labels.items()
            if is_gfd_label(key) and key != "nvidia.com/gfd.timestamp"
        }
        if current == gfd_labels:
            return
        for key in current:
            del change.labels[key]
        change.labels.update(gfd_labels)
        change.labels["nvidia.com/gfd.timestamp"] = str(int(time.time()))

    def _write_resources(self, node, view, resource_version):
        status = node.get("status") or {}
        patch = {}
        for field, wanted in (("capacity", view.capacity), ("allocatable", view.allocatable)):
            current = {key: value for key, value in (status.get(field) or {}).items() if key.startswith(NVIDIA)}
            if current != wanted:
                patch[field] = dict({key: None for key in current}, **wanted)
        if not patch:
            return resource_version
        updated = merge_patch(
            self.kube.core.patch_node_status,
            node["metadata"]["name"],
            body={"metadata": {"resourceVersion": resource_version}, "status": patch},
        )
        return updated["metadata"]["resourceVersion"]


def _dict_patch(current, wanted):
    """A merge patch turning the ``current`` map into ``wanted`` (None deletes a key)."""
    patch = {key: value for key, value in wanted.items() if current.get(key) != value}
    patch.update({key: None for key in current if key not in wanted})
    return patch
