# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a command in a pod's container through the pods/exec API, as ``kubectl exec`` does.

The API server upgrades the request to a websocket and relays it to the kubelet of the pod's node,
which runs the command in the container; stdout, stderr and the exit status come back on channels
1, 2 and 3 (``k8s.io/apimachinery/pkg/util/remotecommand``). RBAC: the websocket is authorized as
``get`` on ``pods/exec`` before Kubernetes 1.30 and as ``create`` from then on.

Nothing here is retried: a command may have run even when its answer was lost.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import time

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import (
    FORBIDDEN,
    GpuShareError,
    forbidden_hint,
)

try:
    import websocket
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException
    from kubernetes.stream import stream
except ImportError:  # reported by GpuShareModule
    websocket = k8s = stream = None
    ApiException = None

STDOUT_CHANNEL = 1
STDERR_CHANNEL = 2
STATUS_CHANNEL = 3
# kubectl's rule for the container of `kubectl exec` without -c: this annotation, else the first container.
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
# How the API server says it could not connect to the kubelet (k8s.io/apimachinery proxy's dialer).
KUBELET_UNREACHABLE_MARK = "error dialing backend"

# websocket-client puts the refused handshake's status line and body in its message
# ("Handshake status 500 Internal Server Error -+-+- {headers} -+-+- {body}"); the body is a Status.
_HANDSHAKE_STATUS = re.compile(r"Handshake status (\d{3})")
_STATUS_MESSAGE = re.compile(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)"')


class ExecResult(object):
    """What the command printed (``stdout``, ``stderr``) and its ``exit_code``."""

    def __init__(self, stdout, stderr, exit_code):
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code


class KubeletUnreachable(GpuShareError):
    """The API server accepted the exec but could not reach the kubelet of the pod's node."""


def default_container(pod):
    """The container ``kubectl exec`` would pick in ``pod`` (a dict)."""
    annotations = pod["metadata"].get("annotations") or {}
    names = [container["name"] for container in pod["spec"]["containers"]]
    wanted = annotations.get(DEFAULT_CONTAINER_ANNOTATION)
    return wanted if wanted in names else names[0]


def _one_line(text):
    return " ".join(str(text).split())


def _refusal(reason):
    """(HTTP status or None, the API server's message) from a failed websocket handshake's text."""
    status = _HANDSHAKE_STATUS.search(reason)
    message = _STATUS_MESSAGE.search(reason)
    if message:
        text = json.loads('"%s"' % message.group(1))
    elif status:
        text = reason.split(" -+-+- ")[0]
    else:
        text = reason
    return (int(status.group(1)) if status else None), _one_line(text)


def _exit_code(status_text, what):
    """The exit code the status channel reports; GpuShareError when the command could not run at all."""
    status = json.loads(status_text) if status_text.strip() else {}
    if status.get("status") == "Success":
        return 0
    causes = (status.get("details") or {}).get("causes") or []
    if status.get("reason") == "NonZeroExitCode":
        for cause in causes:
            if cause.get("reason") == "ExitCode":
                return int(cause["message"])
    raise GpuShareError("%s failed: %s" % (what, _one_line(status.get("message") or status_text or "no exit status")))


def exec_in_pod(api_client, pod, container, command, timeout):
    """Run ``command`` (a list) in ``container`` of ``pod`` (a dict); an ExecResult within ``timeout`` seconds.

    Raises KubeletUnreachable when the API server could not connect to the node's kubelet, and
    GpuShareError for every other failure (refused, not runnable, no answer in time), each naming the
    pod and its node.
    """
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    node = pod["spec"].get("nodeName")
    what = "pods/exec to %s/%s (container %s) on node %s" % (namespace, name, container, node)
    # websocket-client reads this default for the handshake and every read: without it a kubelet that
    # never answers would hold the module forever. The module process runs one such call at a time.
    websocket.setdefaulttimeout(timeout)
    started = time.monotonic()
    try:
        connection = stream(
            k8s.CoreV1Api(api_client).connect_get_namespaced_pod_exec,
            name,
            namespace,
            command=list(command),
            container=container,
            stdin=False,
            stdout=True,
            stderr=True,
            tty=False,
            _preload_content=False,
        )
    except ApiException as exc:
        status, message = _refusal(str(exc.reason))
        if KUBELET_UNREACHABLE_MARK in message:
            raise KubeletUnreachable("%s failed: %s" % (what, message), status=status)
        hint = forbidden_hint(message) if status == FORBIDDEN else None
        raise GpuShareError("%s failed: %s%s" % (what, message, ". " + hint if hint else ""), status=status)
    try:
        connection.run_forever(timeout=max(0.0, timeout - (time.monotonic() - started)))
        if connection.is_open():
            raise GpuShareError("%s did not finish within %s seconds" % (what, timeout))
        stdout = connection.read_channel(STDOUT_CHANNEL)
        stderr = connection.read_channel(STDERR_CHANNEL)
        status_text = connection.read_channel(STATUS_CHANNEL)
    except (websocket.WebSocketException, OSError) as exc:
        raise GpuShareError("%s broke off: %s" % (what, _one_line(exc) or type(exc).__name__))
    finally:
        connection.close()
    return ExecResult(stdout, stderr, _exit_code(status_text, what))
