"""Wiring: informers feed a work queue; workers reconcile the operator, nodes and pods."""

import json
import logging
import threading

from kubernetes.client.exceptions import ApiException

from testbed.simulator import gpu_operator
from testbed.simulator.informer import Informer
from testbed.simulator.kube import CLUSTER_POLICY, Kube
from testbed.simulator.kubelet import Kubelet
from testbed.simulator.names import APPLIED_ANNOTATION, DEVICE_PLUGIN_DAEMONSET
from testbed.simulator.nodes import NodeReconciler
from testbed.simulator.workqueue import WorkQueue

log = logging.getLogger(__name__)

WORKERS = 4
RETRY_DELAY_SECONDS = 0.5
OPERATOR_KEY = ("operator",)


class Simulator(object):
    """The cached view of the cluster the reconcilers read (``node``, ``policy``...), and its workers."""

    def __init__(self, api_client, step_delay):
        self.kube = Kube(api_client)
        self.queue = WorkQueue()
        self.nodes = Informer("nodes", self.kube.core.list_node, self._on_change)
        self.pods = Informer(
            "pods", self.kube.core.list_pod_for_all_namespaces, self._on_change, field_selector="spec.nodeName!="
        )
        self.daemonsets = Informer(
            "daemonsets",
            self.kube.apps.list_daemon_set_for_all_namespaces,
            self._on_change,
            field_selector="metadata.name=" + DEVICE_PLUGIN_DAEMONSET,
        )
        self.policies = Informer(
            "clusterpolicies",
            self.kube.custom.list_cluster_custom_object,
            self._on_change,
            CLUSTER_POLICY["group"],
            CLUSTER_POLICY["version"],
            CLUSTER_POLICY["plural"],
        )
        self.configmaps = Informer("configmaps", self.kube.core.list_config_map_for_all_namespaces, self._on_change)
        self.informers = (self.nodes, self.pods, self.daemonsets, self.policies, self.configmaps)
        self.node_reconciler = NodeReconciler(self.kube, self, step_delay)
        self.kubelet = Kubelet(self.kube, self)

    # the cluster view ------------------------------------------------------------------------

    def node(self, name):
        return self.nodes.get(name)

    def node_names(self):
        return [node["metadata"]["name"] for node in self.nodes.values()]

    def policy(self):
        policies = self.policies.values()
        return policies[0] if policies else None

    def device_plugin(self):
        daemonsets = self.daemonsets.values()
        return daemonsets[0] if daemonsets else None

    def operator_namespace(self):
        daemonset = self.device_plugin()
        return daemonset["metadata"]["namespace"] if daemonset else None

    def configmap(self, name):
        return self.configmaps.get(name, self.operator_namespace())

    # events -> work ---------------------------------------------------------------------------

    def _on_change(self, kind, old, new):
        if kind == "nodes":
            self.queue.add(("node", (new or old)["metadata"]["name"]))
        elif kind == "pods" and new is not None:
            self.queue.add(("pod", new["metadata"]["namespace"], new["metadata"]["name"]))
        elif kind == "clusterpolicies":
            self.queue.add(OPERATOR_KEY)
        elif kind == "daemonsets":
            self.queue.add(OPERATOR_KEY)
            if new is None or old is None or old["metadata"]["generation"] != new["metadata"]["generation"]:
                self._add_all_nodes()  # the plugin restarted everywhere
        elif kind == "configmaps" and old is None and new is not None:
            self._wake_nodes_waiting_for(new["metadata"]["name"])

    def _add_all_nodes(self):
        for name in self.node_names():
            self.queue.add(("node", name))

    def _wake_nodes_waiting_for(self, configmap_name):
        for node in self.nodes.values():
            applied = json.loads((node["metadata"].get("annotations") or {}).get(APPLIED_ANNOTATION) or "{}")
            if applied.get("waitingForConfigMap") == configmap_name:
                self.queue.add(("node", node["metadata"]["name"]))

    def _handle(self, key):
        """Do the work for one key; returns seconds after which to look again, or None."""
        if key == OPERATOR_KEY:
            policy, daemonset = self.policy(), self.device_plugin()
            if policy and daemonset and gpu_operator.sync_device_plugin(self.kube, policy, daemonset):
                log.info("device plugin template updated from ClusterPolicy %s", policy["metadata"]["name"])
            return None
        if key[0] == "node":
            node = self.node(key[1])
            if node is not None:
                self.kubelet.keep_ready(node)
            return self.node_reconciler.reconcile(key[1])
        pod = self.pods.get(key[2], key[1])
        if pod is not None:
            self.kubelet.run_pod(pod)
        return None

    def _work(self):
        while True:
            key = self.queue.get()
            try:
                delay = self._handle(key)
            except ApiException as exc:
                # 409: the object changed since the cache saw it; the watch brings the new version.
                level = logging.DEBUG if exc.status == 409 else logging.WARNING
                log.log(level, "%s: %s %s; retrying", key, exc.status, exc.reason)
                delay = RETRY_DELAY_SECONDS
            except Exception:  # noqa: BLE001 - a worker must survive any one failure
                log.exception("%s failed; retrying", key)
                delay = RETRY_DELAY_SECONDS
            finally:
                self.queue.done(key)
            if delay is not None:
                self.queue.add(key, delay)

    def start(self):
        """Start informers, wait for their first list, then start the workers and heartbeats."""
        for informer in self.informers:
            informer.start()
        for informer in self.informers:
            informer.synced.wait()
        self.kubelet.renew_all_leases()
        for index in range(WORKERS):
            threading.Thread(target=self._work, name="worker-%d" % index, daemon=True).start()
        self.kubelet.start_heartbeats()
        log.info(
            "simulator running: %d nodes, policy %s",
            len(self.node_names()),
            (self.policy() or {}).get("metadata", {}).get("name"),
        )
