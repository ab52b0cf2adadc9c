# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quota check: namespaces whose GPU pods request resources no ResourceQuota limits."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    RESOURCE_PREFIX,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import (
    gpu_requests,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight.common import (
    WARNING,
    finding,
)


def check_quotas(pods, quotas):
    """Namespaces whose GPU pods request resources no ResourceQuota of the namespace limits."""
    used = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for resource in gpu_requests(pod):
            if resource.startswith(RESOURCE_PREFIX):
                used.setdefault(pod["metadata"]["namespace"], set()).add(resource)
    limited = {}
    for quota in quotas:
        for key in (quota.get("spec") or {}).get("hard") or {}:
            limited.setdefault(quota["metadata"]["namespace"], set()).add(
                key[len("requests.") :] if key.startswith("requests.") else key
            )
    findings = []
    for namespace in sorted(used):
        missing = sorted(used[namespace] - limited.get(namespace, set()))
        if missing:
            findings.append(
                finding(
                    WARNING,
                    "quota",
                    "Namespace/%s" % namespace,
                    "GPU pods here request %s with no ResourceQuota limiting it: the namespace can take every "
                    "GPU or slice of the cluster" % ", ".join(missing),
                    "create a ResourceQuota in %s with spec.hard {%s}"
                    % (namespace, ", ".join('"requests.%s": <n>' % resource for resource in missing)),
                    "gpushare.k8s.gpu_quota (quota_namespace: %s), or kubectl create quota" % namespace,
                )
            )
    return findings
