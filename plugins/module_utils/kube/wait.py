# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wait mechanism: a LIST then a watch, bounded by a timeout, that says what is still wrong.

A watch that the server ends (its timeoutSeconds) starts again from the last resourceVersion seen;
one that expired (410 Gone, as the start's status or an ERROR event) or dropped (connection reset,
stream cut or ended early, transient server error: WatchDropped) starts again from a fresh LIST,
after a short backoff when it keeps dropping, all within the one deadline of the wait."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GONE, GpuShareError, WatchDropped
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.retry import DEFAULT_POLICY


def wait_for_nodes(kube, expectations, timeout, what, listed=None):
    """Wait until every node named in ``expectations`` satisfies its check (see wait_for_objects)."""
    return wait_for_objects(
        kube.list_nodes, kube.watch_nodes, expectations, timeout, what, "node", listed=listed, policy=_policy(kube)
    )


def wait_for_daemon_sets(kube, namespace, expectations, timeout, what):
    """Wait until every DaemonSet of ``namespace`` named in ``expectations`` satisfies its check."""
    return wait_for_objects(
        lambda: kube.list_daemon_sets(namespace=namespace),
        lambda resource_version, seconds: kube.watch_daemon_sets(namespace, resource_version, seconds),
        expectations,
        timeout,
        what,
        "DaemonSet",
        policy=_policy(kube),
    )


def wait_for_custom_objects(kube, kind, namespace, expectations, timeout, what):
    """Wait until every object of ``kind`` ((group, version, plural)) in ``namespace`` named in ``expectations``
    satisfies its check."""
    group, version, plural = kind
    return wait_for_objects(
        lambda: kube.list_namespaced_custom_objects(group, version, plural, namespace),
        lambda resource_version, seconds: kube.watch_namespaced_custom_objects(
            group, version, plural, namespace, resource_version, seconds
        ),
        expectations,
        timeout,
        what,
        plural[:-1],
        policy=_policy(kube),
    )


def wait_for_nodes_gone(kube, names, timeout, what):
    """Wait until none of the nodes ``names`` is registered any more."""
    return wait_for_objects(
        kube.list_nodes,
        kube.watch_nodes,
        dict((name, lambda node: "still registered") for name in names),
        timeout,
        what,
        "node",
        absent_ok=True,
        policy=_policy(kube),
    )


def wait_for_pods_gone(kube, node_name, pod_names, timeout, what):
    """Wait until none of the pods (``namespace/name``) bound to ``node_name`` exists any more."""
    return wait_for_objects(
        lambda: kube.list_pods_on_node(node_name),
        lambda resource_version, seconds: kube.watch_pods_on_node(node_name, resource_version, seconds),
        dict((name, _still_there) for name in pod_names),
        timeout,
        what,
        "pod",
        absent_ok=True,
        key=_namespaced_name,
        policy=_policy(kube),
    )


def _policy(kube):
    return getattr(kube, "retry_policy", None)


def _still_there(pod):
    return "still %s%s" % (
        (pod.get("status") or {}).get("phase") or "there",
        ", terminating" if pod["metadata"].get("deletionTimestamp") else "",
    )


def _namespaced_name(obj):
    return "%s/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])


def _name(obj):
    return obj["metadata"]["name"]


class Failed(object):
    """What an expectation returns for a terminal failure: the object will not get there by waiting.

    wait_for_objects stops waiting for it and, once every other object is settled, raises
    GpuShareError naming each failed object and the reason (``details["failed"]``).
    """

    def __init__(self, reason):
        self.reason = reason

    def __str__(self):
        return self.reason


def _listing(problems):
    return "; ".join("%s: %s" % (name, problems[name]) for name in sorted(problems))


