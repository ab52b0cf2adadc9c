"""Per-node reconcile: what runs on one node (NFD's worker and the operator's labels where they are
installed, then mig-manager, the device plugin and GPU Feature Discovery, and HAMi's device plugins), and the
writing of what they changed.

NVIDIA's operands run on a node once the operator labelled it ``nvidia.com/gpu.present=true``; the device
plugin among them only while its DaemonSet exists and the policy leaves ``spec.devicePlugin.enabled`` on
(switched off, GFD keeps labelling and the plugin's resources go). HAMi's plugins run where their pods run
(``hami.py``); where both device plugins run, HAMi's ``nvidia.com/gpu`` wins, as the plugin that registered last.

Level-triggered and stateless: everything is derived from the Node (its labels, its
``sim.gpushare.k8s/hardware`` truth and ``sim.gpushare.k8s/applied`` record), the ClusterPolicy, the
device plugin DaemonSet, pods and ConfigMaps, and written back with the resourceVersion it was read at, so
a concurrent change makes the write fail and the node is simply reconciled again.
"""

import json
import logging
import time

from testbed.simulator import device_plugin, gpu_feature_discovery, gpu_operator, hami, nvml
from testbed.simulator.kube import merge_patch
from testbed.simulator.mig_manager import MIG_STATE_REBOOTING, MigManager
from testbed.simulator.names import (
    APPLIED_ANNOTATION,
    GFD_TIMESTAMP_LABEL,
    GPU_PRESENT_LABEL,
    HAMI_REGISTER_ANNOTATION,
    HARDWARE_ANNOTATION,
    MIG_STATE_LABEL,
    MIG_STRATEGY_ENV,
    NFD_NVIDIA_PCI_LABEL,
    NVIDIA,
    is_gfd_label,
)

log = logging.getLogger(__name__)

# How long a started HAMi device plugin pod waits for its ConfigMap before looking again (its volume).
HAMI_CONFIG_RETRY_SECONDS = 1.0


