"""The test cluster's certificates pass the strict verification Python 3.13 does by default (RFC 5280,
``ssl.VERIFY_X509_STRICT``), as real clusters' do: a module in an execution environment on Python 3.13 refused the
first CA, which had no keyUsage (issue 21). Checked here with the flag set, on whatever Python runs the tests."""

import json
import os
import socket
import ssl
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_DIR = os.environ.get("GPUSHARE_CLUSTER_DIR", os.path.join(REPO, ".cluster"))  # as conftest.py finds it


def strict_context():
    context = ssl.create_default_context(cafile=os.path.join(CLUSTER_DIR, "pki", "ca.crt"))
    context.verify_flags |= ssl.VERIFY_X509_STRICT | ssl.VERIFY_X509_PARTIAL_CHAIN  # Python 3.13's defaults
    return context


def test_the_api_server_and_the_admin_certificate_pass_strict_verification(api_client):
    with open(os.path.join(CLUSTER_DIR, "kubeconfig")) as stream:
        server = urllib.parse.urlsplit(json.load(stream)["clusters"][0]["cluster"]["server"])
    context = strict_context()
    context.load_cert_chain(
        os.path.join(CLUSTER_DIR, "pki", "admin.crt"), os.path.join(CLUSTER_DIR, "pki", "admin.key")
    )
    with socket.create_connection((server.hostname, server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=server.hostname) as tls:
            tls.sendall(b"GET /version HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % server.netloc.encode())
            response = b""
            while True:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                response += chunk
    assert response.startswith(b"HTTP/1.1 200"), response[:200]


def test_every_client_certificate_passes_strict_verification_as_a_client_of_the_ca():
    """The API server (Go) checks client certificates; this checks them against the CA with the same strict rules,
    through a TLS handshake in memory where the CA's context verifies the client."""
    pki = os.path.join(CLUSTER_DIR, "pki")
    for name in ("admin", "simulator", "controller-manager", "scheduler", "apiserver-kubelet-client"):
        server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_side.load_cert_chain(os.path.join(pki, "apiserver.crt"), os.path.join(pki, "apiserver.key"))
        server_side.load_verify_locations(os.path.join(pki, "ca.crt"))
        server_side.verify_mode = ssl.CERT_REQUIRED
        server_side.verify_flags |= ssl.VERIFY_X509_STRICT
        client_side = strict_context()
        client_side.load_cert_chain(os.path.join(pki, name + ".crt"), os.path.join(pki, name + ".key"))
        assert handshake(client_side, server_side), name


def handshake(client_side, server_side):
    """A TLS handshake between two contexts over memory BIOs; True when both ends accepted the other."""
    client_in, client_out, server_in, server_out = (ssl.MemoryBIO() for _ in range(4))
    client = client_side.wrap_bio(client_in, client_out, server_hostname="localhost")
    server = server_side.wrap_bio(server_in, server_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for side, connection in (("client", client), ("server", server)):
            if not done[side]:
                try:
                    connection.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        server_in.write(client_out.read())
        client_in.write(server_out.read())
        if all(done.values()):
            return True
    return False
