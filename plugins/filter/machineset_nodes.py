# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: machineset_nodes
short_description: The nodes of each OpenShift MachineSet, from its Machines
version_added: 0.1.0
description:
  - Takes OpenShift Machines (C(machine.openshift.io/v1beta1), for example the C(resources) of
    M(kubernetes.core.k8s_info)) and gives each MachineSet's node names, sorted.
  - A Machine belongs to the MachineSet its C(machine.openshift.io/cluster-api-machineset) label names; its node is
    its C(status.nodeRef.name). Nodes do not carry that label on OpenShift, only the annotation
    C(machine.openshift.io/machine).
  - A Machine still provisioning (no C(nodeRef) yet) or being deleted brings no node, so a MachineSet with no node
    is missing from the result.
options:
  _input:
    description: Machines of one namespace.
    type: list
    elements: dict
    required: true
author:
  - gpushare.k8s contributors (@gpushare)
"""

EXAMPLES = r"""
- name: Read the Machines of two MachineSets
  kubernetes.core.k8s_info:
    api_version: machine.openshift.io/v1beta1
    kind: Machine
    namespace: openshift-machine-api
    label_selectors:
      - machine.openshift.io/cluster-api-machineset in (gpu-a, gpu-b)
  register: machines

- name: Print each MachineSet's nodes
  ansible.builtin.debug:
    msg: "{{ machines.resources | gpushare.k8s.machineset_nodes }}"
"""

RETURN = r"""
_value:
  description: MachineSet name to the names of its nodes.
  type: dict
  sample: {"gpu-a": ["ip-10-0-1-17.ec2.internal"]}
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import machineset_node_names


def machineset_nodes(machines):
    return dict((machineset, nodes) for (_namespace, machineset), nodes in machineset_node_names(machines).items())


class FilterModule(object):
    def filters(self):
        return {"machineset_nodes": machineset_nodes}