def fresh_applied(hardware, daemonset, mig_label, policy=None):
    """The record of a node whose operands just started on the seeded state: unshared, MIG disabled.

    Without the device plugin's DaemonSet (switched off), the MIG strategy is the one the operator would
    give it (``policy``); the plugin then (re)starts, reading its config, once its DaemonSet exists.
    """
    env = gpu_operator.plugin_env(daemonset) if daemonset else gpu_operator.desired_plugin_env(policy)
    return {
        "configLabel": None,
        "daemonSet": gpu_operator.daemonset_revision(daemonset) if daemonset else None,
        "migStrategy": env[MIG_STRATEGY_ENV],
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
        self.resources = None  # NodeView to advertise and label

    def event(self, reason, message, component):
        log.info("%s: %s: %s", self.node["metadata"]["name"], reason, message)
        self.events.append((reason, message, component))


class NodeView(object):
    """What the device plugins advertise (capacity, allocatable) and GFD labels (None: GFD does not run)."""

    def __init__(self, labels, capacity, allocatable):
        self.labels = labels
        self.capacity = capacity
        self.allocatable = allocatable


def render(hardware, layout, mig_strategy, sharing):
    """The node's ``nvidia.com/*`` resources and GFD labels (without ``gfd.timestamp``); pure."""
    advertised = device_plugin.advertised_resources(hardware, layout, mig_strategy)
    capacity, allocatable = device_plugin.resources(advertised, sharing)
    return NodeView(gpu_feature_discovery.labels(hardware, advertised, mig_strategy, sharing), capacity, allocatable)


class NodeReconciler(object):
    def __init__(self, kube, cluster, step_delay):
        """``cluster`` gives the cached objects: ``.policy()``, ``.device_plugin()``, ``.node(name)``..."""
        self.kube = kube
        self.cluster = cluster
        self.mig_manager = MigManager(kube, cluster, step_delay)

    def reconcile(self, name):
        """Bring one node in line; returns seconds after which to look again, or None."""
        node = self.cluster.node(name)
        if node is None or HARDWARE_ANNOTATION not in (node["metadata"].get("annotations") or {}):
            return None
        hardware = json.loads(node["metadata"]["annotations"][HARDWARE_ANNOTATION])
        policy = self.cluster.policy()
        change = NodeChange(node)
        if self.cluster.nfd_worker_runs_on(name):
            change.labels[NFD_NVIDIA_PCI_LABEL] = "true"  # the node's PCI bus shows vendor 0x10de
        # The operator labels every GPU node it has not seen yet. In a seeded cluster no operator Deployment runs (so
        # what tests do to operands and labels stays): the seed labelled its nodes, and a node that joins later (the
        # machine API's) gets the operator's labels here, as a real cluster's new node does.
        joined_later = APPLIED_ANNOTATION not in (node["metadata"].get("annotations") or {})
        if policy and (self.cluster.operator_deployment() or joined_later):
            change.labels.update(gpu_operator.gpu_node_labels(change.labels, nvml.gpu_of(hardware).mig_capable, policy))
        if policy and change.labels.get(GPU_PRESENT_LABEL) == "true":
            self._run_nvidia_operands(change, hardware, policy)
        self._run_hami(change, hardware)
        self._write(change)
        return change.requeue_after

    def _run_nvidia_operands(self, change, hardware, policy):
        """mig-manager, then the device plugin (unless switched off) and GFD's labels, on ``change``."""
        daemonset = self.cluster.device_plugin()
        if "migLayout" not in change.applied:  # first start here (a HAMi-only record may be there)
            change.applied.update(fresh_applied(hardware, daemonset, None, policy))
        plugin_restarts = self.mig_manager.step(change, hardware, policy)
        if change.labels.get(MIG_STATE_LABEL) in ("pending", MIG_STATE_REBOOTING):  # paused while mig-manager works
            return
        plugin_runs = daemonset is not None and gpu_operator.is_enabled(policy, "devicePlugin")
        if plugin_runs:
            device_plugin.run(self.cluster, self.kube, change, daemonset, plugin_restarts)
        applied = change.applied
        change.resources = render(
            hardware,
            applied["migLayout"],
            applied["migStrategy"],
            device_plugin.Sharing.from_dict(applied["sharing"]),
        )
        if not plugin_runs:  # nothing registered with the kubelet; GFD still labels the GPUs
            change.resources.capacity, change.resources.allocatable = {}, {}

    def _run_hami(self, change, hardware):
        """HAMi's device plugin (and mock device plugin) where their pods run; their record in ``applied``."""
        name = change.node["metadata"]["name"]
        pods = self.cluster.hami_pods_on(name)
        record = self._hami_record(change, hami.device_plugin_pod(pods))
        if record is None:
            if change.applied.pop("hami", None) and change.resources is None:
                change.resources = NodeView(None, {}, {})  # it stopped and nothing else registers here
            return
        change.applied["hami"] = record
        change.annotations[HAMI_REGISTER_ANNOTATION] = hami.register_annotation(name, hardware, record)
        registered = hami.resources(name, hardware, record, hami.mock_device_plugin_runs(pods))
        view = change.resources or NodeView(None, {}, {})
        view.capacity, view.allocatable = dict(view.capacity, **registered), dict(view.allocatable, **registered)
        change.resources = view

    def _hami_record(self, change, plugin_pod):
        """What HAMi's device plugin runs with on this node, read from its ConfigMap when its pod (re)started."""
        if plugin_pod is None:
            return None
        record = change.applied.get("hami")
        if record and record["pod"] == plugin_pod["metadata"]["uid"]:
            return record
        configmap = self.cluster.configmap(hami.device_config_name(plugin_pod), plugin_pod["metadata"]["namespace"])
        if configmap is None:  # the pod cannot mount it yet, so it does not start
            change.requeue_after = HAMI_CONFIG_RETRY_SECONDS
            return None
        return hami.start(plugin_pod, configmap)

    # writing -------------------------------------------------------------------------------------

    def _write(self, change):
        """Write status resources, then labels and annotations; both only when they differ."""
        node = change.node
        metadata = node["metadata"]
        resource_version = metadata["resourceVersion"]
        if change.resources is not None:
            resource_version = self._write_resources(node, change.resources, resource_version)
            if change.resources.labels is not None:
                self._render_labels(change, change.resources.labels)
        if change.applied:
            change.annotations[APPLIED_ANNOTATION] = json.dumps(change.applied, sort_keys=True)
        else:  # nothing of ours ran or runs here
            change.annotations.pop(APPLIED_ANNOTATION, None)
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
            key: value for key, value in change.labels.items() if is_gfd_label(key) and key != GFD_TIMESTAMP_LABEL
        }
        if current == gfd_labels:
            return
        for key in current:
            del change.labels[key]
        change.labels.update(gfd_labels)
        change.labels[GFD_TIMESTAMP_LABEL] = str(int(time.time()))

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
