"""KubeApi and the waits against the real API server when the path to it fails.

A small TLS proxy on 127.0.0.1 (``FaultProxy``, threads, one request per connection, stops by
itself) sits between a KubeApi and the test cluster's kube-apiserver. It serves the API server's own
certificate (signed by the cluster CA, valid for 127.0.0.1), forwards each request over a new TLS
connection, and can, for the requests a ``Fault`` matches: answer 429 with Retry-After, 503 or 410
itself; reset the connection before or after forwarding; cut a watch after its response head, with
or without ending the chunked stream; or answer a watch with an ERROR event. Everything else is the
real API server: the objects, the resourceVersions, the watch events and the error messages.

Nothing here asserts on wall-clock time: retries are observed through the proxy's record of what it
saw and did, the waits the policy asked for, and the API server's audit log.
"""

import http
import json
import select
import socket
import ssl
import struct
import threading
import time
import urllib.parse
import uuid

import pytest
from integration_helpers import ONE_PROFILE, labels
from kubernetes import client

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError, OutcomeUnknown, WatchDropped
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import KubeApi
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.retry import RetryPolicy
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_nodes

pytestmark = ONE_PROFILE  # the client's retries and waits: no platform difference

LABEL = "resilience.gpushare.k8s/mark"
WAIT = 60  # seconds any wait here may take at most; none should take more than a few
IO_TIMEOUT = 30  # seconds a proxy socket may block


# --- the proxy --------------------------------------------------------------------------------


class Request(object):
    """A request the proxy received: ``method``, ``path``, ``query`` (dict), ``watch``; ``action``
    is what the proxy did with it."""

    def __init__(self, method, target):
        self.method = method
        url = urllib.parse.urlsplit(target)
        self.path = url.path
        self.query = dict(urllib.parse.parse_qsl(url.query))
        self.watch = self.query.get("watch") in ("true", "1")
        self.action = None

    def __repr__(self):
        return "%s %s%s -> %s" % (self.method, self.path, " (watch)" if self.watch else "", self.action)


class Fault(object):
    """What the proxy does instead of forwarding to the next ``times`` requests ``match`` accepts
    (None: all of them).

    Actions: ``status`` (answer ``status`` itself, with ``retry_after`` if given), ``reset-before``
    (reset the connection without forwarding), ``reset-after-response`` (forward, read the whole
    answer, reset), ``reset-after-head`` / ``cut-after-head`` / ``end-after-head`` (forward, relay
    the answer's head, then reset / close without ending the chunked body / end the chunked body),
    ``error-event`` (answer 200 with the ERROR event of Status ``status``), ``forward`` (forward, for
    a ``hook`` only). ``hook()`` runs once the fault has done its part but before the client can
    learn anything more: after the head is relayed, or before the answer or reset.
    """

    def __init__(self, match, action, times=1, status=None, retry_after=None, message=None, hook=None):
        self.match = match
        self.action = action
        self.times = times
        self.status = status
        self.retry_after = retry_after
        self.message = message or "injected by the test proxy"
        self.hook = hook


def node_list(request):
    return request.method == "GET" and request.path == "/api/v1/nodes" and not request.watch


def node_watch(request):
    return request.method == "GET" and request.path == "/api/v1/nodes" and request.watch


def node_patch(request):
    return request.method == "PATCH" and request.path.startswith("/api/v1/nodes/")