def wait_for_objects(
    list_objects,
    watch_objects,
    expectations,
    timeout,
    what,
    kind,
    absent_ok=False,
    key=_name,
    listed=None,
    policy=None,
):
    """Wait until every object named in ``expectations`` satisfies its check.

    ``expectations`` maps an object's ``key`` (its name by default) to a function ``object dict ->
    None, str or Failed``: None when the object is as wanted, a str saying what is still wrong, or
    ``Failed(reason)`` when it never will be. The objects are LISTed once (``list_objects() ->
    (items, resourceVersion)``, a ``kube/api.Listed``), then followed by a watch from that LIST's resourceVersion
    (``watch_objects(resourceVersion, seconds)``); ``listed`` is a ``Listed`` the caller already made, used
    instead of the first LIST. A watch that ends is started
    again from the last resourceVersion seen; one that expired (410) or dropped (WatchDropped) from
    a fresh LIST, a dropping one after ``policy.backoff`` (kube/retry.py), all within ``timeout``.
    With ``absent_ok`` an object that does not exist (or is deleted) is as wanted; otherwise that is
    an error. Returns the final objects by key; raises GpuShareError when some object failed, and on
    timeout listing each unmet object and what it shows.
    """
    policy = policy or DEFAULT_POLICY
    deadline = time.monotonic() + timeout
    objects = _WaitedObjects(list_objects, expectations, key, absent_ok, kind, what)
    # A LIST the caller made before writing serves as well as a new one: the watch from its
    # resourceVersion delivers every change made since, the caller's own writes included.
    resource_version = objects.relist(listed)
    missing = sorted(set(expectations) - set(objects.latest))
    if missing and not absent_ok:
        raise GpuShareError("Cannot wait for %s: %s(s) %s do not exist." % (what, kind, ", ".join(missing)))
    drops = _follow(
        watch_objects, objects.relist, objects.event, lambda: not objects.unmet, resource_version, deadline, policy
    )
    _raise_unsettled(objects, timeout, what, kind, drops)
    return objects.latest


class _WaitedObjects(object):
    """What wait_for_objects has seen of the objects it waits for: the latest of each (``latest``), what is still
    wrong with those not there yet (``unmet``) and the reason of those that never will be (``failed``), all by key."""

    def __init__(self, list_objects, expectations, key, absent_ok, kind, what):
        self.list_objects = list_objects
        self.expectations = expectations
        self.key = key
        self.absent_ok = absent_ok
        self.kind = kind
        self.what = what
        self.latest, self.unmet, self.failed = {}, {}, {}

    def observe(self, obj):
        name = self.key(obj)
        self.latest[name] = obj
        problem = self.expectations[name](obj)
        self.unmet.pop(name, None)
        self.failed.pop(name, None)
        if isinstance(problem, Failed):
            self.failed[name] = problem.reason
        elif problem:
            self.unmet[name] = problem

    def vanish(self, name):
        for found in (self.latest, self.unmet, self.failed):
            found.pop(name, None)

    def relist(self, items_and_version=None):
        """Observe a LIST (``items_and_version``, else a new one); returns its resourceVersion."""
        items, resource_version = items_and_version or self.list_objects()
        listed = set()
        for item in items:
            if self.key(item) in self.expectations:
                listed.add(self.key(item))
                self.observe(item)
        gone = set(self.latest) - listed
        if gone and not self.absent_ok:
            # Deleted while no watch ran: the watch would have said so with a DELETED event.
            raise GpuShareError("%s %s was deleted while waiting for %s." % (self.kind, sorted(gone)[0], self.what))
        for name in gone:
            self.vanish(name)
        return resource_version

    def event(self, event_type, obj):
        if self.key(obj) not in self.expectations:
            return
        if event_type != "DELETED":
            self.observe(obj)
        elif self.absent_ok:
            self.vanish(self.key(obj))
        else:
            raise GpuShareError("%s %s was deleted while waiting for %s." % (self.kind, self.key(obj), self.what))


def _raise_unsettled(objects, timeout, what, kind, drops):
    """Once the wait ends: the timeout listing each unmet object (and the failed ones, and the watch's drops), else
    the failed objects, else nothing."""
    unmet, failed = objects.unmet, objects.failed
    if unmet:
        raise GpuShareError(
            "Timed out after %ss waiting for %s; %d %s(s) not there yet: %s%s%s"
            % (
                timeout,
                what,
                len(unmet),
                kind,
                _listing(unmet),
                "; and failed: %s" % _listing(failed) if failed else "",
                "; the watch dropped %d time(s) in a row, last: %s" % (len(drops), drops[-1].msg) if drops else "",
            ),
            details={"unmet": unmet, "failed": failed},
        )
    if failed:
        raise GpuShareError(
            "%s failed on %d %s(s): %s" % (what[:1].upper() + what[1:], len(failed), kind, _listing(failed)),
            details={"failed": failed},
        )


