# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Where the GPU Operator is: every module finds it the same way unless told.
    DOCUMENTATION = r"""
options:
  cluster_policy:
    description:
      - Name of the GPU Operator's ClusterPolicy. Default is C(cluster-policy) (Helm installs) or
        C(gpu-cluster-policy) (OpenShift), or the only one in the cluster.
    type: str
  namespace:
    description:
      - Namespace of the GPU Operator's operands, where its ConfigMaps live. Default is found from
        the ClusterPolicy and the platforms' usual namespaces (C(gpu-operator),
        C(nvidia-gpu-operator), C(kube-system)).
    type: str
"""

    # What every module that found the operator returns about it: tools/gen_docs.py writes it into their RETURN (an
    # extended RETURN fragment breaks ansible-doc before 2.20, ansible/ansible#85644).
    RETURN = r"""
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
"""
