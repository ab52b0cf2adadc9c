"""The kubelets' exec endpoint: ``pods/exec`` answered for every simulated node, by one TLS server.

kube-apiserver 1.20 relays ``pods/exec`` to the kubelet of the pod's node: it dials the node's InternalIP
(``--kubelet-preferred-address-types=InternalIP``) at ``status.daemonEndpoints.kubeletEndpoint.Port`` and
forwards the client's websocket upgrade to ``/exec/<namespace>/<pod>/<container>?command=...&output=1&error=1``
(its UpgradeAwareHandler; ``input``, ``output``, ``error`` for the client's stdin, stdout, stderr), then relays
the bytes both ways. Every seeded node has the InternalIP 127.0.0.1 and this server's port (``kubelet_port``:
the API server's port + 3, in the cluster's block of ports); the server's certificate comes from the cluster
CA, and, as a kubelet, it serves only clients with a certificate of that CA (the API server's
``--kubelet-client-certificate``).

What a 1.20 kubelet (``pkg/kubelet/server``, ``pkg/kubelet/cri/streaming/remotecommand``) answers, and
what this one does too: 400 without any of stdin, stdout, stderr; 404 ``pod does not exist``; 500
``container not found ("<name>")`` for a container that is not running; else the websocket handshake
(subprotocol ``v4.channel.k8s.io``, the only one served here; kubectl 1.20's SPDY is not), an empty frame
on stdout once connected, the output on channels 1 (stdout) and 2 (stderr), the exit status as a Status on
channel 3, and a close frame.

The container runtime: ``nvidia-smi`` runs in the containers of the driver and container-toolkit pods
(``nvidia_smi.py`` prints it from the node's simulated GPUs); every other command, and nvidia-smi in any
other pod, is not found, as the node's runtime (``status.nodeInfo.containerRuntimeVersion``) reports it:
CRI-O with crun prints why and exits 127, containerd fails the exec with an internal error.
"""

import base64
import hashlib
import http.server
import json
import logging
import secrets
import ssl
import struct
import threading
import urllib.parse

from testbed.simulator import nvidia_smi
from testbed.simulator.names import APPLIED_ANNOTATION, HARDWARE_ANNOTATION

log = logging.getLogger(__name__)

# The kubelets listen in the cluster's block of ports (testbed/cluster.py: API server +0, controller-manager +1,
# scheduler +2).
KUBELET_PORT_OFFSET = 3
KUBELET_ADDRESS = "127.0.0.1"
SUBPROTOCOL = "v4.channel.k8s.io"
WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
STDOUT_CHANNEL, STDERR_CHANNEL, STATUS_CHANNEL = 1, 2, 3
BINARY_FRAME, CLOSE_FRAME = 0x2, 0x8
NORMAL_CLOSURE = 1000
# Where nvidia-smi is installed: the operator's driver DaemonSets (one per kernel or RHCOS version on OpenShift,
# named with it as a suffix) and, for drivers preinstalled on the host, its container-toolkit DaemonSet.
NVIDIA_SMI_DAEMONSET_PREFIX = "nvidia-driver-daemonset"
NVIDIA_SMI_TOOLKIT_DAEMONSET = "nvidia-container-toolkit-daemonset"
NOT_FOUND_EXIT_CODE = 127
# The query parameters the API server names the client's streams with (core/v1 ExecStdinParam...).
STREAM_PARAMS = {"stdin": "input", "stdout": "output", "stderr": "error"}
# How long a connection may stay silent before it is dropped: every exec here answers at once (a real kubelet
# waits --streaming-connection-idle-timeout, 4 hours, for interactive sessions).
CONNECTION_TIMEOUT_SECONDS = 30


def kubelet_port(api_server_url):
    """The port of the simulated kubelets of the cluster whose API server is at ``api_server_url``."""
    return urllib.parse.urlsplit(api_server_url).port + KUBELET_PORT_OFFSET


# what runs: the command and the runtime's answer ---------------------------------------------------------


def _status(status, message=None, reason=None, causes=None, code=None):
    """A metav1.Status as the kubelet's json.Marshal writes it (fields in Go's order, empty ones left out)."""
    body = {"metadata": {}, "status": status}
    for key, value in (("message", message), ("reason", reason), ("details", causes), ("code", code)):
        if value is not None:
            body[key] = {"causes": value} if key == "details" else value
    return json.dumps(body, separators=(",", ":"))


def exit_status(runtime, command, exit_code):
    """What the kubelet writes on channel 3 once ``command`` exited with ``exit_code`` under ``runtime``."""
    if exit_code == 0:
        return _status("Success")
    if runtime.startswith("containerd"):  # containerd's CRI: exec.CodeExitError
        error = "error executing command [%s], exit code %d" % (" ".join(command), exit_code)
    else:  # CRI-O runs the OCI runtime's exec: an os/exec ExitError
        error = "exit status %d" % exit_code
    return _status(
        "Failure",
        message="command terminated with non-zero exit code: " + error,
        reason="NonZeroExitCode",
        causes=[{"reason": "ExitCode", "message": str(exit_code)}],
    )


def not_found(runtime, command):
    """(stdout, stderr, status) for ``command`` whose executable the container does not have."""
    if runtime.startswith("containerd"):
        error = (
            'error executing command in container: failed to exec in container: failed to start exec "%s": '
            'OCI runtime exec failed: exec failed: unable to start container process: exec: "%s": '
            "executable file not found in $PATH: unknown" % (secrets.token_hex(32), command[0])
        )
        status = _status("Failure", "Internal error occurred: " + error, "InternalError", [{"message": error}], 500)
        return "", "", status
    stderr = "executable file `%s` not found in $PATH: No such file or directory\n" % command[0]
    return "", stderr, exit_status(runtime, command, NOT_FOUND_EXIT_CODE)


