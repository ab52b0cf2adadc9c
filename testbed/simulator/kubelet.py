"""The kubelet stand-in: no real kubelet runs, so the simulator keeps nodes Ready and runs their pods.

- Node heartbeats: each node's Lease in ``kube-node-lease`` is renewed every ``LEASE_RENEW_SECONDS``,
  nodes spread over that period by a hash of their name so a 1,000-node fleet renews ~50 a second;
  a node whose conditions the node lifecycle controller turned Unknown (after a gap) is set Ready again.
- Pods bound to a node become Running and Ready; pods being deleted gracefully are deleted with
  grace 0, as a kubelet does once their containers stopped.
"""

import hashlib
import ipaddress
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kubernetes.client.exceptions import ApiException

from testbed.simulator.kube import merge_patch, now_micro, now_rfc3339

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
                self.kube.coordination.create_namespaced_lease(
                    LEASE_NAMESPACE, self._lease(name), _preload_content=False
                )
        except Exception:  # noqa: BLE001 - one failed renewal must not stop the heartbeats
            log.exception("renewing the lease of node %s failed", name)

    def _lease(self, name):
        node = self.cluster.node(name)
        owner = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}] if node else []
        return {
            "metadata": {"name": name, "namespace": LEASE_NAMESPACE, "ownerReferences": owner},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "renewTime": now_micro()},
        }

    def keep_ready(self, node):
        """Report the node healthy again if its conditions say otherwise (e.g. Unknown after a gap)."""
        current = {
            condition["type"]: condition["status"] for condition in (node.get("status") or {}).get("conditions") or []
        }
        if all(current.get(kind) == status for kind, (status, _reason) in HEALTHY_CONDITIONS.items()):
            return
        log.info("node %s: reporting Ready again (was %s)", node["metadata"]["name"], current.get("Ready"))
        self.kube.core.patch_node_status(
            node["metadata"]["name"],
            {"status": {"conditions": healthy_conditions()}},
            _content_type=STRATEGIC_MERGE_PATCH,
            _preload_content=False,
        )

    # pods -------------------------------------------------------------------------------------

    def run_pod(self, pod):
        """Start a bound pod (Running, Ready) or finish deleting a terminating one."""
        metadata, spec = pod["metadata"], pod["spec"]
        if not spec.get("nodeName"):
            return
        if metadata.get("deletionTimestamp"):
            try:
                # With a body the API server ignores query parameters: the grace period goes in the body.
                self.kube.core.delete_namespaced_pod(
                    metadata["name"],
                    metadata["namespace"],
                    _preload_content=False,
                    body={"gracePeriodSeconds": 0, "preconditions": {"uid": metadata["uid"]}},
                )
            except ApiException as exc:
                if exc.status not in (404, 409):
                    raise
            return
        if (pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed"):
            return
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
