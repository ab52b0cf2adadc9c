# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's operands and Node Feature Discovery's worker: their DaemonSets, the node labels that
gate them, and how to recognise who owns NFD's worker.

Sources: NVIDIA GPU sharing reference, section 3 (operand DaemonSets, ``spec.daemonsets.tolerations``
replacing the built-in ``nvidia.com/gpu`` toleration) and section 5 (Taints: NFD's worker needs the same
tolerations, Helm value ``node-feature-discovery.worker.tolerations``; OpenShift's NFD operator tolerates
every NoSchedule taint but not NoExecute); the operator's ``nvidia.com/gpu.deploy.<component>`` labels
(reference section 2)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    DEVICE_PLUGIN_DAEMONSET,
    MPS_CONTROL_DAEMONSET,
)

# NFD labels a node with an NVIDIA PCI device (vendor 0x10de) so; the operator only acts on such nodes.
LABEL_NFD_NVIDIA_PCI = "feature.node.kubernetes.io/pci-10de.present"


class Operand(object):
    """One operand: its DaemonSet, the ``nvidia.com/gpu.deploy.<component>`` label gating it (None when
    another label gates it), the ClusterPolicy section whose ``enabled`` switches it, and where it runs
    (``every`` GPU node, ``mig`` capable ones, ``mps`` ones)."""

    def __init__(self, name, daemonset, component, policy_section, where="every"):
        self.name = name
        self.daemonset = daemonset
        self.component = component
        self.policy_section = policy_section
        self.where = where


OPERANDS = (
    Operand("GPU Feature Discovery", "gpu-feature-discovery", "gpu-feature-discovery", "gfd"),
    Operand("device plugin", DEVICE_PLUGIN_DAEMONSET, "device-plugin", "devicePlugin"),
    Operand("DCGM exporter", "nvidia-dcgm-exporter", "dcgm-exporter", "dcgmExporter"),
    Operand("MIG manager", "nvidia-mig-manager", "mig-manager", "migManager", where="mig"),
    # Gated by nvidia.com/mps.capable=true (reference section 2), not by a deploy label.
    Operand("MPS control daemon", MPS_CONTROL_DAEMONSET, None, "devicePlugin", where="mps"),
    Operand("operator validator", "nvidia-operator-validator", "operator-validator", "validator"),
)

# The value that switches an operand off on one node (the operator's own labels say "true").
DEPLOY_OFF = "false"

# Node Feature Discovery's worker: the Helm chart (gpu-operator's dependency) names it
# <release>-node-feature-discovery-worker; OpenShift's NFD operator names it nfd-worker.
NFD_WORKER_SUFFIX = "node-feature-discovery-worker"
NFD_WORKER_OPENSHIFT = "nfd-worker"
HELM_MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")
HELM_RELEASE_ANNOTATION = "meta.helm.sh/release-name"
NFD_HELM_TOLERATIONS_VALUE = "node-feature-discovery.worker.tolerations"


def is_nfd_worker(daemonset):
    name = daemonset["metadata"]["name"]
    return name == NFD_WORKER_OPENSHIFT or name.endswith(NFD_WORKER_SUFFIX)


def helm_release_of(obj):
    """The Helm release that owns ``obj`` (its managed-by label and release annotation), else None."""
    metadata = obj.get("metadata") or {}
    if (metadata.get("labels") or {}).get(HELM_MANAGED_BY[0]) != HELM_MANAGED_BY[1]:
        return None
    return (metadata.get("annotations") or {}).get(HELM_RELEASE_ANNOTATION)


def pod_tolerations(daemonset):
    return list(((daemonset.get("spec") or {}).get("template") or {}).get("spec", {}).get("tolerations") or [])
