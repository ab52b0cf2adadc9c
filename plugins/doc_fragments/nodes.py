# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # How every module names nodes; each module says what the nodes are for (its own description).
    DOCUMENTATION = r"""
options:
  nodes:
    description:
      - The nodes to act on, by I(names), a label I(selector), or both.
    type: dict
    suboptions:
      names:
        description: Node names.
        type: list
        elements: str
      selector:
        description:
          - A label selector, as in C(kubectl get nodes -l).
          - Prefer a label that sharing does not change, such as C(nvidia.com/gpu.machine) or a pool
            label, since C(nvidia.com/gpu.product) gains C(-SHARED) once GPUs are shared and changes
            with MIG's C(single) strategy.
        type: str
"""
