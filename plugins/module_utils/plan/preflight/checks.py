# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_preflight's checks: pure functions over API dicts, each returning findings.

A finding is one problem: ``severity`` (error, warning, info), ``check`` (taints, operator, sharing,
autoscaling, quota), ``object`` (Kind/name), ``message`` (what is wrong), ``fix`` (the exact change)
and ``fixed_by`` (the module, option, Helm value or field that makes it).

Platform facts (NVIDIA GPU sharing reference, section 5): OpenShift MachineSets carry node labels in
``spec.template.spec.metadata.labels`` and find their nodes through their Machines (``status.nodeRef``); the
ClusterAutoscaler ``default`` lists
``spec.resourceLimits.gpus[{type,min,max}]`` whose ``type`` equals the ``cluster-api/accelerator`` value
(a label value; never ``nvidia.com/gpu``): an entry of another type limits nothing;
``scaleDown.delayAfterAdd`` at least 10 minutes;
scaling from zero needs ``machine.openshift.io/GPU`` and zone labels. Scaleway's autoscaler label is
``k8s.scw.cloud/gpu`` (``k8s.scaleway.com/gpu`` before September 2025), its pool label
``k8s.scaleway.com/pool-name``; VKS's fork reads ``vks.vngcloud.vn/accelerator`` (unconfirmed on VKS: the
``autoscaler_gpu_label`` option replaces it; sources in docs/PLATFORM_FACTS.md). The
autoscaler counts a node's allocatable ``nvidia.com/gpu`` (time-slicing replicas included) against its GPU limit, sizes
a scale-up from zero on physical GPUs (AKS #3427), and treats a node advertising only ``nvidia.com/gpu.shared`` or
``nvidia.com/mig-*`` as not ready (kubernetes/autoscaler #8095).

One module per check family (``common`` holds what they share); ``preflight`` here runs the families asked for.
The names callers use are importable from this module (the package's ``__init__.py`` stays empty: ansible-test 2.16's
empty-init sanity test asks it of module_utils packages).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.operands import (
    is_nfd_worker,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    OPENSHIFT,
    SCALEWAY,
    VKS,
    detect_platform,
    parse_duration,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.autoscaling import (
    check_autoscaling,
    check_shared_autoscaled,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    CHECKS,
    ERROR,
    SEVERITIES,
    finding,
    should_fail,
    summarize,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.openshift import (
    check_openshift,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.operands import (
    check_operator,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.quota import (
    check_quotas,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.sharing import (
    check_sharing,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.taints import (
    check_taints,
)

# What callers take from here: the entry point, what its findings are made of, and each family's check.
__all__ = [
    "ERROR",
    "OPENSHIFT",
    "SCALEWAY",
    "SEVERITIES",
    "VKS",
    "check_autoscaling",
    "check_openshift",
    "check_operator",
    "check_quotas",
    "check_shared_autoscaled",
    "check_sharing",
    "check_taints",
    "detect_platform",
    "finding",
    "parse_duration",
    "preflight",
    "should_fail",
    "summarize",
]


def preflight(
    policy,
    namespace,
    config_map,
    nodes,
    pods,
    daemonsets=(),
    all_daemonsets=(),
    quotas=(),
    machinesets=(),
    cluster_autoscalers=(),
    machine_autoscalers=(),
    machines=(),
    checks=CHECKS,
    autoscaler_gpu_label=None,
):
    """Every finding of the ``checks`` asked for, most severe first (stable within a severity)."""
    nfd_workers = [ds for ds in all_daemonsets if is_nfd_worker(ds)]
    findings = []
    if "taints" in checks:
        findings += check_taints(policy, nodes, nfd_workers)
    if "operator" in checks:
        findings += check_operator(policy, namespace, daemonsets, nfd_workers, nodes, pods)
    if "sharing" in checks:
        # Without the operator's namespace its ConfigMap was not read: the policy-level checks would be guesses.
        findings += check_sharing(policy if namespace else None, config_map, nodes, pods)
    if "autoscaling" in checks:
        platform = detect_platform(nodes, machinesets, policy)
        findings += check_autoscaling(
            platform, nodes, machinesets, cluster_autoscalers, machine_autoscalers, machines, autoscaler_gpu_label
        )
    if "quota" in checks:
        findings += check_quotas(pods, quotas)
    order = dict((severity, index) for index, severity in enumerate(SEVERITIES))
    return sorted(findings, key=lambda f: order[f["severity"]])
