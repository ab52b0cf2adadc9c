"""The gpu_demand event source (issue 30) and the watch it runs on (``kube/wait.follow_forever``) against the real API
server when the path to it fails: a watch cut mid-stream, an expired one (410), one the server ends, a LIST that fails,
and a restart of the kube-apiserver itself.

The source runs in this process as ansible-rulebook runs it (its ``main(queue, args)`` coroutine on a loop of its own,
given ansible-rulebook's own queue: ``engine.FilteredQueue`` over an ``asyncio.Queue(1)``), connected through the fault-
injecting proxy of fault_proxy.py or straight to the API server; what it puts on the queue is compared with the demand
changes the test made: exactly one event per change, none lost, none repeated. Each test ends on a change that gives no
event (the pods deleted), which the source logs when its window closes: every event of the changes before it was given
by then.

The Kapsule fleet (three idle H100 nodes, whole GPUs): pods asking for MIG instances wait, unschedulable, for as long as
nobody plans (nothing here does).
"""

import asyncio
import logging
import threading
import uuid

import pytest
from ansible_rulebook.engine import FilteredQueue
from fault_proxy import Fault, Sleeps, kube_api, node_list, node_watch
from integration_helpers import labels
from kubernetes import client
from workloads import KAPSULE_POOL_LABEL, create_pods, mig_pod, wait_for_pods

from ansible_collections.gpushare.k8s.extensions.eda.plugins.event_source import gpu_demand
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import follow_forever

pytestmark = pytest.mark.profiles("scaleway")

SETTLE_SECONDS = 5
HANDOFF_TIMEOUT_SECONDS = 5
WAIT = 120  # seconds any wait here may take at most (the API server's restart included)
LABEL = "resilience.gpushare.k8s/mark"
STARTED = "gpu_demand: following unschedulable GPU pods"
NOTHING_WAITS = "gpu_demand: no event: no pod waits for planned GPU resources"


def pod_watch(request):
    return request.method == "GET" and request.path.endswith("/pods") and request.watch


def pod_list(request):
    return request.method == "GET" and request.path.endswith("/pods") and not request.watch


# --- the source in this process ---------------------------------------------------------------------------------


class Timeline(logging.Handler):
    """What the source did, in order: ``("event", body)`` for each event it put on the queue, ``("log", message)`` for
    each line it logged; ``wait(predicate)`` until ``predicate(entries)`` holds."""

    def __init__(self):
        logging.Handler.__init__(self, logging.INFO)
        self.entries = []
        self.changed = threading.Condition()

    def add(self, entry):
        with self.changed:
            self.entries.append(entry)
            self.changed.notify_all()

    def emit(self, record):
        self.add(("log", record.getMessage()))

    def events(self):
        with self.changed:
            return [body["gpu_demand"] for kind, body in self.entries if kind == "event"]

    def logged(self, text):
        with self.changed:
            return sum(1 for kind, line in self.entries if kind == "log" and text in line)

    def wait(self, predicate, what, timeout=WAIT):
        with self.changed:
            if not self.changed.wait_for(lambda: predicate(self), timeout):
                raise AssertionError("no %s after %ss; the source did: %s" % (what, timeout, self.entries))


