# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_smoke_test: create the workload, wait (LIST + watch) until every replica got a slice
or the scheduler gave up on it, report, and clean up."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_objects
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.smoke_test import (
    SMOKE_TEST_LABEL,
    build_workload,
    pod_names,
    report,
    settled,
    validate,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names


def _selector(name):
    return "%s=%s" % (SMOKE_TEST_LABEL, name)


def _pods(kube, namespace, name):
    return lambda: kube.list_namespaced_pods(namespace, label_selector=_selector(name))


def _watch_pods(kube, namespace, name):
    return lambda resource_version, seconds: kube.watch_namespaced_pods(
        namespace, resource_version, seconds, label_selector=_selector(name)
    )


def _existing(kube, kind, namespace, name):
    if kind == "deployment":
        return ["Deployment %s/%s" % (namespace, name)] if kube.get_deployment(namespace, name) else []
    items = kube.list_namespaced_pods(namespace, label_selector=_selector(name)).items
    return ["pod %s/%s" % (namespace, pod["metadata"]["name"]) for pod in items]


def _wait_for_pods_created(kube, namespace, name, replicas, timeout):
    """The Deployment's pod names, once its ReplicaSet created every replica."""

    def created(deployment):
        status = deployment.get("status") or {}
        if status.get("observedGeneration", 0) < deployment["metadata"].get("generation", 1):
            return "its controller has not seen it yet"
        if (status.get("replicas") or 0) < replicas:
            return "%s of %d pods created" % (status.get("replicas") or 0, replicas)
        return None

    wait_for_objects(
        lambda: kube.list_deployments(namespace),
        lambda resource_version, seconds: kube.watch_deployments(namespace, resource_version, seconds),
        {name: created},
        timeout,
        "Deployment %s/%s to create its %d pods" % (namespace, name, replicas),
        "Deployment",
        policy=kube.retry_policy,
    )
    items = _pods(kube, namespace, name)()[0]
    return [pod["metadata"]["name"] for pod in items if not pod["metadata"].get("deletionTimestamp")]


def _clean_up(kube, kind, namespace, name, names, timeout):
    if kind == "deployment":
        kube.delete_deployment(namespace, name)
    for pod_name in names:
        kube.delete_pod(namespace, pod_name)
    wait_for_objects(
        _pods(kube, namespace, name),
        _watch_pods(kube, namespace, name),
        dict((pod_name, lambda pod: "still there") for pod_name in names),
        timeout,
        "the smoke test's pods to be deleted",
        "pod",
        absent_ok=True,
        policy=kube.retry_policy,
    )


def run_gpu_smoke_test(module):
    kube = module.kube
    params = module.params
    validate(params)
    kind, bodies = build_workload(params, resolve_node_names(kube, params["nodes"]))
    namespace, name, replicas = params["workload_namespace"], params["name"], params["replicas"]
    if kube.get_namespace(namespace) is None:
        raise GpuShareError("Namespace %s does not exist: create it or set workload_namespace." % namespace)
    existing = _existing(kube, kind, namespace, name)
    if existing:
        raise GpuShareError(
            "%s already exist(s): delete it, or give the smoke test another name. Nothing was created."
            % ", ".join(existing)
        )
    result = dict(changed=not params["cleanup"], kind=kind, namespace=namespace, name=name, workload=bodies[0])
    if module.check_mode:
        result.update(report([], replicas))
        return result
    names = []
    try:
        for body in bodies:
            if kind == "deployment":
                kube.create_deployment(namespace, name, body)
            else:
                kube.create_pod(namespace, body["metadata"]["name"], body)
                names.append(body["metadata"]["name"])
        if kind == "deployment":
            names = _wait_for_pods_created(kube, namespace, name, replicas, params["wait_timeout"])
        else:
            names = pod_names(name, replicas)
        final = wait_for_objects(
            _pods(kube, namespace, name),
            _watch_pods(kube, namespace, name),
            dict((pod_name, settled) for pod_name in names),
            params["wait_timeout"],
            "%d replica(s) of %s to get a GPU slice or be found unschedulable" % (replicas, name),
            "pod",
            policy=kube.retry_policy,
        )
        result.update(report(list(final.values()), replicas))
    finally:
        if params["cleanup"]:
            _clean_up(kube, kind, namespace, name, names, params["wait_timeout"])
    return result
