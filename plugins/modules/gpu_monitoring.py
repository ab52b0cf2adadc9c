#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_monitoring
short_description: Switch the DCGM exporter and its ServiceMonitor on or off
version_added: 0.1.0
description:
  - Sets the ClusterPolicy's C(spec.dcgmExporter.enabled) (the DCGM exporter DaemonSet, GPU metrics for
    Prometheus) and C(spec.dcgmExporter.serviceMonitor.enabled) (the ServiceMonitor that makes the
    Prometheus operator scrape it), and only those fields.
  - An unset field counts as the operator's default (exporter on, ServiceMonitor off), so asking for the
    default changes nothing.
  - Every change is recorded for M(gpushare.k8s.gpu_reset) with O(gpushare.k8s.gpu_reset#module:restore=true).
  - Does not wait for the operator to roll the change out.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.attributes
options:
  dcgm_exporter:
    description: Run the DCGM exporter. Left as it is when omitted.
    type: bool
  service_monitor:
    description:
      - Create the exporter's ServiceMonitor (needs the Prometheus operator's CRDs). Left as it is when omitted.
    type: bool
"""

EXAMPLES = r"""
- name: GPU metrics scraped by Prometheus
  gpushare.k8s.gpu_monitoring:
    dcgm_exporter: true
    service_monitor: true
"""

RETURN = r"""
# BEGIN RETURN FRAGMENT gpushare.k8s.operator: make docs writes it from the fragment, edit that
cluster_policy:
  description: Name of the ClusterPolicy used.
  returned: always
  type: str
  sample: gpu-cluster-policy
namespace:
  description: Namespace of the GPU Operator's operands.
  returned: always
  type: str
  sample: nvidia-gpu-operator
# END RETURN FRAGMENT gpushare.k8s.operator
monitoring:
  description: The fields asked for (dotted under C(spec)) and their value after the task.
  returned: always
  type: dict
  sample: {"dcgmExporter.enabled": true, "dcgmExporter.serviceMonitor.enabled": true}
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import MONITORING_ARG_SPEC, MONITORING_MODULE_KWARGS
from ansible_collections.gpushare.k8s.plugins.module_utils.run.monitoring import run_gpu_monitoring


def main():
    GpuShareModule(MONITORING_ARG_SPEC, **MONITORING_MODULE_KWARGS).run(run_gpu_monitoring)


if __name__ == "__main__":
    main()
