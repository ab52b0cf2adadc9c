# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # What check mode and diff mode do: the same for every module that changes the cluster (a module may
    # override a description with its own attributes entry).
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
    description: Reads, validates and plans exactly as a real run, refusing what it would refuse, and writes nothing.
  diff_mode:
    support: full
    description: Shows the fields the module owns (node labels, policy fields, ConfigMap keys) before and after.
"""

    # Modules that only read.
    READ_ONLY = r"""
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to compare.
"""
