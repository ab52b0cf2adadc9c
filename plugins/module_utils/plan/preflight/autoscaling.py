# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The autoscaling check per platform, and autoscaled nodes that share their GPUs (the autoscaler counts their replicas
against its GPU limit but sizes a scale-up from zero on physical GPUs, and takes a node advertising only shared or MIG
resources for not ready)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_RESOURCE_PREFIX,
    RESOURCE_GPU,
    SHARED_RESOURCE_SUFFIX,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    NodeGpuState,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    AUTOSCALER_GPU_LABELS,
    OPENSHIFT,
    SCALEWAY,
    SCALEWAY_GPU_LABEL,
    VKS,
    VKS_ACCELERATOR_LABEL,
    machineset_node_names,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    WARNING,
    finding,
    is_gpu_node,
    labels_of,
    name_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.node_autoscalers import (
    check_scaleway,
    check_vks,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.openshift import (
    check_openshift,
)


def check_shared_autoscaled(nodes, autoscaled_nodes=(), gpu_labels=AUTOSCALER_GPU_LABELS):
    """Warnings for autoscaled GPU nodes whose sharing misleads the autoscaler (any platform): nodes carrying one
    of ``gpu_labels`` or named in ``autoscaled_nodes`` (the nodes of autoscaled MachineSets, which carry no
    autoscaler label of their own)."""
    findings = []
    for node in nodes:
        labels = labels_of(node)
        autoscaled = any(label in labels for label in gpu_labels) or name_of(node) in autoscaled_nodes
        if not autoscaled or not is_gpu_node(node):
            continue
        state = NodeGpuState.from_node(node)
        only_other = state.allocatable.get(RESOURCE_GPU, 0) == 0 and any(
            (name.endswith(SHARED_RESOURCE_SUFFIX) or name.startswith(MIG_RESOURCE_PREFIX)) and value > 0
            for name, value in state.allocatable.items()
        )
        if only_other:
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "Node/%s" % state.name,
                    "autoscaled GPU node advertising no %s, only %s: the cluster autoscaler treats a node its GPU "
                    "label says has GPUs but which shows none as not ready yet, forever (kubernetes/autoscaler #8095)"
                    % (RESOURCE_GPU, ", ".join(sorted(n for n, v in state.allocatable.items() if v > 0))),
                    "keep %s advertised on autoscaled pools: time-slicing/MPS without renameByDefault, MIG with the "
                    "single strategy" % RESOURCE_GPU,
                    "gpushare.k8s.gpu_timeslicing / gpu_mps (rename_by_default: false), gpushare.k8s.gpu_mig_config "
                    "(strategy: single)",
                )
            )
        counted = state.allocatable.get(RESOURCE_GPU, 0)
        if state.replicas > 1 and counted > 0:
            # cluster-autoscaler's GetNodeGpuTarget counts allocatable nvidia.com/gpu; from zero, the template's
            # physical GPUs (docs/PLATFORM_FACTS.md, "GPU resource limits count the label's type and nvidia.com/gpu").
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "Node/%s" % state.name,
                    "autoscaled GPU node shares each GPU %d ways (%s): the autoscaler counts its %d allocatable %s "
                    "against the GPU limit of its type, not its %d physical GPU(s); and scaling its pool from zero, "
                    "it takes a new node for the physical GPUs only, so it adds more nodes than the pods need "
                    "(AKS #3427)" % (state.replicas, state.sharing_strategy, counted, RESOURCE_GPU, state.count),
                    "express the type's GPU limit in allocatable %s (%d for each node like this one), or keep "
                    "sharing off autoscaled pools" % (RESOURCE_GPU, counted),
                    "gpushare.k8s.gpu_autoscaling (its default limit counts the replicas), or gpushare.k8s.gpu_reset "
                    "on the pool",
                )
            )
    return findings


def check_autoscaling(
    platform, nodes, machinesets, cluster_autoscalers, machine_autoscalers, machines=(), gpu_label=None
):
    """``gpu_label``: the node label the autoscaler reads for a GPU pool's type on platforms without MachineSets,
    in place of the platform's own (ignored on OpenShift, whose MachineSets carry cluster-api/accelerator)."""
    findings = []
    autoscaled = set()
    if platform == OPENSHIFT:
        findings += check_openshift(machinesets, cluster_autoscalers, machine_autoscalers, machines, nodes)
        targets = set(
            (ma["metadata"].get("namespace"), ((ma.get("spec") or {}).get("scaleTargetRef") or {}).get("name"))
            for ma in machine_autoscalers
        )
        autoscaled = set(
            name for key, names in machineset_node_names(machines).items() if key in targets for name in names
        )
    elif platform == SCALEWAY:
        findings += check_scaleway(nodes, gpu_label or SCALEWAY_GPU_LABEL)
    elif platform == VKS:
        findings += check_vks(nodes, gpu_label or VKS_ACCELERATOR_LABEL)
    gpu_labels = AUTOSCALER_GPU_LABELS + ((gpu_label,) if gpu_label and platform != OPENSHIFT else ())
    return findings + check_shared_autoscaled(nodes, autoscaled, gpu_labels)
