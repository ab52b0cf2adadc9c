"""A fault-injecting TLS proxy on 127.0.0.1 in front of the test cluster's kube-apiserver (``FaultProxy``), for the
tests of what a client does when the path to the API server fails (test_api_resilience.py, test_faults_mid_change.py,
test_eda_resilience.py).

It serves the API server's own certificate (signed by the cluster CA, valid for 127.0.0.1), forwards each request
over a new TLS connection (threads, one request per connection, stops by itself), and can, for the requests a
``Fault`` matches: answer 429 with Retry-After, 503 or 410 itself; reset the connection before or after forwarding;
cut a watch after its response head, with or without ending the chunked stream; or answer a watch with an ERROR
event. ``cut_streams`` cuts the watches being relayed at that moment, mid-stream. Everything else is the real API
server: the objects, the resourceVersions, the watch events and the error messages.
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

import pytest
from kubernetes import client

from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import KubeApi
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.retry import RetryPolicy

IO_TIMEOUT = 30  # seconds a proxy socket may block


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


class _Relay(object):
    """An answer the proxy relays: ``cut`` asks its relay to stop, ``held`` says it stopped, ``released`` lets it
    close the client's connection, ``ended`` says the relay is over (either end closed)."""

    def __init__(self, request):
        self.request = request
        self.cut = threading.Event()
        self.held = threading.Event()
        self.released = threading.Event()
        self.ended = threading.Event()


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
        self._relays = []

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

    def relays(self, match):
        """The answers being relayed now to the requests ``match`` accepts: ``ended`` (an Event) of each says when
        its relay is over."""
        with self._lock:
            return [relay for relay in self._relays if match(relay.request)]

    def cut_streams(self, match, hook=None):
        """Cut, mid-stream, the answers being relayed now to the requests ``match`` accepts (watches): stop relaying
        each, run ``hook()`` (what happens then reaches the API server's stream but never the client), then close the
        client's connections without ending their chunked bodies. Returns the requests cut (their ``action`` is
        ``cut-mid-stream``)."""
        with self._lock:
            relays = [relay for relay in self._relays if match(relay.request)]
        for relay in relays:
            relay.cut.set()
        for relay in relays:
            if not relay.held.wait(IO_TIMEOUT):
                raise AssertionError("the proxy did not stop relaying %r" % relay.request)
            relay.request.action = "cut-mid-stream"
        try:
            if hook is not None:
                hook()
        finally:
            for relay in relays:
                relay.released.set()
        return [relay.request for relay in relays]

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
                self._relay(request, upstream, conn)
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

    def _relay(self, request, upstream, conn):
        """Relay the answer until the API server closes the connection or the client does, or ``cut_streams`` cuts
        it."""
        relay = _Relay(request)
        with self._lock:
            self._relays.append(relay)
        try:
            self._pump(upstream, conn, relay)
        finally:
            with self._lock:
                self._relays.remove(relay)
            relay.ended.set()

    def _pump(self, upstream, conn, relay):
        while not self._done():
            if relay.cut.is_set():
                relay.held.set()
                relay.released.wait(IO_TIMEOUT)
                conn.shutdown(socket.SHUT_RDWR)
                return
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


# --- clients of the proxy ---------------------------------------------------------------------


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


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
