# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The autoscaling check where the autoscaler reads a node label for a GPU pool's type: Scaleway Kapsule and VNG
Cloud VKS."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    SCALEWAY_GPU_LABEL,
    SCALEWAY_OLD_GPU_LABEL,
    SCALEWAY_POOL_LABEL,
    VKS_ACCELERATOR_LABEL,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    INFO,
    WARNING,
    finding,
    is_gpu_node,
    labels_of,
    name_of,
)


def _gpu_autoscaling_fixer(gpu_label, default_label):
    """gpu_autoscaling, with the label option when the check used another label than the platform's."""
    if gpu_label == default_label:
        return "gpushare.k8s.gpu_autoscaling"
    return "gpushare.k8s.gpu_autoscaling (autoscaler_gpu_label: %s)" % gpu_label


def check_scaleway(nodes, gpu_label=SCALEWAY_GPU_LABEL):
    findings = []
    for node in nodes:
        if not is_gpu_node(node):
            continue
        labels = labels_of(node)
        if gpu_label not in labels:
            old = gpu_label == SCALEWAY_GPU_LABEL and SCALEWAY_OLD_GPU_LABEL in labels
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "Node/%s" % name_of(node),
                    "GPU node without the %s label%s: Kapsule's autoscaler does not see its pool as a GPU pool"
                    % (
                        gpu_label,
                        " (it carries %s, the name before September 2025)" % SCALEWAY_OLD_GPU_LABEL if old else "",
                    ),
                    "label the pool's nodes %s (upgrade or recreate the pool so Kapsule sets it)" % gpu_label,
                    "the Kapsule pool's labels for new nodes; %s for the nodes there now"
                    % _gpu_autoscaling_fixer(gpu_label, SCALEWAY_GPU_LABEL),
                )
            )
        if SCALEWAY_POOL_LABEL not in labels:
            findings.append(
                finding(
                    WARNING,
                    "autoscaling",
                    "Node/%s" % name_of(node),
                    "GPU node without the %s label: it belongs to no Kapsule pool, so no autoscaler manages it"
                    % SCALEWAY_POOL_LABEL,
                    "run GPU workloads on nodes of a Kapsule pool (%s)" % SCALEWAY_POOL_LABEL,
                    "the Kapsule pool, not a gpushare.k8s setting",
                )
            )
    return findings


def check_vks(nodes, gpu_label=VKS_ACCELERATOR_LABEL):
    """Information only: VNG Cloud's public autoscaler fork reads vks.vngcloud.vn/accelerator, but no VNG Cloud
    source says VKS's own autoscaler does (docs/PLATFORM_FACTS.md); ``gpu_label`` replaces it."""
    findings = []
    for node in nodes:
        if is_gpu_node(node) and gpu_label not in labels_of(node):
            findings.append(
                finding(
                    INFO,
                    "autoscaling",
                    "Node/%s" % name_of(node),
                    "GPU node without %s, the label taken as the one VKS's autoscaler reads for GPU node groups "
                    "(VNG Cloud's public autoscaler fork reads %s; not confirmed on VKS itself)"
                    % (gpu_label, VKS_ACCELERATOR_LABEL),
                    "if the node group autoscales, label it %s=<gpu type> in the node group's labels" % gpu_label,
                    "the VKS node group's labels for new nodes; %s for the nodes there now"
                    % _gpu_autoscaling_fixer(gpu_label, VKS_ACCELERATOR_LABEL),
                )
            )
    return findings
