# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpushare.k8s.gpu_demand: an ansible-rulebook event source that gives one event per settled change of the GPU
demand no node can hold (docs/EDA.md).

It follows the pods the scheduler found unschedulable that request ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` or
``nvidia.com/mig-*``, and the GPU nodes, each with a LIST then a watch from its resourceVersion (a fresh LIST after
410 Gone or a dropped stream). A burst of changes gives one event once nothing changed for ``settle_seconds`` (at the
latest ``longest_settle_seconds`` after its first change); an event comes only when more pods wait for some pool
and resource than in the last event, or when GPU nodes joined, left or changed pool while pods wait; never sooner
than ``cool_down_seconds`` after the last one.

Args (a rulebook's source args):
  pool_label: the node label naming pools (a pod's pool is its nodeSelector's value of it; none: any pool)
  node_selector: which nodes are GPU nodes (default nvidia.com/gpu.present=true)
  settle_seconds (10), longest_settle_seconds (60), cool_down_seconds (60)
  kubeconfig, context, host, api_key, username, password, validate_certs, ca_cert, client_cert, client_key, proxy,
  no_proxy, proxy_headers, persist_config, impersonate_user, impersonate_groups: as the collection's modules take
  them, with the same K8S_AUTH_* environment variables (kubernetes.core's).

The event: ``{"gpu_demand": {"pool_label", "demand": {pool: {resource: count}}, "pods": [{namespace, name, pool,
requests, reason}], "gpu_nodes": {pool: [names]}, "reason", "fingerprint"}}``.

The decisions live in plugins/module_utils/plan/gpu_demand.py (unit-tested); this file only runs the watches, in
threads of their own since the Kubernetes client blocks, and hands what they see to it."""

import asyncio
import logging
import os
import sys
import threading

# ansible-rulebook runs this file by its path: make the collection's own module_utils importable, from the
# ansible_collections folder it is installed in (kubernetes.core, its dependency, is installed beside it).
_COLLECTIONS_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 7))
if _COLLECTIONS_ROOT not in sys.path:
    sys.path.append(_COLLECTIONS_ROOT)

from ansible_collections.gpushare.k8s.plugins.module_utils.args import gpu_demand_options  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import KubeApi  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.client import get_api_client  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import follow_forever  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.gpu_demand import (  # noqa: E402
    NODES,
    PODS,
    DemandEvents,
    describe_demand,
)

logger = logging.getLogger("gpushare.k8s.gpu_demand")


def _connect(options):
    return KubeApi(get_api_client(options))


def _start_watch(kind, kube, node_selector, post, stop):
    """A daemon thread following ``kind``: a watch blocks for minutes, and must not hold up the rulebook's exit."""

    def list_nodes():
        return kube.list_nodes(label_selector=node_selector)

    def watch_nodes(version, seconds):
        return kube.watch_nodes(version, seconds, label_selector=node_selector)

    if kind == PODS:
        list_objects, watch_objects = kube.list_unscheduled_pods, kube.watch_unscheduled_pods
    else:
        list_objects, watch_objects = list_nodes, watch_nodes

    def failed(error):
        logger.warning("gpu_demand: following %s failed, starting again from a LIST: %s", kind, error)

    thread = threading.Thread(
        target=follow_forever,
        args=(
            list_objects,
            watch_objects,
            lambda items: post("listed", kind, items),
            lambda event_type, obj: post("watched", kind, event_type, obj),
            stop.is_set,
            failed,
            kube.retry_policy,
        ),
        name="gpu_demand-%s" % kind,
        daemon=True,
    )
    thread.start()


async def main(queue, args):
    options = gpu_demand_options(args or {})
    loop = asyncio.get_running_loop()
    kube = await asyncio.to_thread(_connect, options)
    demand = DemandEvents(
        options["pool_label"],
        options["settle_seconds"],
        options["longest_settle_seconds"],
        options["cool_down_seconds"],
    )
    changes = asyncio.Queue()
    stop = threading.Event()

    def post(*change):
        if stop.is_set():
            return
        try:
            loop.call_soon_threadsafe(changes.put_nowait, change)
        except RuntimeError:
            # The loop closed between the check and the call: main() has ended, and the watch threads (daemons, up
            # to one watch behind) stop at their next look at ``stop``; what they saw goes nowhere.
            pass

    for kind in (NODES, PODS):
        _start_watch(kind, kube, options["node_selector"], post, stop)
    logger.info("gpu_demand: following unschedulable GPU pods and GPU nodes (%s)", options["node_selector"])
    try:
        while True:
            due = demand.due_at()
            try:
                change = await asyncio.wait_for(changes.get(), None if due is None else max(0.0, due - loop.time()))
            except asyncio.TimeoutError:
                body = demand.take(loop.time())
                if body:
                    logger.info(
                        "gpu_demand: %s (%s)",
                        describe_demand(body["gpu_demand"]["demand"]),
                        body["gpu_demand"]["reason"],
                    )
                    await queue.put(body)
                elif demand.why_not:
                    logger.info("gpu_demand: %s", demand.why_not)
                continue
            what, arguments = change[0], change[1:]
            if what == "listed":
                demand.listed(*arguments, now=loop.time())
            else:
                demand.watched(*arguments, now=loop.time())
    finally:
        stop.set()
