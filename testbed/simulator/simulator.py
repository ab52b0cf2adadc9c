"""Wiring: informers feed a work queue; workers reconcile the operator, nodes and pods."""

import json
import logging
import threading

from kubernetes.client.exceptions import ApiException

from testbed.simulator import gpu_operator
from testbed.simulator.informer import Informer
from testbed.simulator.kube import CLUSTER_POLICY, Kube
from testbed.simulator.kubelet import Kubelet
from testbed.simulator.machine_api import GROUP as MACHINE_GROUP
from testbed.simulator.machine_api import MACHINESET_LABEL
from testbed.simulator.machine_api import VERSION as MACHINE_VERSION
from testbed.simulator.machine_api import MachineApi
from testbed.simulator.names import (
    APPLIED_ANNOTATION,
    DEVICE_PLUGIN_DAEMONSET,
    HAMI_POD_SELECTOR,
    NFD_WORKER_POD_SELECTOR,
    OPERAND_LABEL,
    OPERATOR_DEPLOYMENT_SELECTOR,
)
from testbed.simulator.nodes import NodeReconciler
from testbed.simulator.workqueue import WorkQueue

log = logging.getLogger(__name__)

WORKERS = 4
RETRY_DELAY_SECONDS = 0.5
OPERATOR_KEY = ("operator",)


class Simulator(object):
    """The cached view of the cluster the reconcilers read (``node``, ``policy``...), and its workers."""

    def __init__(self, api_client, step_delay, machine_api=False):
        """``machine_api``: play OpenShift's machine API too (the openshift profile; its CRDs must exist)."""
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
            label_selector="%s=%s" % OPERAND_LABEL,
        )
        self.operators = Informer(
            "deployments",
            self.kube.apps.list_deployment_for_all_namespaces,
            self._on_change,
            label_selector=OPERATOR_DEPLOYMENT_SELECTOR,
        )
        # The pods of the components that act where they run: NFD's worker (from the operator's Helm chart) and
        # HAMi's device plugins. The DaemonSet controller and the scheduler place them (selectors, taints).
        self.nfd_pods = Informer(
            "nfd-pods",
            self.kube.core.list_pod_for_all_namespaces,
            self._on_change,
            label_selector=NFD_WORKER_POD_SELECTOR,
            field_selector="spec.nodeName!=",
        )
        self.hami_pods = Informer(
            "hami-pods",
            self.kube.core.list_pod_for_all_namespaces,
            self._on_change,
            label_selector=HAMI_POD_SELECTOR,
            field_selector="spec.nodeName!=",
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
        self.informers = (
            self.nodes,
            self.pods,
            self.daemonsets,
            self.operators,
            self.nfd_pods,
            self.hami_pods,
            self.policies,
            self.configmaps,
        )
        self.machine_api = None
        if machine_api:
            self.machinesets, self.machines = (
                Informer(
                    plural,
                    self.kube.custom.list_cluster_custom_object,
                    self._on_change,
                    MACHINE_GROUP,
                    MACHINE_VERSION,
                    plural,
                )
                for plural in ("machinesets", "machines")
            )
            self.informers += (self.machinesets, self.machines)
            self.machine_api = MachineApi(self.kube, self)
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

    def operand_daemonsets(self):
        return self.daemonsets.values()

    def device_plugin(self):
        return next((ds for ds in self.daemonsets.values() if ds["metadata"]["name"] == DEVICE_PLUGIN_DAEMONSET), None)

    def operator_deployment(self):
        deployments = self.operators.values()
        return deployments[0] if deployments else None

    def operator_namespace(self):
        """Where the operands run: the device plugin's namespace, else the operator's, else the policy's status."""
        for owner in (self.device_plugin(), self.operator_deployment()):
            if owner:
                return owner["metadata"]["namespace"]
        return ((self.policy() or {}).get("status") or {}).get("namespace")

    def configmap(self, name, namespace=None):
        return self.configmaps.get(name, namespace or self.operator_namespace())

    def nfd_worker_runs_on(self, node_name):
        return any(
            pod["spec"]["nodeName"] == node_name
            and (pod.get("status") or {}).get("phase") == "Running"
            and not pod["metadata"].get("deletionTimestamp")
            for pod in self.nfd_pods.values()
        )

    def hami_pods_on(self, node_name):
        return [pod for pod in self.hami_pods.values() if pod["spec"]["nodeName"] == node_name]

    # events -> work ---------------------------------------------------------------------------

    def _on_change(self, kind, old, new):
        if kind == "nodes":
            self.queue.add(("node", (new or old)["metadata"]["name"]))
        elif kind == "pods" and new is not None:
            self.queue.add(("pod", new["metadata"]["namespace"], new["metadata"]["name"]))
        elif kind == "clusterpolicies":
            self.queue.add(OPERATOR_KEY)
            if gpu_operator.node_facing(old) != gpu_operator.node_facing(new):
                self._add_all_nodes()  # e.g. the device plugin switched off or on
        elif kind == "daemonsets":
            is_plugin = (new or old)["metadata"]["name"] == DEVICE_PLUGIN_DAEMONSET
            created_or_deleted = new is None or old is None
            if is_plugin or created_or_deleted:
                self.queue.add(OPERATOR_KEY)
            if is_plugin and (created_or_deleted or old["metadata"]["generation"] != new["metadata"]["generation"]):
                self._add_all_nodes()  # the plugin restarted everywhere
        elif kind == "deployments":
            self.queue.add(OPERATOR_KEY)
            self._add_all_nodes()  # the operator started or stopped labelling nodes
        elif kind in ("nfd-pods", "hami-pods"):
            self.queue.add(("node", (new or old)["spec"]["nodeName"]))
        elif kind == "configmaps" and old is None and new is not None:
            self._wake_nodes_waiting_for(new["metadata"]["name"])
        elif kind == "machinesets":
            self.queue.add(("machineset", (new or old)["metadata"]["namespace"], (new or old)["metadata"]["name"]))
        elif kind == "machines":
            machineset = ((new or old)["metadata"].get("labels") or {}).get(MACHINESET_LABEL)
            if machineset:
                self.queue.add(("machineset", (new or old)["metadata"]["namespace"], machineset))

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
            policy, daemonset, deployment = self.policy(), self.device_plugin(), self.operator_deployment()
            if policy and deployment:
                namespace = deployment["metadata"]["namespace"]
                if gpu_operator.run_operator(self.kube, self, policy, namespace):
                    log.info(
                        "operator in %s: operands and status from ClusterPolicy %s",
                        namespace,
                        policy["metadata"]["name"],
                    )
            if policy and daemonset and gpu_operator.sync_device_plugin(self.kube, policy, daemonset):
                log.info("device plugin template updated from ClusterPolicy %s", policy["metadata"]["name"])
            return None
        if key[0] == "machineset":
            return self.machine_api.reconcile(key[1], key[2])
        if key[0] == "node":
            node = self.node(key[1])
            if node is not None:
                down_for = self.kubelet.reboot_step(node)
                if down_for is not None:
                    return down_for or None  # nothing runs on a node that is down or whose kubelet just came back
                self.kubelet.keep_ready(node)
            return self.node_reconciler.reconcile(key[1])
        pod = self.pods.get(key[2], key[1])
        return self.kubelet.run_pod(pod) if pod is not None else None

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
