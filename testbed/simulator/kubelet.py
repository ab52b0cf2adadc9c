"""The kubelet stand-in: no real kubelet runs, so the simulator keeps nodes Ready and runs their pods.

- Node heartbeats: each node's Lease in ``kube-node-lease`` is renewed every ``LEASE_RENEW_SECONDS``,
  nodes spread over that period by a hash of their name so a 1,000-node fleet renews ~50 a second;
  a node whose conditions the node lifecycle controller turned Unknown (after a gap) is set Ready again.
- Pods bound to a node become Running and Ready; pods being deleted gracefully are deleted with
  grace 0, as a kubelet does once their containers stopped.
- A node mig-manager rebooted (``sim.gpushare.k8s/down-until``) is down until then: no lease renewal, its
  conditions Unknown as the node lifecycle controller sets them for a silent kubelet; it comes back Ready with a
  new ``status.nodeInfo.bootID`` and the kubelet's ``Rebooted`` Event; its pods are Ready again (no restart is
  counted).
"""

import hashlib
import ipaddress
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from kubernetes.client.exceptions import ApiException

from testbed.simulator.kube import discard, merge_patch, now_micro, now_rfc3339
from testbed.simulator.names import DOWN_UNTIL_ANNOTATION

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_RENEW_SECONDS = 20
LEASE_DURATION_SECONDS = 40
# type -> (status, reason) as a healthy kubelet reports them
HEALTHY_CONDITIONS = {
    "Ready": ("True", "KubeletReady"),
    "MemoryPressure": ("False", "KubeletHasSufficientMemory"),
    "DiskPressure": ("False", "KubeletHasNoDiskPressure"),
    "PIDPressure": ("False", "KubeletHasSufficientPID"),
}
POD_NETWORK = ipaddress.ip_network("10.128.0.0/14")
POD_READY_CONDITIONS = ("ContainersReady", "Ready")
# How soon a pod on a node whose reboot is over, but whose kubelet has not reported back yet, is looked at again.
REBOOT_POLL_SECONDS = 0.5
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def _bucket(name, buckets):
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % buckets


def registered_labels(name, zone, instance_type):
    """The labels a 1.20 kubelet registers its node with (the cloud provider's zone and instance type among them).
    Without the beta ones the node lifecycle controller adds them a moment after a node is written, so a test
    reading the node right after would race it."""
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": zone,
        "node.kubernetes.io/instance-type": instance_type,
    }


