# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeApi through the kubernetes client that is installed, end to end over HTTP to a local stand-in of the API
server: the client is built from the connection options, and a LIST, a merge patch, a 404, a 403 and a watch go
through its ApiClient (kube/api.py sends by path: ``param_serialize`` + ``call_api`` in kubernetes >= 35, the older
``call_api`` before). The tests run kubernetes 37 (requirements-dev.txt); the same file run in a venv with the
oldest kubernetes the collection claims (requirements.txt, the k8s_auth fragment) checks the older generation:
issue 29 did so with kubernetes 31.0.0."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube import client as kube_client
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import KubeApi

TOKEN = "stand-in-token"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "resourceVersion": "7", "labels": {}}}


class StandIn(BaseHTTPRequestHandler):
    """Answers nodes (list, patch, watch) and a missing ConfigMap; records each request."""

    requests = []

    def log_message(self, *args):
        pass

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.requests.append(
            dict(
                method=self.command,
                path=self.path,
                authorization=self.headers.get("Authorization"),
                content_type=self.headers.get("Content-Type"),
                body=json.loads(body) if body else None,
            )
        )

    def do_GET(self):
        self._record()
        if self.path.startswith("/api/v1/nodes?") and "watch=true" in self.path.lower():
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            for kind in ("MODIFIED", "BOOKMARK"):
                self.wfile.write((json.dumps({"type": kind, "object": NODE}) + "\n").encode())
            self.wfile.flush()
            self.close_connection = True
            return
        if self.path.startswith("/api/v1/nodes"):
            return self._answer(200, {"kind": "NodeList", "metadata": {"resourceVersion": "8"}, "items": [NODE]})
        if "/configmaps/" in self.path:
            status = {"kind": "Status", "code": 404, "reason": "NotFound", "message": 'configmaps "absent" not found'}
            return self._answer(404, status)
        status = {"kind": "Status", "code": 403, "reason": "Forbidden", "message": 'secrets "licence" is forbidden'}
        return self._answer(403, status)

    def do_PATCH(self):
        self._record()
        return self._answer(200, dict(NODE, metadata=dict(NODE["metadata"], labels=self.requests[-1]["body"])))


@pytest.fixture
def stand_in():
    StandIn.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_kube_api_through_the_installed_client(stand_in, monkeypatch):
    monkeypatch.setattr(kube_client, "_client_pool", {})
    api = KubeApi(kube_client.get_api_client(dict(host=stand_in, api_key=TOKEN, validate_certs=False)))

    items, version = api.list_nodes(label_selector="nvidia.com/gpu.present=true")
    patched = api.patch_node("gpu-1", {"a": "b"})
    missing = api.get_config_map("gpu-operator", "absent")
    with pytest.raises(GpuShareError) as forbidden:
        api.get_secret("gpu-operator", "licence")
    events = list(api.watch_nodes(version, 1))

    assert (items, version) == ([NODE], "8")
    assert patched["metadata"]["labels"] == {"a": "b"}
    assert missing is None
    assert forbidden.value.status == 403 and "licence" in str(forbidden.value)
    assert [kind for kind, _ in events] == ["MODIFIED", "BOOKMARK"]
    listed, patch, get, _, watch = StandIn.requests
    assert urlsplit(listed["path"]).path == "/api/v1/nodes"
    assert parse_qs(urlsplit(listed["path"]).query) == {"labelSelector": ["nvidia.com/gpu.present=true"]}
    assert {request["authorization"] for request in StandIn.requests} == {"Bearer " + TOKEN}
    assert (patch["method"], patch["content_type"], patch["body"]) == (
        "PATCH",
        "application/merge-patch+json",
        {"a": "b"},
    )
    assert get["path"] == "/api/v1/namespaces/gpu-operator/configmaps/absent"
    watched = parse_qs(urlsplit(watch["path"]).query)
    assert (watched["resourceVersion"], watched["timeoutSeconds"]) == (["8"], ["1"])


def test_urllib3_pools_of_the_client_retry_nothing():
    # KubeApi decides every retry; urllib3 would otherwise retry a DELETE whose connection broke.
    api = KubeApi(kube_client.get_api_client(dict(host="https://127.0.0.1:9", api_key=TOKEN)))
    assert api.api_client.rest_client.pool_manager.connection_pool_kw["retries"] is False
