#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_quota
short_description: Cap the GPUs, shared slices or MIG devices a namespace can take
version_added: 0.1.0
description:
  - Creates or updates a ResourceQuota in a namespace with C(requests.<resource>) limits for NVIDIA
    resources, for example C(nvidia.com/gpu), C(nvidia.com/gpu.shared) or C(nvidia.com/mig-1g.10gb).
    Kubernetes caps extended resources only through their requests, which for them equal the limits.
  - Only the limits given are written; any other limit of the same ResourceQuota stays as it is.
  - With O(state=absent), removes those limits, and deletes the ResourceQuota when this module created it
    and nothing else is left in it.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.attributes
options:
  quota_namespace:
    description: The namespace to cap; it must exist.
    type: str
    required: true
  name:
    description: Name of the ResourceQuota.
    type: str
    default: gpu-quota
  limits:
    description:
      - Resource name (with or without the C(requests.) prefix) to the number of devices or slices the
        namespace's pods may request in total. With O(state=absent) only the names matter.
    type: dict
    required: true
  state:
    description: C(present) sets the limits, C(absent) removes them.
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: The ml namespace may hold 2 GPUs and 8 time-sliced slices
  gpushare.k8s.gpu_quota:
    quota_namespace: ml
    limits:
      nvidia.com/gpu: 2
      nvidia.com/gpu.shared: 8

- name: And 4 MIG 1g.10gb devices
  gpushare.k8s.gpu_quota:
    quota_namespace: ml
    limits:
      nvidia.com/mig-1g.10gb: 4
"""

RETURN = r"""
namespace:
  description: The namespace.
  returned: always
  type: str
  sample: ml
name:
  description: The ResourceQuota's name.
  returned: always
  type: str
  sample: gpu-quota
hard:
  description: The limits given, as set in C(spec.hard) (null for a removed one).
  returned: always
  type: dict
  sample: {"requests.nvidia.com/gpu": "2", "requests.nvidia.com/gpu.shared": "8"}
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import QUOTA_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.run.quota import run_gpu_quota


def main():
    GpuShareModule(QUOTA_ARG_SPEC).run(run_gpu_quota)


if __name__ == "__main__":
    main()
