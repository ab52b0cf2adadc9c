# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Platforms recognised from what they put on nodes and the objects they add, and the names they use for
GPU pools and their autoscalers (NVIDIA GPU sharing reference, section 5)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

ZONE_LABEL = "topology.kubernetes.io/zone"

# OpenShift: MachineSets (machine.openshift.io/v1beta1) carry node labels in
# spec.template.spec.metadata.labels; the single ClusterAutoscaler `default` lists
# spec.resourceLimits.gpus[{type,min,max}] whose type equals the MachineSets' accelerator label value.
OPENSHIFT = "OpenShift"
OPENSHIFT_POLICY_NAME = "gpu-cluster-policy"
MACHINE_API_NAMESPACE = "openshift-machine-api"
ACCELERATOR_LABEL = "cluster-api/accelerator"
MACHINESET_GPU_ANNOTATION = "machine.openshift.io/GPU"
# A MachineSet's nodes are found through its Machines: the Machines carry the MachineSet's name in this label (the
# MachineSet's selector), and a Machine's node is its status.nodeRef.name. Nodes carry neither the label nor the
# MachineSet's name, only the annotation machine.openshift.io/machine: <namespace>/<machine> (reference section 5;
# openshift/machine-api-operator, pkg/controller/nodelink).
MACHINESET_MACHINE_LABEL = "machine.openshift.io/cluster-api-machineset"
CLUSTER_AUTOSCALER_NAME = "default"
# (group, version, plural) of OpenShift's objects; listing them elsewhere finds nothing (no CRD).
MACHINESET = ("machine.openshift.io", "v1beta1", "machinesets")
MACHINE = ("machine.openshift.io", "v1beta1", "machines")
CLUSTER_AUTOSCALER = ("autoscaling.openshift.io", "v1", "clusterautoscalers")
MACHINE_AUTOSCALER = ("autoscaling.openshift.io", "v1beta1", "machineautoscalers")
OPENSHIFT_KINDS = {
    "Machine": MACHINE,
    "MachineSet": MACHINESET,
    "ClusterAutoscaler": CLUSTER_AUTOSCALER,
    "MachineAutoscaler": MACHINE_AUTOSCALER,
}
# GPU nodes take 10-15 minutes to install the driver and advertise GPUs.
MIN_DELAY_AFTER_ADD_SECONDS = 600
RECOMMENDED_DELAY_AFTER_ADD = "15m"
# Scaleway Kapsule (k8s.scw.cloud/gpu replaced k8s.scaleway.com/gpu in September 2025).
SCALEWAY = "Scaleway Kapsule"
SCALEWAY_GPU_LABEL = "k8s.scw.cloud/gpu"
SCALEWAY_OLD_GPU_LABEL = "k8s.scaleway.com/gpu"
SCALEWAY_POOL_LABEL = "k8s.scaleway.com/pool-name"
SCALEWAY_LABEL_PREFIXES = ("k8s.scaleway.com/", "k8s.scw.cloud/")
# VNG Cloud VKS: nodes carry vks.vngcloud.vn/* labels and sit in VNG's zones (HCM03-1A, HAN01-1A...); its
# public autoscaler fork reads vks.vngcloud.vn/accelerator (not confirmed in production). VKS offers no MIG.
VKS = "VNG Cloud VKS"
VKS_ACCELERATOR_LABEL = "vks.vngcloud.vn/accelerator"
_VKS_ZONE_RE = re.compile(r"^(HCM|HAN)[0-9]{2}-[0-9][A-Z]$")
_VKS_LABEL_PREFIX = "vks.vngcloud.vn/"

AUTOSCALER_GPU_LABELS = (ACCELERATOR_LABEL, SCALEWAY_GPU_LABEL, SCALEWAY_OLD_GPU_LABEL, VKS_ACCELERATOR_LABEL)
# The node label each platform's cluster autoscaler reads for a pool's GPU type.
AUTOSCALER_GPU_LABEL = {OPENSHIFT: ACCELERATOR_LABEL, SCALEWAY: SCALEWAY_GPU_LABEL, VKS: VKS_ACCELERATOR_LABEL}


def _labels(node):
    return (node.get("metadata") or {}).get("labels") or {}


def machineset_node_names(machines):
    """{(namespace, MachineSet name): [node names]} from the Machines' label and ``status.nodeRef``; a Machine still
    provisioning (no nodeRef yet) or being deleted brings no node."""
    nodes = {}
    for machine in machines:
        meta = machine.get("metadata") or {}
        machineset = (meta.get("labels") or {}).get(MACHINESET_MACHINE_LABEL)
        node = (((machine.get("status") or {}).get("nodeRef")) or {}).get("name")
        if machineset and node and not meta.get("deletionTimestamp"):
            nodes.setdefault((meta.get("namespace"), machineset), []).append(node)
    return dict((key, sorted(names)) for key, names in nodes.items())


def platform_without_mig(nodes):
    """The name of the platform the nodes belong to when it offers no MIG, else None."""
    for node in nodes:
        labels = _labels(node)
        if any(key.startswith(_VKS_LABEL_PREFIX) for key in labels) or _VKS_ZONE_RE.match(labels.get(ZONE_LABEL) or ""):
            return VKS
    return None


def detect_platform(nodes, machinesets, policy=None):
    """OpenShift (MachineSets, or the OLM policy name), Scaleway, VKS, or None."""
    if machinesets or (policy is not None and (policy.get("metadata") or {}).get("name") == OPENSHIFT_POLICY_NAME):
        return OPENSHIFT
    for node in nodes:
        if any(key.startswith(SCALEWAY_LABEL_PREFIXES) for key in _labels(node)):
            return SCALEWAY
    return platform_without_mig(nodes)


def parse_duration(text):
    """Seconds of a Go duration (``15m``, ``1h30m``, ``600s``, ``10m0s``), None when unreadable."""
    if text is None:
        return None
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text).strip():
        return None
    unit = dict(h=3600, m=60, s=1, ms=0.001)
    return sum(float(number) * unit[suffix] for number, suffix in parts)