def status_body(code, message):
    reason = {409: "AlreadyExists", 410: "Expired", 429: "TooManyRequests", 503: "ServiceUnavailable"}.get(code, "")
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class FaultProxy(object):
    """The proxy on ``127.0.0.1:port`` (0: any free port) in front of ``cluster``'s API server.

    ``seen`` lists every Request in arrival order. The proxy stops on ``stop()`` or by itself after
    ``lifetime`` seconds; its threads are daemons that check for that at least twice a second.
    """

    def __init__(self, cluster, port=0, lifetime=300):
        upstream = urllib.parse.urlsplit(cluster.server())
        self.upstream = (upstream.hostname, upstream.port)
        self.server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_context.load_cert_chain(cluster.path("pki", "apiserver.crt"), cluster.path("pki", "apiserver.key"))
        self.client_context = ssl.create_default_context(cafile=cluster.ca_cert)
        self.port = port
        self.lifetime = lifetime
        self.faults = []
        self.seen = []
        self.errors = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._listener = None
        self._threads = []

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    def start(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(32)
        listener.settimeout(0.2)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._started = time.monotonic()
        self._spawn(self._accept)
        return self

    def stop(self):
        self._stopped.set()
        for thread in list(self._threads):
            thread.join(timeout=5)
        if self._listener is not None:
            self._listener.close()

    def add(self, *faults):
        with self._lock:
            self.faults.extend(faults)

    def requests(self, match):
        with self._lock:
            return [request for request in self.seen if match(request)]

    # --- plumbing ---------------------------------------------------------------------------

    def _spawn(self, target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _done(self):
        return self._stopped.is_set() or time.monotonic() - self._started > self.lifetime

    def _accept(self):
        while not self._done():
            try:
                raw, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self._spawn(self._serve, raw)
        self._listener.close()

    def _take(self, request):
        with self._lock:
            self.seen.append(request)
            for fault in self.faults:
                if fault.times != 0 and fault.match(request):
                    if fault.times is not None:
                        fault.times -= 1
                    request.action = fault.action
                    return fault
            request.action = "forward"
            return None

    def _serve(self, raw):
        raw.settimeout(IO_TIMEOUT)
        try:
            conn = self.server_context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        try:
            self._handle(conn)
        except (OSError, ssl.SSLError) as exc:
            self.errors.append(exc)
        finally:
            conn.close()

    def _handle(self, conn):
        head, body = read_request(conn)
        if head is None:
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        request = Request(method, target)
        fault = self._take(request)
        action = fault.action if fault else "forward"
        hook = (fault.hook if fault else None) or (lambda: None)

        if action == "status":
            hook()
            extra = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            conn.sendall(response(fault.status, json.dumps(status_body(fault.status, fault.message)), extra))
            return
        if action == "error-event":
            hook()
            event = json.dumps({"type": "ERROR", "object": status_body(fault.status, fault.message)}) + "\n"
            conn.sendall(chunked_response([event.encode()]))
            return
        if action == "reset-before":
            hook()
            reset(conn)
            return

        # Forward, on a connection of its own that the API server closes after answering.
        kept = [line for line in lines[1:] if line and not line.lower().startswith(("connection:", "keep-alive:"))]
        upstream = socket.create_connection(self.upstream, timeout=IO_TIMEOUT)
        upstream = self.client_context.wrap_socket(upstream, server_hostname=self.upstream[0])
        try:
            upstream.sendall(("\r\n".join([lines[0]] + kept + ["Connection: close", "", ""])).encode("latin-1") + body)
            if action == "reset-after-response":
                read_all(upstream)
                hook()
                reset(conn)
                return
            answer_head, rest = read_head(upstream)
            if action == "forward":
                conn.sendall(answer_head + rest)
                hook()
                self._pump(upstream, conn)
                return
            conn.sendall(answer_head)
            hook()
            if action == "reset-after-head":
                reset(conn)
            elif action == "cut-after-head":
                conn.shutdown(socket.SHUT_RDWR)
            elif action == "end-after-head":
                conn.sendall(b"0\r\n\r\n")
            else:
                raise AssertionError("unknown action %s" % action)
        finally:
            upstream.close()

    def _pump(self, upstream, conn):
        """Relay the answer until the API server closes the connection or the client does."""
        while not self._done():
            ready = [upstream] if upstream.pending() else select.select([upstream, conn], [], [], 0.5)[0]
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                if sock is upstream:
                    conn.sendall(data)


def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("connection closed before the end of the head")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head + b"\r\n\r\n", rest


def read_request(conn):
    try:
        head, body = read_head(conn)
    except OSError:
        return None, None
    length = 0
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head[:-4], body


def read_all(sock):
    while sock.recv(65536):
        pass


def reset(conn):
    """Close with a TCP reset (RST), as a crashed peer or a middlebox does."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def response(status, body, headers=None):
    lines = ["HTTP/1.1 %d %s" % (status, http.HTTPStatus(status).phrase), "Content-Type: application/json"]
    lines += ["%s: %s" % item for item in (headers or {}).items()]
    lines += ["Content-Length: %d" % len(body.encode()), "Connection: close", "", body]
    return "\r\n".join(lines).encode()


def chunked_response(chunks):
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
    return head.encode() + body + b"0\r\n\r\n"


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def proxy(cluster):
    proxy = FaultProxy(cluster).start()
    yield proxy
    proxy.stop()


class Sleeps(object):
    """The policy's sleep: records each wait asked for, then really waits (backoff is real here)."""

    def __init__(self, then=None):
        self.asked = []
        self.then = then

    def __call__(self, seconds):
        self.asked.append(seconds)
        if self.then is not None:
            self.then()
            self.then = None
        time.sleep(seconds)


def kube_api(cluster, url, who="admin", **policy):
    """A KubeApi like a module's (bearer token, CA-verified TLS) whose API server is ``url``."""
    configuration = client.Configuration()
    configuration.host = url
    configuration.ssl_ca_cert = cluster.ca_cert
    configuration.verify_ssl = True
    configuration.api_key = {"authorization": "Bearer %s" % cluster.token(who)}
    policy.setdefault("sleep", Sleeps())
    return KubeApi(client.ApiClient(configuration), RetryPolicy(**policy))


def marked(value):
    """The expectation of a node carrying LABEL=value."""

    def problem(node):
        found = labels(node).get(LABEL)
        return None if found == value else "%s=%s (want %s)" % (LABEL, found, value)

    return problem


def mark_node(kube, name):
    """Label node ``name`` through the harness (straight to the API server); returns the value."""
    value = uuid.uuid4().hex[:12]
    return value, lambda: kube.label_node(name, {LABEL: value})


# --- reads ------------------------------------------------------------------------------------


def test_a_list_succeeds_after_throttling_server_errors_and_a_reset(cluster, kube, proxy):
    proxy.add(
        Fault(node_list, "status", times=2, status=429, retry_after=1, message="too many requests, try again"),
        Fault(node_list, "status", status=503, message="the server is currently unable to handle the request"),
        Fault(node_list, "reset-before"),
    )
    api = kube_api(cluster, proxy.url)

    items, resource_version = api.list_nodes()

    assert sorted(item["metadata"]["name"] for item in items) == sorted(kube.gpu_nodes() + kube.cpu_nodes())
    assert int(resource_version) > 0
    assert [request.action for request in proxy.requests(node_list)] == [
        "status",
        "status",
        "status",
        "reset-before",
        "forward",
    ]
    asked = api.retry_policy.sleep.asked
    assert len(asked) == 4
    assert asked[0] >= 1 and asked[1] >= 1  # Retry-After: 1 honoured


def test_a_read_gives_up_at_its_deadline_with_the_servers_answer(cluster, proxy):
    proxy.add(Fault(node_list, "status", times=None, status=503, message="etcdserver: leader changed"))
    api = kube_api(cluster, proxy.url, deadline=2)

    with pytest.raises(GpuShareError) as error:
        api.list_nodes()

    attempts = len(proxy.requests(node_list))
    assert attempts >= 2
    assert error.value.status == 503
    assert error.value.msg.startswith(
        "Failed to list nodes: etcdserver: leader changed (HTTP 503). Gave up after %d attempts in " % attempts
    )
    assert sum(api.retry_policy.sleep.asked) <= 2  # no wait past the deadline


def test_an_unreachable_api_server_is_one_clean_error(cluster):
    port = free_port()
    api = kube_api(cluster, "https://127.0.0.1:%d" % port, deadline=1)

    with pytest.raises(GpuShareError) as error:
        api.list_nodes()

    assert error.value.msg.startswith("Failed to list nodes: cannot reach the Kubernetes API: ")
    assert "Connection refused" in error.value.msg and "Gave up after" in error.value.msg
    assert len(api.retry_policy.sleep.asked) >= 1


# --- watches ----------------------------------------------------------------------------------


def test_watch_errors_carry_the_servers_message_and_name_the_watch(cluster):
    api = kube_api(cluster, cluster.server(), who="nobody")

    with pytest.raises(GpuShareError) as error:
        list(api.watch_nodes("0", 5))

    assert error.value.status == 403 and error.value.reason == "Forbidden"
    assert error.value.msg.startswith('Failed to watch nodes: nodes is forbidden: User "gpushare-nobody" cannot watch')
    # The server's message, then what to grant (errors.py names the verb, the resource and the shipped role).
    assert "(HTTP 403). The identity lacks 'watch' on 'nodes'" in error.value.msg


def test_a_watch_cut_mid_stream_is_one_clean_error(cluster, proxy):
    proxy.add(Fault(node_watch, "cut-after-head"))
    api = kube_api(cluster, proxy.url)
    _, resource_version = api.list_nodes()

    with pytest.raises(WatchDropped) as error:
        list(api.watch_nodes(resource_version, 30))

    assert error.value.msg.startswith("Failed to watch nodes: the watch stream broke off: ")
    assert [request.action for request in proxy.requests(node_watch)] == ["cut-after-head"]


@pytest.mark.parametrize("action", ["cut-after-head", "end-after-head"])
def test_wait_for_nodes_relists_after_a_dropped_watch_and_sees_the_change(cluster, kube, proxy, action):
    """The change is made while the watch is down: only the fresh LIST can show it."""
    name = kube.gpu_nodes()[0]
    value, change = mark_node(kube, name)
    proxy.add(Fault(node_watch, action, hook=change))
    api = kube_api(cluster, proxy.url)

    final = wait_for_nodes(api, {name: marked(value)}, WAIT, "the mark on %s" % name)

    assert labels(final[name])[LABEL] == value
    kinds = ["watch" if request.watch else "list" for request in proxy.requests(lambda r: r.path == "/api/v1/nodes")]
    assert kinds[:3] == ["list", "watch", "list"]
    assert proxy.requests(node_watch)[0].action == action


def test_wait_for_nodes_survives_a_connection_reset_mid_watch(cluster, kube, proxy):
    """Reset right after the watch's head: the client sees it while starting the watch (a read,
    retried) or while reading it (a drop, LIST again), depending on when the reset lands; the wait
    ends with the change either way."""
    name = kube.gpu_nodes()[0]
    value, change = mark_node(kube, name)
    proxy.add(Fault(node_watch, "reset-after-head", hook=change))
    api = kube_api(cluster, proxy.url)

    final = wait_for_nodes(api, {name: marked(value)}, WAIT, "the mark on %s" % name)

    assert labels(final[name])[LABEL] == value
    requests = proxy.requests(lambda request: request.path == "/api/v1/nodes")
    assert [request.action for request in requests[:2]] == ["forward", "reset-after-head"]
    assert len(requests) >= 3  # then a LIST, or the watch tried again


def test_a_watch_the_server_ends_resumes_from_the_last_resource_version(cluster, kube, proxy):
    """Watches of at most 2 s: the first ends on time, the next starts where it stopped (no LIST),
    and the change made once it runs arrives as an event."""
    name = kube.gpu_nodes()[0]
    value, change = mark_node(kube, name)
    proxy.add(Fault(node_watch, "forward"), Fault(node_watch, "forward", hook=change))
    api = kube_api(cluster, proxy.url, max_watch_seconds=2)

    final = wait_for_nodes(api, {name: marked(value)}, WAIT, "the mark on %s" % name)

    assert labels(final[name])[LABEL] == value
    lists, watches = proxy.requests(node_list), proxy.requests(node_watch)
    assert len(lists) == 1 and len(watches) >= 2
    assert watches[0].query["timeoutSeconds"] == "2"
    assert int(watches[1].query["resourceVersion"]) >= int(watches[0].query["resourceVersion"])


@pytest.mark.parametrize("how", ["error-event", "status"])
def test_an_expired_watch_relists_and_sees_the_change(cluster, kube, proxy, how):
    """410 Gone, as an ERROR event in the stream (how the API server's watch cache says it) or as
    the status of the watch request."""
    name = kube.gpu_nodes()[0]
    value, change = mark_node(kube, name)
    proxy.add(Fault(node_watch, how, status=410, message="too old resource version: 1 (999)", hook=change))
    api = kube_api(cluster, proxy.url)

    final = wait_for_nodes(api, {name: marked(value)}, WAIT, "the mark on %s" % name)

    assert labels(final[name])[LABEL] == value
    kinds = ["watch" if request.watch else "list" for request in proxy.requests(lambda r: r.path == "/api/v1/nodes")]
    assert kinds[:3] == ["list", "watch", "list"]
    assert api.retry_policy.sleep.asked == []  # an expired watch is no failure: no backoff


# --- writes -----------------------------------------------------------------------------------


def test_a_write_is_not_retried_after_an_ambiguous_failure(cluster, kube, proxy, audit_writes):
    """The PATCH reaches the API server, which applies it; the answer never comes back. Trying
    again would be blind: the error says the outcome is unknown, and the write happened once."""
    name = kube.gpu_nodes()[0]
    value = uuid.uuid4().hex[:12]
    proxy.add(Fault(node_patch, "reset-after-response"))
    api = kube_api(cluster, proxy.url)

    with audit_writes() as audit:
        with pytest.raises(OutcomeUnknown) as error:
            api.patch_node(name, {"metadata": {"labels": {LABEL: value}}})

    msg = error.value.msg
    assert msg.startswith("Failed to patch node %s: cannot reach the Kubernetes API: " % name)
    assert "Whether it was applied is unknown (the connection broke after the request was sent)" in msg
    assert "running the module again re-reads the cluster and converges" in msg
    assert [request.action for request in proxy.requests(node_patch)] == ["reset-after-response"]
    assert audit.count(verb="patch", resource="nodes") == 1
    assert labels(kube.node(name))[LABEL] == value  # it was applied: a retry would have repeated it
    assert api.retry_policy.sleep.asked == []


def test_a_throttled_write_is_retried_after_retry_after(cluster, kube, proxy, audit_writes):
    name = kube.gpu_nodes()[0]
    value = uuid.uuid4().hex[:12]
    proxy.add(Fault(node_patch, "status", status=429, retry_after=1, message="too many requests"))
    api = kube_api(cluster, proxy.url)

    with audit_writes() as audit:
        patched = api.patch_node(name, {"metadata": {"labels": {LABEL: value}}})

    assert labels(patched)[LABEL] == value
    assert [request.action for request in proxy.requests(node_patch)] == ["status", "forward"]
    assert audit.count(verb="patch", resource="nodes") == 1  # the throttled one never reached it
    assert api.retry_policy.sleep.asked[0] >= 1


def test_a_write_refused_at_connect_is_retried(cluster, kube):
    """Nothing listens at first (connection refused: the request was never sent); the proxy starts
    listening during the first backoff, and the retried write goes through."""
    name = kube.gpu_nodes()[0]
    value = uuid.uuid4().hex[:12]
    proxy = FaultProxy(cluster, port=free_port())
    api = kube_api(cluster, proxy.url, sleep=Sleeps(then=proxy.start))
    try:
        patched = api.patch_node(name, {"metadata": {"labels": {LABEL: value}}})
    finally:
        proxy.stop()

    assert labels(patched)[LABEL] == value
    assert len(api.retry_policy.sleep.asked) == 1
    assert [request.action for request in proxy.requests(node_patch)] == ["forward"]


def test_a_conflicting_create_fails_at_once_with_409(cluster, kube, proxy):
    namespace = kube.namespace
    kube.put_config_map("resilience-test", {"a": "1"})
    api = kube_api(cluster, proxy.url)

    with pytest.raises(GpuShareError) as error:
        api.create_config_map(namespace, "resilience-test", {"a": "2"})

    assert not isinstance(error.value, OutcomeUnknown)
    assert error.value.status == 409
    assert error.value.msg.startswith(
        'Failed to create ConfigMap %s/resilience-test: configmaps "resilience-test" already exists (HTTP 409).'
        % namespace
    )
    assert len(proxy.requests(lambda request: request.method == "POST")) == 1
    assert kube.config_map("resilience-test")["data"] == {"a": "1"}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
