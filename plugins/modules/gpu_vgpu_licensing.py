#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_vgpu_licensing
short_description: License NVIDIA vGPU guest drivers through the NVIDIA License System
version_added: 0.1.0
description:
  - Stores the NLS client configuration token (C(client_configuration_token.tok)) and C(gridd.conf) in a
    Secret of the operator's namespace, and points the ClusterPolicy's C(spec.driver.licensingConfig) at it
    with C(nlsEnabled), so the operator's vGPU guest driver leases a licence.
  - The token is a credential. It is never returned, logged or shown in a diff; the diff says only whether it
    is set and whether this task changes it. It is compared with the stored one, so an unchanged token
    reports C(changed=false).
  - O(storage=configmap) writes the deprecated ConfigMap form (C(licensingConfig.configMapName)) for old
    operator versions, with a warning. Switching one form to the other removes the other field from the policy.
  - With O(state=absent), removes C(licensingConfig) from the policy when it names this object, and deletes
    the object when this module created it.
  - The policy change is recorded for M(gpushare.k8s.gpu_reset) with
    O(gpushare.k8s.gpu_reset#module:restore=true), which puts C(licensingConfig) back; the Secret itself is
    removed only by O(state=absent).
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.attributes
options:
  client_configuration_token:
    description:
      - The content of the C(client_configuration_token.tok) file from the NVIDIA Licensing Portal or your
        DLS instance. Required with O(state=present). Read it with a C(lookup('file', ...)) from a vault.
    type: str
  gridd_conf:
    description:
      - The content of C(gridd.conf). It must have a C(FeatureType) line (C(1) NVIDIA vGPU, C(2) RTX Virtual
        Workstation, C(4) Virtual Compute Server).
    type: str
    default: "FeatureType=1\n"
  name:
    description: Name of the Secret (or ConfigMap).
    type: str
    default: licensing-config
  storage:
    description: Where the licence is kept; C(configmap) is deprecated by NVIDIA.
    type: str
    default: secret
    choices: [secret, configmap]
  nls_enabled:
    description: The policy's C(licensingConfig.nlsEnabled) (the NVIDIA License System, not the legacy server).
    type: bool
    default: true
  state:
    description: Whether the licence is configured.
    type: str
    default: present
    choices: [present, absent]
notes:
  - Needs C(get), C(create), C(patch) and C(delete) on Secrets (or ConfigMaps) in the operator's namespace, and
    C(patch) on the ClusterPolicy.
"""

EXAMPLES = r"""
- name: vGPU guests leasing licences from NLS
  gpushare.k8s.gpu_vgpu_licensing:
    client_configuration_token: "{{ lookup('ansible.builtin.file', 'client_configuration_token.tok') }}"

- name: Virtual Compute Server licences
  gpushare.k8s.gpu_vgpu_licensing:
    client_configuration_token: "{{ vault_nls_token }}"
    gridd_conf: "FeatureType=4\n"

- name: Licensing switched off
  gpushare.k8s.gpu_vgpu_licensing:
    state: absent
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
licensing_config:
  description: The policy's C(spec.driver.licensingConfig) after the task, or null.
  returned: always
  type: dict
  sample: {"secretName": "licensing-config", "nlsEnabled": true}
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import (
    VGPU_LICENSING_ARG_SPEC,
    VGPU_LICENSING_MODULE_KWARGS,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.vgpu_licensing import run_gpu_vgpu_licensing


def main():
    GpuShareModule(VGPU_LICENSING_ARG_SPEC, **VGPU_LICENSING_MODULE_KWARGS).run(run_gpu_vgpu_licensing)


if __name__ == "__main__":
    main()
