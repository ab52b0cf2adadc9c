# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # GPU-pod safety: what the modules that can drain nodes return about it, written into their RETURN by
    # tools/gen_docs.py (an extended RETURN fragment breaks ansible-doc before 2.20, ansible/ansible#85644).
    # Each module documents its own drain option, since what it changes on the nodes differs.
    RETURN = r"""
evicted:
  description: Per node, the GPU pods evicted by I(drain) (in check mode, those that would be).
  returned: always
  type: dict
  sample: {"gpu-a100-0": ["team-a/trainer-0"]}
cordoned:
  description: Nodes cordoned for the change (and uncordoned after it succeeded).
  returned: always
  type: list
  elements: str
"""