def wait_for_events(kube, kind, name, found, timeout):
    """The Events about object ``kind``/``name`` once ``found(events)`` is true, or those there are when
    ``timeout`` passes: an Event is evidence that may come late or never, so the timeout is no error."""
    events = {}

    def relist():
        items, resource_version = kube.list_events(kind, name)
        events.clear()
        events.update((item["metadata"]["uid"], item) for item in items)
        return resource_version

    def event(event_type, obj):
        if event_type == "DELETED":
            events.pop(obj["metadata"]["uid"], None)
        else:
            events[obj["metadata"]["uid"]] = obj

    _follow(
        lambda resource_version, seconds: kube.watch_events(kind, name, resource_version, seconds),
        relist,
        event,
        lambda: found(list(events.values())),
        relist(),
        time.monotonic() + timeout,
        _policy(kube) or DEFAULT_POLICY,
    )
    return list(events.values())


def _follow(watch_objects, relist, event, settled, resource_version, deadline, policy):
    """Watch from ``resource_version``, handing each event but bookmarks to ``event(type, obj)``, until
    ``settled()`` or ``deadline``; returns the WatchDropped errors since a watch last brought an event.

    A watch that ends is started again from the last resourceVersion seen; one that expired (410) or
    dropped (WatchDropped) from a fresh ``relist()`` (which returns its resourceVersion), a dropping one
    after ``policy.backoff`` (kube/retry.py), never past the deadline.
    """
    drops = []
    while not settled():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            for event_type, obj in watch_objects(resource_version, remaining):
                del drops[:]
                resource_version = obj["metadata"].get("resourceVersion", resource_version)
                if event_type == "BOOKMARK":
                    continue
                event(event_type, obj)
                if settled():
                    break
            # The watch ended (the server's timeout) or the wait is over: go on from here.
        except WatchDropped as exc:
            # Connection reset, stream cut or ended early: nothing says what was missed, so LIST
            # again; back off first when it keeps happening, never past the deadline.
            drops.append(exc)
            if len(drops) > 1:
                policy.sleep(max(0.0, min(policy.backoff(len(drops) - 2), deadline - time.monotonic())))
            resource_version = relist()
        except GpuShareError as exc:
            if exc.status != GONE:
                raise
            # The watch window expired: start again from a fresh LIST.
            resource_version = relist()
    return drops


def follow_forever(list_objects, watch_objects, listed, event, stopped, failed, policy=None):
    """Follow a kind of object until ``stopped()``, for a watcher that has no deadline (the gpu_demand event source).

    ``list_objects() -> (items, resourceVersion)``; each LIST's items go to ``listed(items)``, then every watch
    event but bookmarks to ``event(type, obj)``, as ``_follow`` hands them: a watch that ends starts again from the
    last resourceVersion, one that expired (410) or dropped from a fresh LIST. What ``_follow`` gives up on (the API
    server still unreachable when a call's retries end, an ERROR event) goes to ``failed(error)``, and the follow
    starts again from a LIST after the policy's backoff, growing while it keeps failing.
    """
    policy = policy or DEFAULT_POLICY
    failures = 0

    def relist():
        items, resource_version = list_objects()
        listed(items)
        return resource_version

    while not stopped():
        try:
            resource_version = relist()
            failures = 0
            _follow(watch_objects, relist, event, stopped, resource_version, float("inf"), policy)
        except GpuShareError as exc:
            failed(exc)
            policy.sleep(policy.backoff(failures))
            failures += 1


def wait_for_node_expectations(kube, expectations, timeout, what, listed=None):
    """Wait until every node of ``expectations`` (node name -> an object with ``problem(node)``: a plan's, as
    written) shows its expectation; returns the final node dicts.

    ``listed`` is the node LIST (a ``kube/api.Listed``) the plan was made from, to start the watch from.
    """
    return wait_for_nodes(
        kube,
        dict((name, expectation.problem) for name, expectation in expectations.items()),
        timeout,
        what,
        listed=listed,
    )


def daemon_set_rollout_problem(daemon_set):
    """None once a DaemonSet runs a ready, up-to-date pod on every node it targets."""
    status = daemon_set.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    if status.get("observedGeneration", 0) < daemon_set["metadata"].get("generation", 0):
        return "its controller has not seen the latest spec yet"
    if not desired:
        return "no node is scheduled to run it"
    if status.get("numberReady", 0) < desired or status.get("updatedNumberScheduled", 0) < desired:
        return "%s of %s pods ready, %s up to date" % (
            status.get("numberReady", 0),
            desired,
            status.get("updatedNumberScheduled", 0),
        )
    return None
