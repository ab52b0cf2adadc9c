# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenShift's machine API and autoscaler objects as the read-only runners take them (gpu_preflight's autoscaling
check, gpu_sharing_plan's capacity): one LIST of each kind, in every namespace."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    CLUSTER_AUTOSCALER,
    MACHINE,
    MACHINE_AUTOSCALER,
    MACHINESET,
)


def read_openshift_autoscaling(kube):
    """OpenShift's MachineSets, Machines, ClusterAutoscalers and MachineAutoscalers (empty lists where their CRDs are
    not installed), by the names gpu_preflight's checks take them."""
    return dict(
        (key, kube.list_custom_objects(*kind))
        for key, kind in (
            ("machinesets", MACHINESET),
            ("machines", MACHINE),
            ("cluster_autoscalers", CLUSTER_AUTOSCALER),
            ("machine_autoscalers", MACHINE_AUTOSCALER),
        )
    )
