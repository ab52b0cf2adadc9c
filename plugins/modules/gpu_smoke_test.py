#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_smoke_test
short_description: Prove GPU sharing works with a real workload, and see how many replicas got a slice
version_added: 0.1.0
description:
  - Runs the workload NVIDIA's guides run (a Deployment of O(replicas), or that many bare pods), each
    container requesting and limited to O(amount) of O(resource), tolerating the C(nvidia.com/gpu) taint,
    optionally pinned to O(nodes) (by name, each a C(metadata.name) node affinity term) or to O(node_selector).
  - Waits, with a watch, until every replica either got a slice (bound to a node and running, or finished)
    or was found unschedulable by the scheduler, then reports how many got a slice and how many stayed
    Pending, with the scheduler's reasons (for example 11 replicas on 8 slices, 8 running and 3 pending
    with C(Insufficient nvidia.com/gpu)).
  - Deletes the workload afterwards unless O(cleanup=false), and waits until its pods are gone.
  - Refuses to start when a workload of that name already exists, so it never touches a user's objects.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.nodes
attributes:
  check_mode:
    support: full
    description: Validates the options and returns the workload it would create; creates nothing.
  diff_mode:
    support: none
    description: The workload is created and removed; there is no lasting change to compare.
options:
  name:
    description: Name of the Deployment, or prefix of the pods (C(<name>-0), C(<name>-1)...).
    type: str
    default: gpushare-smoke-test
  workload_namespace:
    description: Namespace to run the workload in; it must exist.
    type: str
    default: default
  kind:
    description: A Deployment (as the time-slicing guides run it) or bare pods.
    type: str
    choices: [deployment, pod]
    default: deployment
  replicas:
    description: How many replicas (pods) to run.
    type: int
    default: 1
  resource:
    description:
      - The resource each container asks, for example C(nvidia.com/gpu), C(nvidia.com/gpu.shared) or
        C(nvidia.com/mig-1g.10gb). Requests equal limits.
    type: str
    default: nvidia.com/gpu
  amount:
    description: How many of O(resource) each container asks.
    type: int
    default: 1
  image:
    description: The container image; NVIDIA's CUDA vectorAdd sample by default.
    type: str
    default: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04
  command:
    description:
      - The container's command (the image's own when omitted), for example C(sh), C(-c), C(nvidia-smi -L).
    type: list
    elements: str
  node_selector:
    description:
      - Node labels the pods must run on, for example C(cluster-api/accelerator) C(tesla-t4).
    type: dict
  tolerations:
    description: Tolerations the pods get besides C(nvidia.com/gpu) Exists NoSchedule, as in a pod spec.
    type: list
    elements: dict
  cleanup:
    description: Delete the workload once the report is made (also when the wait fails).
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the replicas to settle, and for their deletion.
    type: int
    default: 300
notes:
  - The module reports C(changed=false) when it cleaned up, since the cluster is left as it was, and
    C(changed=true) with O(cleanup=false).
  - A replica the scheduler cannot place stays Pending for good only as long as no slice frees up; the
    report is what the cluster showed once every replica had settled.
"""

EXAMPLES = r"""
- name: Eleven replicas on the time-sliced T4 pool (2 nodes x 1 GPU x 4 replicas = 8 slices)
  gpushare.k8s.gpu_smoke_test:
    replicas: 11
    node_selector:
      cluster-api/accelerator: tesla-t4
  register: smoke

- name: Expect 8 running and 3 pending
  ansible.builtin.assert:
    that:
      - smoke.running == 8
      - smoke.pending == 3

- name: Four replicas on the nodes of an OpenShift MachineSet (found through its Machines)
  gpushare.k8s.gpu_smoke_test:
    replicas: 4
    nodes:
      names: "{{ machines.resources | map(attribute='status.nodeRef.name') | list }}"

- name: One MIG slice, as bare pods, with a command that prints the device
  gpushare.k8s.gpu_smoke_test:
    kind: pod
    resource: nvidia.com/mig-1g.10gb
    command: [sh, -c, "nvidia-smi -L; /cuda-samples/vectorAdd"]
"""

RETURN = r"""
kind:
  description: C(deployment) or C(pod).
  returned: always
  type: str
namespace:
  description: Namespace the workload ran in.
  returned: always
  type: str
name:
  description: Name of the workload.
  returned: always
  type: str
workload:
  description: The Deployment, or the first pod, as created (or as it would be in check mode).
  returned: always
  type: dict
replicas:
  description: Replicas asked.
  returned: always
  type: int
  sample: 11
running:
  description: Replicas that got a slice (bound to a node and running or finished).
  returned: always
  type: int
  sample: 8
pending:
  description: Replicas the scheduler could not place.
  returned: always
  type: int
  sample: 3
failed_replicas:
  description: Replicas that failed (named so because a C(failed) key would fail the task).
  returned: always
  type: int
  sample: 0
pending_reasons:
  description: The scheduler's messages for the pending replicas, with how many replicas got each.
  returned: always
  type: dict
  sample: {"0/8 nodes are available: 2 Insufficient nvidia.com/gpu, 6 node(s) didn't match node selector.": 3}
pods:
  description: Per replica, its node, phase, outcome (C(got a slice), C(pending), ...) and the scheduler's reason.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "gpushare-smoke-test-7d9f-abcde", "node": "gpu-t4-0", "phase": "Running",
            "outcome": "got a slice", "reason": null}]
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import SMOKE_TEST_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.run.smoke_test import run_gpu_smoke_test


def main():
    GpuShareModule(SMOKE_TEST_ARG_SPEC).run(run_gpu_smoke_test)


if __name__ == "__main__":
    main()