def runs_nvidia_smi(pod):
    """True for a pod of the driver or container-toolkit DaemonSet."""
    return any(
        owner.get("kind") == "DaemonSet"
        and (owner["name"].startswith(NVIDIA_SMI_DAEMONSET_PREFIX) or owner["name"] == NVIDIA_SMI_TOOLKIT_DAEMONSET)
        for owner in pod["metadata"].get("ownerReferences") or []
    )


def execute(pod, node, command):
    """(stdout, stderr, status on channel 3) of ``command`` (a list) run in ``pod`` on ``node`` (dicts)."""
    runtime = node["status"]["nodeInfo"]["containerRuntimeVersion"]
    if command[0] != "nvidia-smi" or not runs_nvidia_smi(pod):
        return not_found(runtime, command)
    annotations = node["metadata"].get("annotations") or {}
    hardware = json.loads(annotations[HARDWARE_ANNOTATION]) if HARDWARE_ANNOTATION in annotations else None
    layout = json.loads(annotations.get(APPLIED_ANNOTATION) or "{}").get("migLayout")
    stdout, stderr, exit_code = nvidia_smi.run(node["metadata"]["name"], hardware, layout, command[1:])
    return stdout, stderr, exit_status(runtime, command, exit_code)


# the endpoint ----------------------------------------------------------------------------------------------


def frame(opcode, payload):
    """One unmasked, final websocket frame (RFC 6455 section 5.2), as a server sends it."""
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, length)
    return header + payload


def channel_frame(channel, data):
    return frame(BINARY_FRAME, bytes([channel]) + data.encode())


class _ExecHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = CONNECTION_TIMEOUT_SECONDS

    def setup(self):
        # The TLS handshake happens here, in the connection's own thread, not in the accepting one.
        self.request = self.server.tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def finish(self):
        super().finish()
        self.request.close()  # as the kubelet closes the connection after its close frame

    def log_message(self, fmt, *args):
        log.debug("%s %s", self.address_string(), fmt % args)

    def _refuse(self, code, message):
        body = message.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 - http.server's naming
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.split("/")
        if len(parts) != 5 or parts[1] != "exec":
            return self._refuse(404, "404 page not found\n")
        _empty, _exec, namespace, name, container = parts
        query = urllib.parse.parse_qs(url.query)
        streams = {stream: query.get(param) == ["1"] for stream, param in STREAM_PARAMS.items()}
        if not any(streams.values()):
            return self._refuse(400, "you must specify at least 1 of stdin, stdout, stderr")
        pod = self.server.cluster.pods.get(name, namespace)
        if pod is None:
            return self._refuse(404, "pod does not exist")
        running = [
            status["name"]
            for status in (pod.get("status") or {}).get("containerStatuses") or []
            if "running" in (status.get("state") or {})
        ]
        node = self.server.cluster.node(pod["spec"]["nodeName"])
        if container not in running or node is None:
            return self._refuse(500, 'container not found ("%s")' % container)
        if not self._upgrade():
            return None
        # The API server refuses an exec without a command before it gets here.
        stdout, stderr, status = execute(pod, node, query["command"])
        log.info("exec in %s/%s (%s) on %s: %s", namespace, name, container, node["metadata"]["name"], status)
        # The kubelet tells the client it is connected with an empty frame on its lowest writable channel.
        first = STDOUT_CHANNEL if streams["stdout"] else STDERR_CHANNEL if streams["stderr"] else STATUS_CHANNEL
        frames = [channel_frame(first, "")]
        if stdout and streams["stdout"]:
            frames.append(channel_frame(STDOUT_CHANNEL, stdout))
        if stderr and streams["stderr"]:
            frames.append(channel_frame(STDERR_CHANNEL, stderr))
        frames.append(channel_frame(STATUS_CHANNEL, status))
        frames.append(frame(CLOSE_FRAME, struct.pack("!H", NORMAL_CLOSURE)))
        self.wfile.write(b"".join(frames))
        self.close_connection = True
        return None

    def _upgrade(self):
        """Complete the websocket handshake with the v4 channel subprotocol; False (and a 400) if it cannot."""
        upgrade = self.headers.get("Upgrade", "").lower()
        if upgrade != "websocket":
            self._refuse(
                400, "the simulated kubelet streams over websockets (%s) only, not %r" % (SUBPROTOCOL, upgrade)
            )
            return False
        requested = [item.strip() for item in self.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        if SUBPROTOCOL not in requested:
            self._refuse(400, "requested protocol(s) are not supported: %s; supports [%s]" % (requested, SUBPROTOCOL))
            return False
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", SUBPROTOCOL)
        self.end_headers()
        return True


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        log.warning("kubelet connection from %s failed", client_address, exc_info=True)


class KubeletExecServer(object):
    """The exec endpoint of every simulated node; ``cluster`` gives the cached pods (``.pods``) and ``.node()``."""

    def __init__(self, cluster, port, certfile, keyfile, client_ca):
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(certfile, keyfile)
        tls.load_verify_locations(client_ca)
        tls.verify_mode = ssl.CERT_REQUIRED
        self.server = _Server((KUBELET_ADDRESS, port), _ExecHandler)
        self.server.tls = tls
        self.server.cluster = cluster

    def start(self):
        threading.Thread(target=self.server.serve_forever, name="kubelet-exec", daemon=True).start()
        log.info("kubelet exec endpoint on %s:%d", *self.server.server_address)
