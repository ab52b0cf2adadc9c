# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpushare.k8s.gpu_demand: an ansible-rulebook event source that gives one event per settled change of the GPU
demand no node can hold (DOCUMENTATION below, docs/EDA.md). The decisions live in
plugins/module_utils/plan/sharing_planner/demand_events.py (unit-tested); this file only runs the watches, in threads
of their own since the Kubernetes client blocks, hands what they see to it, and hands its events to ansible-rulebook."""

# As ansible.eda documents its sources; tests/unit/extensions/eda/test_gpu_demand_source.py keeps the options equal
# to the argument spec the source checks its args with (GPU_DEMAND_ARG_SPEC and the connection options).
DOCUMENTATION = r"""
---
short_description: Give an event when GPU pods wait for resources no node has
description:
  - An ansible-rulebook event source. It follows the pods the scheduler found unschedulable (C(PodScheduled) False,
    reason C(Unschedulable)) that request C(nvidia.com/gpu), C(nvidia.com/gpu.shared) or C(nvidia.com/mig-*), and
    the GPU nodes, each with a LIST then a watch from its resourceVersion (a fresh LIST after 410 Gone, a dropped
    stream or an API server that cannot be reached).
  - A burst of changes gives one event once nothing changed for I(settle_seconds) (at the latest
    I(longest_settle_seconds) after its first change). An event comes only when more pods wait for some pool and
    resource than in the last event, or when GPU nodes joined, left or changed pool while pods wait; never sooner
    than I(cool_down_seconds) after the last one. So an unservable demand gives one event, not one per window.
  - 'The event: C({"gpu_demand": {"pool_label", "demand": {pool: {resource: count}}, "pods": [{namespace, name,
    pool, requests, reason}], "gpu_nodes": {pool: [names]}, "reason", "fingerprint"}}). A pool is a value of the
    pool label, or C(*): any pool (pods that name none, nodes without the label, everything without I(pool_label)).
    No key of an event is ever empty: ansible-rulebook 1.3.2 cannot read an empty key.'
  - The connection options and their C(K8S_AUTH_*) environment variables are kubernetes.core's, as the collection's
    modules take them. The source needs C(list) and C(watch) on pods and nodes (the rbac role's gpushare-viewer).
  - The source needs ansible-core, kubernetes.core and the C(kubernetes) Python library beside ansible-rulebook; it
    finds the collections where Ansible does (C(ANSIBLE_COLLECTIONS_PATH), ansible.cfg, the default paths).
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
options:
  pool_label:
    description:
      - The node label that names pools (C(k8s.scaleway.com/pool-name) on Kapsule). A pod's pool is its
        C(nodeSelector)'s value of it.
      - Without it, one pool, C(*).
    type: str
  node_selector:
    description:
      - The label selector of the GPU nodes.
    type: str
    default: nvidia.com/gpu.present=true
  settle_seconds:
    description:
      - The quiet time, in seconds, that ends a burst of changes.
    type: float
    default: 10.0
  longest_settle_seconds:
    description:
      - The longest a burst is waited for, in seconds from its first change, so that a steady trickle of changes
        still gives an event. At least I(settle_seconds).
    type: float
    default: 60.0
  cool_down_seconds:
    description:
      - The least time, in seconds, between two events. An event due earlier comes at the cool-down's end, with the
        demand as it is then.
    type: float
    default: 60.0
  handoff_timeout_seconds:
    description:
      - How long, in seconds, an event may wait for ansible-rulebook to take it. Past that, ansible-rulebook's event
        reader has stopped and no new demand would be planned; the source logs it and ends ansible-rulebook with
        status 1, for its supervisor (EDA controller's restart policy, systemd) to start it again.
    type: float
    default: 300.0
"""

EXAMPLES = r"""
# The collection's rulebook, gpushare.k8s.gpu_autoplan, runs this source and the sharing-plan playbook.
- name: Plan the GPU sharing layout when GPU pods wait
  hosts: all
  execution_strategy: sequential
  sources:
    - name: unschedulable GPU pods
      gpushare.k8s.gpu_demand:
        pool_label: k8s.scaleway.com/pool-name
        settle_seconds: 10
        cool_down_seconds: 60
  rules:
    - name: Plan and apply the layout the waiting pods need
      condition: event.gpu_demand is defined
      action:
        run_playbook:
          name: gpushare.k8s.sharing_plan
          extra_vars:
            sharing_plan_pool_label: "{{ event.gpu_demand.pool_label }}"
"""

import asyncio
import importlib.util
import logging
import os
import sys
import threading


def _own_collections_root():
    """The folder holding the ``ansible_collections`` this file is installed in."""
    return os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 7))


def _configured_collections_roots():
    """The folders holding ``ansible_collections`` that ``ANSIBLE_COLLECTIONS_PATH`` (or ansible.cfg's
    ``collections_path``, or the default paths) names, as ansible-core reads it, each entry named with or without its
    ``ansible_collections`` folder. ansible-rulebook found this source through ``ansible-galaxy collection list``,
    which reads the same setting."""
    from ansible import constants  # ansible-core's controller configuration

    roots = []
    for path in constants.COLLECTIONS_PATHS:
        path = os.path.abspath(os.path.expanduser(path))
        roots.append(os.path.dirname(path) if os.path.basename(path) == "ansible_collections" else path)
    return roots


def _kubernetes_core_importable():
    try:
        return importlib.util.find_spec("ansible_collections.kubernetes.core") is not None
    except ImportError:
        return False


def _extend_path(roots):
    for root in roots:
        if root not in sys.path:
            sys.path.append(root)


# ansible-rulebook runs this file by its path: make ``ansible_collections`` (a namespace package, one folder per
# root) span this collection's root, then, where kubernetes.core (a dependency) is not found there, every collection
# path Ansible is configured with. Ansible's configuration is read only then: it is controller code, which a process
# that also runs modules in-process (the integration tests import this file) must not import.
_extend_path([_own_collections_root()])
if not _kubernetes_core_importable():
    _extend_path(_configured_collections_roots())

from ansible_collections.gpushare.k8s.plugins.module_utils.args import gpu_demand_options  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import KubeApi  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.client import get_api_client  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import follow_forever  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.demand_events import (  # noqa: E402
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


class EventsNotTaken(SystemExit):
    """ansible-rulebook took no event for ``handoff_timeout_seconds``. A SystemExit: ansible-rulebook (1.3.2) catches
    every other error of a source, logs it and waits for its own event reader to end, which never comes when that
    reader is what stopped; a SystemExit ends the process, with status 1 and this message, so that whatever runs it
    (EDA controller's restart policy, systemd) sees it fail and can start it again."""


class HandOff(object):
    """The events given to ansible-rulebook, and whether it takes them.

    ansible-rulebook hands a source a queue of one event (1.3.2: ``asyncio.Queue(1)`` in ``app.spawn_sources``,
    wrapped in ``engine.FilteredQueue``, whose ``queue`` it is), and its event reader takes each one out to the rule
    engine at once: an event still there ``timeout`` seconds after it was given was never taken. The reader can end
    without a word (1.3.2 ends it on an error it does not expect, such as an event it cannot read) while the source
    and the process go on; then a second event stays in the queue and a third one cannot be given at all."""

    def __init__(self, queue, timeout):
        self.queue = queue
        # Where the queue is not ansible-rulebook's, only a put that does not complete shows events not taken.
        self.given = getattr(queue, "queue", None)
        self.timeout = timeout
        self.given_at = None

    async def give(self, body, now):
        try:
            await asyncio.wait_for(self.queue.put(body), self.timeout)
        except asyncio.TimeoutError:
            self.not_taken("its last event is still waiting to be taken %.0f s later" % self.timeout)
        self.given_at = now

    def due_at(self):
        """When to look whether the last event was taken; None when there is nothing to look at."""
        if self.given_at is None or not hasattr(self.given, "empty"):
            return None
        return self.given_at + self.timeout

    def look(self, now):
        due = self.due_at()
        if due is None or now < due:
            return
        if not self.given.empty():
            self.not_taken("the event given %.0f s ago is still waiting to be taken" % (now - self.given_at))
        self.given_at = None

    def not_taken(self, what):
        message = (
            "gpu_demand: ansible-rulebook takes no more events (%s): its event reader has stopped, and no new demand "
            "would be planned; ending ansible-rulebook so that it is started again (EDA controller's restart "
            "policy, systemd's Restart=on-failure). handoff_timeout_seconds sets how long an event may wait" % what
        )
        logger.error(message)
        raise EventsNotTaken(message)


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
    handoff = HandOff(queue, options["handoff_timeout_seconds"])
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
            due = min((at for at in (demand.due_at(), handoff.due_at()) if at is not None), default=None)
            try:
                change = await asyncio.wait_for(changes.get(), None if due is None else max(0.0, due - loop.time()))
            except asyncio.TimeoutError:
                handoff.look(loop.time())
                body = demand.take(loop.time())
                if body:
                    logger.info(
                        "gpu_demand: %s (%s)",
                        describe_demand(body["gpu_demand"]["demand"]),
                        body["gpu_demand"]["reason"],
                    )
                    await handoff.give(body, loop.time())
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