class Source(object):
    """gpu_demand's ``main(queue, args)`` on an event loop of its own thread, its events and log in ``timeline``; with
    ``taken`` false, nothing takes its events, as when ansible-rulebook's event reader has stopped."""

    def __init__(self, args, timeline, taken=True):
        self.args = args
        self.timeline = timeline
        self.taken = taken
        self.loop = asyncio.new_event_loop()
        self.task = None
        self.failure = None
        self.thread = threading.Thread(target=self._run, name="gpu_demand-source", daemon=True)

    def start(self):
        self.thread.start()
        self.timeline.wait(lambda timeline: timeline.logged(STARTED), "start")
        # The first LISTs open the source's first window; on the freshly reset fleet it closes with nothing waiting.
        self.timeline.wait(lambda timeline: timeline.logged(NOTHING_WAITS), "first window")
        return self

    def _run(self):
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        except asyncio.CancelledError:
            pass
        except (Exception, gpu_demand.EventsNotTaken) as exc:  # noqa: BLE001 - reported by stop()
            self.failure = exc
            if self.task is not None and self.task.done():
                self.task.exception()  # the SystemExit left the loop through the task: it is retrieved here
        finally:
            self.loop.close()

    async def _main(self):
        queue = asyncio.Queue(1)
        self.task = asyncio.ensure_future(gpu_demand.main(FilteredQueue([], queue), self.args))
        if not self.taken:
            await self.task
        while not self.task.done():
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({self.task, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                self.timeline.add(("event", getter.result()))
            else:
                getter.cancel()
        self.task.result()

    def ended(self):
        """How the source ended on its own: the error it raised."""
        self.thread.join(timeout=WAIT)
        assert not self.thread.is_alive(), "the source still runs; it did: %s" % self.timeline.entries
        failure, self.failure = self.failure, None
        return failure

    def stop(self):
        if self.task is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(timeout=30)
        assert self.failure is None, "the source failed: %r" % self.failure


@pytest.fixture
def start_source(cluster):
    """``start_source(host, taken=True)``: the source connected to ``host`` (the proxy's URL or the API server's) with
    the cluster's CA and admin token, Kapsule's pool label, a short settle time, no cool-down and a short hand-off
    timeout; once its first window closed. Stopped after the test."""
    timeline = Timeline()
    logger = logging.getLogger("gpushare.k8s.gpu_demand")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(timeline)
    started = []

    def start(host, taken=True):
        args = dict(
            host=host,
            api_key=cluster.token("admin"),
            ca_cert=cluster.ca_cert,
            pool_label=KAPSULE_POOL_LABEL,
            settle_seconds=SETTLE_SECONDS,
            cool_down_seconds=0,
            handoff_timeout_seconds=HANDOFF_TIMEOUT_SECONDS,
        )
        source = Source(args, timeline, taken)
        started.append(source)
        return source.start()

    yield start
    try:
        for source in started:
            source.stop()
    finally:
        logger.removeHandler(timeline)
        logger.setLevel(level)


def pod_names(event):
    return sorted(pod["name"] for pod in event["pods"])


def delete_pods_and_see_nothing_waits(api_client, namespace, source):
    """The change that ends each test: the pods deleted, which gives no event; once the source logged that, every
    event of the changes before was given."""
    before = source.timeline.logged(NOTHING_WAITS)
    client.CoreV1Api(api_client).delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    source.timeline.wait(lambda timeline: timeline.logged(NOTHING_WAITS) > before, "window without waiting pods")


# --- the source -------------------------------------------------------------------------------------------------


def test_a_watch_cut_mid_burst_loses_no_pod_and_repeats_no_event(api_client, namespace, proxy, start_source):
    """Half the burst comes through the pods' watch; the watch is then cut, and the other half is created while the
    proxy swallows what the API server streams: only the source's fresh LIST can show those pods."""
    source = start_source(proxy.url)
    burst = ["burst-%02d" % n for n in range(50)]

    create_pods(api_client, namespace, [mig_pod(name, "1g.10gb") for name in burst[:25]])
    cut = proxy.cut_streams(
        pod_watch, hook=lambda: create_pods(api_client, namespace, [mig_pod(name, "1g.10gb") for name in burst[25:]])
    )
    wait_for_pods(api_client, namespace, running=0, waiting=len(burst), timeout=WAIT)
    source.timeline.wait(lambda timeline: timeline.events(), "event")
    delete_pods_and_see_nothing_waits(api_client, namespace, source)

    assert len(cut) == 1
    [event] = source.timeline.events()
    assert event["demand"] == {"gpu-h100": {"nvidia.com/mig-1g.10gb": 50}}
    assert pod_names(event) == burst
    # The cut watch was followed by a LIST (the pods it swallowed), then a watch from that LIST.
    after_cut = proxy.requests(lambda request: pod_list(request) or pod_watch(request))
    after_cut = after_cut[after_cut.index(cut[0]) + 1 :]
    assert [pod_list(request) for request in after_cut[:2]] == [True, False]


def test_a_restarted_api_server_gives_no_repeated_event_and_loses_no_new_pod(
    cluster, api_client, namespace, start_source
):
    """Pods wait and their event was given; the kube-apiserver restarts (its watches end, connections are refused
    until it serves again); then more pods come, likely before the source has its watches back. The pods still
    waiting after the restart give no second event; the new ones give one."""
    source = start_source(cluster.server())
    first = ["first-%02d" % n for n in range(20)]
    create_pods(api_client, namespace, [mig_pod(name, "1g.10gb") for name in first])
    source.timeline.wait(lambda timeline: timeline.events(), "first event")

    cluster.restart_apiserver()
    second = ["second-%d" % n for n in range(5)]
    create_pods(api_client, namespace, [mig_pod(name, "2g.20gb") for name in second])
    source.timeline.wait(lambda timeline: len(timeline.events()) >= 2, "second event")
    delete_pods_and_see_nothing_waits(api_client, namespace, source)

    first_event, second_event = source.timeline.events()
    assert first_event["demand"] == {"gpu-h100": {"nvidia.com/mig-1g.10gb": 20}}
    assert pod_names(first_event) == first
    assert second_event["demand"] == {"gpu-h100": {"nvidia.com/mig-1g.10gb": 20, "nvidia.com/mig-2g.20gb": 5}}
    assert pod_names(second_event) == sorted(first + second)
    assert second_event["reason"] == "nvidia.com/mig-2g.20gb waiting for pool gpu-h100: 5, was 0"


def test_an_event_nobody_takes_ends_the_source_and_says_why(cluster, api_client, namespace, start_source):
    """ansible-rulebook's event reader has stopped (1.3.2 ends it, silently, on an event it cannot read): the event
    given stays in its queue of one. The source says so and ends with a SystemExit, which ends ansible-rulebook with
    status 1 (test_eda_autoplan.py runs that through ansible-rulebook itself) instead of leaving it idle."""
    source = start_source(cluster.server(), taken=False)
    create_pods(api_client, namespace, [mig_pod("unplanned", "1g.10gb")])
    failure = source.ended()
    assert isinstance(failure, gpu_demand.EventsNotTaken) and isinstance(failure, SystemExit)
    assert str(failure).startswith(
        "gpu_demand: ansible-rulebook takes no more events (the event given 5 s ago is still waiting to be taken)"
    )
    assert source.timeline.logged("gpu_demand: ansible-rulebook takes no more events") == 1
    assert source.timeline.logged("gpu_demand: pool gpu-h100: 1 nvidia.com/mig-1g.10gb (") == 1


# --- follow_forever ---------------------------------------------------------------------------------------------


class Follower(object):
    """follow_forever over the nodes in a thread: what it hands on in ``listed`` (the names of each LIST's
    nodes carrying LABEL, with its value), ``events`` (type, name, LABEL's value) and ``failed``; it stops once an
    event shows ``LABEL=stop_at``."""

    def __init__(self, api):
        self.api = api
        self.listed, self.events, self.failed = [], [], []
        self.stop_at = uuid.uuid4().hex[:12]
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        follow_forever(
            self.api.list_nodes,
            self.api.watch_nodes,
            lambda items: self.listed.append(dict(marks(items))),
            lambda event_type, obj: self.events.append(
                (event_type,) + next(marks([obj]), (obj["metadata"]["name"], None))
            ),
            lambda: any(event[2] == self.stop_at for event in self.events),
            self.failed.append,
            self.api.retry_policy,
        )

    def run(self):
        self.thread.start()
        self.thread.join(timeout=WAIT)
        assert not self.thread.is_alive(), "follow_forever still runs; it handed on %s" % self.events


def marks(nodes):
    for node in nodes:
        if LABEL in labels(node):
            yield node["metadata"]["name"], labels(node)[LABEL]


def marking(kube, name, value):
    return lambda: kube.label_node(name, {LABEL: value})


def test_following_resumes_after_a_watch_ends_and_relists_after_410_and_a_cut(cluster, kube, proxy):
    """Watches of at most 2 s; the changes made while a watch is expired or cut reach the follower through the fresh
    LIST only; the last one through a watch, which stops it."""
    name = kube.gpu_nodes()[0]
    follower = Follower(kube_api(cluster, proxy.url, max_watch_seconds=2))
    proxy.add(
        Fault(node_watch, "forward"),
        Fault(node_watch, "error-event", status=410, message="too old resource version", hook=marking(kube, name, "a")),
        Fault(node_watch, "cut-after-head", hook=marking(kube, name, "b")),
        Fault(node_watch, "forward", hook=marking(kube, name, follower.stop_at)),
    )

    follower.run()

    assert [listed.get(name) for listed in follower.listed] == [None, "a", "b"]
    # Of the marks, only the last came through a watch.
    assert [event for event in follower.events if event[2]] == [("MODIFIED", name, follower.stop_at)]
    kinds = ["watch" if request.watch else "list" for request in proxy.requests(lambda r: r.path == "/api/v1/nodes")]
    # The first watch ended on time: the next one starts from its last resourceVersion, with no LIST between.
    assert kinds[:7] == ["list", "watch", "watch", "list", "watch", "list", "watch"]
    assert follower.failed == []


def test_following_reports_a_failing_list_and_starts_again_from_a_list_after_a_growing_backoff(cluster, kube, proxy):
    """The LIST fails (503, no retry: the call's deadline is 0) until two failures were reported."""
    name = kube.gpu_nodes()[0]
    follower = Follower(kube_api(cluster, proxy.url, deadline=0, random=lambda: 0.0, sleep=Sleeps()))
    proxy.add(
        Fault(lambda request: node_list(request) and len(follower.failed) < 2, "status", times=None, status=503),
        Fault(node_watch, "forward", hook=marking(kube, name, follower.stop_at)),
    )

    follower.run()

    assert [error.status for error in follower.failed] == [503, 503]
    assert follower.failed[0].msg.startswith("Failed to list nodes: injected by the test proxy (HTTP 503).")
    policy = follower.api.retry_policy
    assert policy.sleep.asked == [policy.backoff(0), policy.backoff(1)]
    assert follower.events[-1] == ("MODIFIED", name, follower.stop_at)
    assert [request.action for request in proxy.requests(node_list)] == ["status", "status", "forward"]