def healthy_conditions():
    """Node conditions as a healthy kubelet reports them."""
    now = now_rfc3339()
    return [
        {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": "simulated kubelet",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        for kind, (status, reason) in HEALTHY_CONDITIONS.items()
    ]


def _down_until(node):
    """When a rebooting node comes back (epoch seconds), or None."""
    until = ((node or {}).get("metadata", {}).get("annotations") or {}).get(DOWN_UNTIL_ANNOTATION)
    return float(until) if until else None


def _unknown_conditions():
    """Node conditions as the node lifecycle controller sets them when the kubelet stops posting."""
    now = now_rfc3339()
    return [
        {
            "type": kind,
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        for kind in HEALTHY_CONDITIONS
    ]


def _condition_statuses(node):
    return {condition["type"]: condition["status"] for condition in (node.get("status") or {}).get("conditions") or []}


def pod_ip(pod):
    """A stable pod IP derived from the pod's uid."""
    offset = _bucket(pod["metadata"]["uid"], POD_NETWORK.num_addresses - 2) + 1
    return str(POD_NETWORK[offset])


class Kubelet(object):
    def __init__(self, kube, cluster):
        self.kube = kube
        self.cluster = cluster
        self._renewers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="lease")

    # node heartbeats ------------------------------------------------------------------------

    def start_heartbeats(self):
        threading.Thread(target=self._heartbeat_loop, name="heartbeats", daemon=True).start()

    def _heartbeat_loop(self):
        tick = 0
        while True:
            started = time.monotonic()
            for name in self.cluster.node_names():
                if _bucket(name, LEASE_RENEW_SECONDS) == tick:
                    self._renewers.submit(self._renew_lease, name)
            tick = (tick + 1) % LEASE_RENEW_SECONDS
            time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))

    def renew_all_leases(self):
        """Renew every lease now (at start-up, after a gap the simulator was not running)."""
        list(self._renewers.map(self._renew_lease, self.cluster.node_names()))

    def _renew_lease(self, name):
        if _down_until(self.cluster.node(name)):
            return  # a rebooting node's kubelet is not running
        try:
            try:
                merge_patch(
                    self.kube.coordination.patch_namespaced_lease,
                    name,
                    LEASE_NAMESPACE,
                    body={"spec": {"renewTime": now_micro(), "holderIdentity": name}},
                )
            except ApiException as exc:
                if exc.status != 404:
                    raise
                discard(self.kube.coordination.create_namespaced_lease, LEASE_NAMESPACE, self._lease(name))
        except Exception:  # noqa: BLE001 - one failed renewal must not stop the heartbeats
            log.exception("renewing the lease of node %s failed", name)

    def _lease(self, name):
        node = self.cluster.node(name)
        owner = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}] if node else []
        return {
            "metadata": {"name": name, "namespace": LEASE_NAMESPACE, "ownerReferences": owner},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "renewTime": now_micro()},
        }

    def reboot_step(self, node):
        """Keep a rebooting node down until its time, then bring it back. Returns the seconds it stays down, 0 when
        it just came back (the node's update brings it to the reconcilers again), or None: it is not rebooting."""
        until = _down_until(node)
        if until is None:
            return None
        name = node["metadata"]["name"]
        left = until - time.time()
        if left > 0:
            if _condition_statuses(node).get("Ready") != "Unknown":
                log.info("node %s: down (rebooting)", name)
                self._patch_status(name, {"conditions": _unknown_conditions()})
            return left
        boot_id = str(uuid.uuid4())
        log.info("node %s: back from its reboot, boot id %s", name, boot_id)
        # On the version read: a copy from before the reboot's end (the cache lags its own writes) fails with 409 and
        # is retried from the watch's newer copy, instead of ending the reboot a second time with another boot ID and
        # another Rebooted Event (seen under load: two Events for one reboot).
        self._patch_status(
            name,
            {"conditions": healthy_conditions(), "nodeInfo": {"bootID": boot_id}},
            resource_version=node["metadata"]["resourceVersion"],
        )
        merge_patch(self.kube.core.patch_node, name, body={"metadata": {"annotations": {DOWN_UNTIL_ANNOTATION: None}}})
        self.kube.node_event(node, "Rebooted", "Node %s has been rebooted, boot id: %s" % (name, boot_id), "kubelet")
        return 0

    def _patch_status(self, name, status, resource_version=None):
        body = {"status": status}
        if resource_version:
            body["metadata"] = {"resourceVersion": resource_version}
        discard(self.kube.core.patch_node_status, name, body, _content_type=STRATEGIC_MERGE_PATCH)

    def keep_ready(self, node):
        """Report the node healthy again if its conditions say otherwise (e.g. Unknown after a gap)."""
        current = _condition_statuses(node)
        if all(current.get(kind) == status for kind, (status, _reason) in HEALTHY_CONDITIONS.items()):
            return
        log.info("node %s: reporting Ready again (was %s)", node["metadata"]["name"], current.get("Ready"))
        self._patch_status(node["metadata"]["name"], {"conditions": healthy_conditions()})

    # pods -------------------------------------------------------------------------------------

    def run_pod(self, pod):
        """Start a bound pod (Running, Ready), report a running one Ready again (the node lifecycle controller marks
        the pods of a silent node NotReady), or finish deleting a terminating one. Nothing happens on a node that
        is down: returns the seconds after which to look again then, else None."""
        metadata, spec = pod["metadata"], pod["spec"]
        if not spec.get("nodeName"):
            return None
        until = _down_until(self.cluster.node(spec["nodeName"]))
        if until:
            return max(until - time.time(), REBOOT_POLL_SECONDS)
        if metadata.get("deletionTimestamp"):
            try:
                # With a body the API server ignores query parameters: the grace period goes in the body.
                discard(
                    self.kube.core.delete_namespaced_pod,
                    metadata["name"],
                    metadata["namespace"],
                    body={"gracePeriodSeconds": 0, "preconditions": {"uid": metadata["uid"]}},
                )
            except ApiException as exc:
                if exc.status not in (404, 409):
                    raise
            return None
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running":
            self._keep_pod_ready(pod)
            return None
        if phase in ("Succeeded", "Failed"):
            return None
        now = now_rfc3339()
        node = self.cluster.node(spec["nodeName"])
        host_ip = next(
            (
                address["address"]
                for address in ((node or {}).get("status") or {}).get("addresses") or []
                if address["type"] == "InternalIP"
            ),
            "127.0.0.1",
        )
        conditions = [
            {"type": kind, "status": "True", "lastTransitionTime": now}
            for kind in ("Initialized", "ContainersReady", "Ready", "PodScheduled")
        ]
        containers = [
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": "sim://" + container["image"],
                "containerID": "sim://%s-%s" % (metadata["uid"][:8], container["name"]),
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": now}},
            }
            for container in spec["containers"]
        ]
        ip = pod_ip(pod)
        merge_patch(
            self.kube.core.patch_namespaced_pod_status,
            metadata["name"],
            metadata["namespace"],
            body={
                "metadata": {"resourceVersion": metadata["resourceVersion"]},
                "status": {
                    "phase": "Running",
                    "conditions": conditions,
                    "hostIP": host_ip,
                    "podIP": ip,
                    "podIPs": [{"ip": ip}],
                    "startTime": now,
                    "containerStatuses": containers,
                },
            },
        )
        return None

    def _keep_pod_ready(self, pod):
        """Report a running pod's containers ready again if something marked it otherwise."""
        status = pod["status"]
        if all(c.get("status") == "True" for c in status.get("conditions") or [] if c["type"] in POD_READY_CONDITIONS):
            return
        log.info("pod %s/%s: reporting Ready again", pod["metadata"]["namespace"], pod["metadata"]["name"])
        now = now_rfc3339()
        discard(
            self.kube.core.patch_namespaced_pod_status,
            pod["metadata"]["name"],
            pod["metadata"]["namespace"],
            {
                "metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]},
                "status": {
                    "conditions": [
                        {"type": kind, "status": "True", "lastTransitionTime": now} for kind in POD_READY_CONDITIONS
                    ],
                    "containerStatuses": [
                        {"name": c["name"], "ready": True} for c in status.get("containerStatuses") or []
                    ],
                },
            },
            _content_type=STRATEGIC_MERGE_PATCH,
        )
