# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_nvidia_smi: on each GPU node, ``nvidia-smi -L`` and ``nvidia-smi mig -lgi`` run
through pods/exec in the operator's driver pod (or, where the driver is preinstalled on the host, its
container toolkit pod), parsed by nvidia/nvidia_smi.py. Reads only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.pod_exec import (
    KubeletUnreachable,
    default_container,
    exec_in_pod,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import pod_name
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import LABEL_PRESENT, NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.nvidia_smi import (
    LIST_GPU_INSTANCES_COMMAND,
    LIST_GPUS_COMMAND,
    nvidia_smi_pod,
    parse_gpu_instances,
    parse_gpu_list,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names

KUBELET_UNREACHABLE_HINT = (
    "The kubelet on that node did not answer (the API server could not connect to it: check the node's "
    "address and kubelet port, status.daemonEndpoints.kubeletEndpoint, 10250 by default, from the control plane)."
)


def _output(result):
    """What nvidia-smi printed: stdout, or stderr when it printed nothing there."""
    return result.stdout if result.stdout.strip() else result.stderr


def read_node(api_client, pod, timeout):
    """Run both listings in ``pod``: {pod, container, gpus, gpu_instances, error}; what could not be read
    is None, with ``error`` saying why."""
    container = default_container(pod)
    report = dict(
        pod=pod_name(pod),
        container=container,
        gpus=None,
        gpu_instances=None,
        error=None,
    )
    try:
        listing = exec_in_pod(api_client, pod, container, LIST_GPUS_COMMAND, timeout)
        if listing.exit_code:
            raise GpuShareError(
                "'%s' exited with status %d: %s"
                % (" ".join(LIST_GPUS_COMMAND), listing.exit_code, " ".join(_output(listing).split()))
            )
        report["gpus"] = parse_gpu_list(listing.stdout)
        # A GPU without MIG, or with MIG and no instance yet, makes this exit non-zero with a message
        # the parser reads as no instances; only output it cannot read is a failure.
        instances = exec_in_pod(api_client, pod, container, LIST_GPU_INSTANCES_COMMAND, timeout)
        report["gpu_instances"] = parse_gpu_instances(_output(instances))
    except KubeletUnreachable as exc:
        report["error"] = "%s. %s" % (exc.msg, KUBELET_UNREACHABLE_HINT)
    except GpuShareError as exc:
        report["error"] = exc.msg
    return report


def target_nodes(kube, nodes_option):
    """The node names ``nodes`` designates, else every GPU node."""
    names = resolve_node_names(kube, nodes_option)
    if names is not None:
        return names
    names = sorted(
        node["metadata"]["name"] for node in kube.list_nodes().items if NodeGpuState.from_node(node).is_gpu_node
    )
    if not names:
        raise GpuShareError(
            "No GPU node found (none labelled %s=true or advertising nvidia.com/* resources): "
            "name the nodes with the nodes option." % LABEL_PRESENT
        )
    return names


def run_gpu_nvidia_smi(module):
    """gpu_nvidia_smi: read-only; fails when a node could not be read, unless ``fail_on_error`` is false."""
    kube = module.kube
    params = module.params
    operator = find_operator(kube, params["cluster_policy"], params["namespace"])
    names = target_nodes(kube, params["nodes"])
    pods = kube.list_namespaced_pods(operator.namespace).items
    nodes = {}
    for name in names:
        try:
            pod = nvidia_smi_pod(pods, name, operator.namespace)
        except GpuShareError as exc:
            nodes[name] = dict(pod=None, container=None, gpus=None, gpu_instances=None, error=exc.msg)
            continue
        nodes[name] = read_node(kube.api_client, pod, params["exec_timeout"])
    result = dict(changed=False, cluster_policy=operator.policy_name, namespace=operator.namespace, nodes=nodes)
    failed = [(name, report["error"]) for name, report in sorted(nodes.items()) if report["error"]]
    if failed and params["fail_on_error"]:
        # Each node's error says it all; the message gives the kubelet hint with the first node it fits only.
        hint = " " + KUBELET_UNREACHABLE_HINT
        errors = []
        for name, error in failed:
            errors.append("%s: %s" % (name, error.replace(hint, "") if any(hint in seen for seen in errors) else error))
        result.update(
            failed=True,
            msg="gpu_nvidia_smi could not read %d of %d node(s): %s" % (len(failed), len(nodes), " | ".join(errors)),
        )
    return result
