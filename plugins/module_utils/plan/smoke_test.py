# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_smoke_test's workload and report: pure functions over API dicts.

The workload is the one NVIDIA's guides run (a pod, or a Deployment of replicas, each asking one slice):
the GPU resource's requests equal its limits (Kubernetes refuses anything else for extended resources;
reference section 5, Quota), it tolerates the ``nvidia.com/gpu`` taint GPU nodes carry, and it may be
pinned with a node selector or to nodes by name (one ``matchFields`` term per node: the API server takes a
single value for ``metadata.name`` in a term, and terms are ORed). A pod "got a slice" once it is bound to a
node and running (or finished); one the scheduler marked Unschedulable stayed Pending, and its reason is the
scheduler's message."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import OPERATOR_DEFAULT_TOLERATIONS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import RESOURCE_PREFIX

SMOKE_TEST_LABEL = "gpushare.k8s/smoke-test"
KINDS = ("pod", "deployment")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
GOT_A_SLICE = ("Running", "Succeeded")


def pod_names(name, replicas):
    """The bare pods' names (``kind: pod``): ``<name>-<index>``."""
    return ["%s-%d" % (name, index) for index in range(replicas)]


def validate(params):
    problems = []
    if not _DNS_LABEL.match(params["name"] or "") or len(params["name"]) > 50:
        problems.append("name must be a DNS label of at most 50 characters (lower case, digits, dashes)")
    if params["replicas"] < 1:
        problems.append("replicas must be at least 1")
    if params["amount"] < 1:
        problems.append("amount must be at least 1")
    if not (params["resource"] or "").startswith(RESOURCE_PREFIX):
        problems.append("resource must be an NVIDIA resource (nvidia.com/...), not %s" % params["resource"])
    if problems:
        raise GpuShareError("Invalid smoke test: %s. Nothing was created." % "; ".join(problems))


def pinned_to(node_names):
    """The node affinity that admits exactly ``node_names``."""
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]} for name in node_names]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def pod_spec(params, restart_policy, node_names=None):
    amount = str(params["amount"])
    container = {
        "name": "cuda",
        "image": params["image"],
        "resources": {"requests": {params["resource"]: amount}, "limits": {params["resource"]: amount}},
    }
    if params["command"]:
        container["command"] = list(params["command"])
    spec = {
        "restartPolicy": restart_policy,
        "terminationGracePeriodSeconds": 0,
        "tolerations": [dict(t) for t in OPERATOR_DEFAULT_TOLERATIONS] + list(params["tolerations"] or []),
        "containers": [container],
    }
    if params["node_selector"]:
        spec["nodeSelector"] = dict(params["node_selector"])
    if node_names:
        spec["affinity"] = pinned_to(node_names)
    return spec


def build_workload(params, node_names=None):
    """``(kind, [bodies])``: the Deployment, or one bare pod per replica, on ``node_names`` when given."""
    validate(params)
    name, namespace = params["name"], params["workload_namespace"]
    labels = {"app": name, SMOKE_TEST_LABEL: name}
    if params["kind"] == "deployment":
        return "deployment", [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {
                    "replicas": params["replicas"],
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": pod_spec(params, "Always", node_names)},
                },
            }
        ]
    return "pod", [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": namespace, "labels": labels},
            "spec": pod_spec(params, "Never", node_names),
        }
        for pod_name in pod_names(name, params["replicas"])
    ]


def unschedulable_reason(pod):
    """The scheduler's message when it could not place the pod, else None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            if condition.get("reason") == "Unschedulable":
                return condition.get("message") or "Unschedulable"
    return None


def got_a_slice(pod):
    status = pod.get("status") or {}
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    if status.get("phase") in GOT_A_SLICE:
        return True
    # A Deployment's vectorAdd exits and restarts: it ran on the GPU all the same.
    return any((c.get("restartCount") or 0) > 0 for c in status.get("containerStatuses") or [])


def settled(pod):
    """None once the pod got a slice or the scheduler gave up on it; else what it still shows."""
    if got_a_slice(pod) or unschedulable_reason(pod):
        return None
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase == "Failed":
        return None
    where = "on %s" % pod["spec"]["nodeName"] if (pod.get("spec") or {}).get("nodeName") else "not scheduled yet"
    return "%s, %s" % (phase, where)


def report(pods, replicas):
    """How many replicas got a slice, how many stayed Pending and why (the scheduler's reasons, counted)."""
    entries, reasons = [], {}
    running = pending = failed = 0
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        reason = unschedulable_reason(pod)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if got_a_slice(pod):
            running += 1
            outcome = "got a slice"
        elif reason:
            pending += 1
            reasons[reason] = reasons.get(reason, 0) + 1
            outcome = "pending"
        else:
            failed += phase == "Failed"
            outcome = phase.lower()
        entries.append(
            dict(
                name=pod["metadata"]["name"],
                node=(pod.get("spec") or {}).get("nodeName"),
                phase=phase,
                outcome=outcome,
                reason=reason,
            )
        )
    return dict(
        replicas=replicas,
        running=running,
        pending=pending,
        failed_replicas=failed,
        pending_reasons=reasons,
        pods=entries,
    )
