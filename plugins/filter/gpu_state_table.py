# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: gpu_state_table
short_description: A per-node table of GPU sharing before and after a change
version_added: 0.1.0
description:
  - Takes the C(nodes) that M(gpushare.k8s.gpu_info) returned before a change and gives one fixed-width line
    per GPU node (and a header) with its sharing before and after (strategy, replicas, MIG state) and the
    C(nvidia.com/*) resources it advertises after, marking the nodes that changed.
options:
  _input:
    description: The C(nodes) of M(gpushare.k8s.gpu_info) before the change.
    type: dict
    required: true
  after:
    description: The C(nodes) of M(gpushare.k8s.gpu_info) after the change.
    type: dict
    required: true
author:
  - gpushare.k8s contributors (@gpushare)
"""

EXAMPLES = r"""
- name: Show what changed
  ansible.builtin.debug:
    msg: "{{ gpus_before.nodes | gpushare.k8s.gpu_state_table(gpus_after.nodes) }}"
"""

RETURN = r"""
_value:
  description: The header and one line per GPU node, C(*) in front of the nodes whose sharing changed.
  type: list
  elements: str
"""

from ansible_collections.gpushare.k8s.plugins.filter.inventory_line import allocatable_text

_LINE = "%1s %-18s %-24s %-24s %s"


def sharing_text(node):
    """How a node's GPUs are shared, in a few words: ``time-slicing x4``, ``mig all-1g.10gb x2``, ``none``; a MIG
    change not yet done shows its state (``mig all-1g.10gb (pending)``)."""
    if not node:
        return "-"
    replicas = node.get("replicas") or 1
    if node.get("mig_config") not in (None, "all-disabled"):
        state = node.get("mig_config_state")
        text = "mig %s%s" % (node["mig_config"], "" if state in (None, "success") else " (%s)" % state)
        return text + (" x%s" % replicas if replicas > 1 else "")
    strategy = node.get("sharing_strategy") or "none"
    return strategy if strategy == "none" else "%s x%s" % (strategy, replicas)


def gpu_state_table(before, after):
    lines = [_LINE % ("", "NODE", "BEFORE", "AFTER", "ALLOCATABLE AFTER")]
    for name in sorted(set(before or {}) | set(after or {})):
        old, new = (before or {}).get(name), (after or {}).get(name)
        changed = sharing_text(old) != sharing_text(new) or (old or {}).get("allocatable") != (new or {}).get(
            "allocatable"
        )
        lines.append(
            _LINE % ("*" if changed else "", name, sharing_text(old), sharing_text(new), allocatable_text(new or {}))
        )
    return lines


class FilterModule(object):
    def filters(self):
        return {"gpu_state_table": gpu_state_table}
