#!/usr/bin/env python3
"""The local test cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
GPU operator simulator as background processes on 127.0.0.1, with state under ``.cluster/``.

    cluster.py up [--profile openshift|scaleway|vks] [--nodes N] [--step-delay S]
    cluster.py down
    cluster.py status
    cluster.py restart-apiserver

``up`` on a running cluster and ``down`` on a stopped one are harmless. A component that fails to
start is reported with the tail of its log.
"""

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE = os.environ.get("GPUSHARE_CLUSTER_DIR", os.path.join(REPO, ".cluster"))
PKI = os.path.join(STATE, "pki")
LOGS = os.path.join(STATE, "logs")
PIDS = os.path.join(STATE, "pids")

ETCD_CLIENT_PORT = int(os.environ.get("GPUSHARE_ETCD_PORT", "23790"))
ETCD_PEER_PORT = ETCD_CLIENT_PORT + 10
APISERVER_PORT = int(os.environ.get("GPUSHARE_APISERVER_PORT", "16443"))
CONTROLLER_MANAGER_PORT = APISERVER_PORT + 1
SCHEDULER_PORT = APISERVER_PORT + 2
# The simulated kubelets' exec endpoint (testbed/simulator/kubelet_exec.py derives it the same way).
KUBELET_PORT = APISERVER_PORT + 3
SERVER = "https://127.0.0.1:%d" % APISERVER_PORT
START_TIMEOUT = 120

# Client identities. The simulator and the control plane (its controllers act as service accounts
# of kube-system) are kept out of the audit log, so that the log counts exactly what users (tests,
# modules, benchmarks) ask of the API; only the simulator's node writes are logged, for benchmarks to
# time what the operator's share of a change is (tests count only their users' requests).
ADMIN_USER = "gpushare-admin"
SIMULATOR_USER = "gpushare-simulator"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
SCHEDULER_USER = "system:kube-scheduler"
# A user with no RBAC grants, for tests of permission errors.
VIEWER_USER = "gpushare-nobody"

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
    users: [%s]
    verbs: [patch]
    resources: [{group: "", resources: [nodes, nodes/status]}]
  - level: None
    users: [%s, %s, %s, system:apiserver]
  - level: None
    userGroups: ["system:serviceaccounts:kube-system"]
  - level: None
    nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*"]
  - level: Metadata
""" % (SIMULATOR_USER, SIMULATOR_USER, CONTROLLER_MANAGER_USER, SCHEDULER_USER)


class ClusterError(Exception):
    pass


def log(msg):
    print("cluster: %s" % msg, file=sys.stderr, flush=True)


def state_path(*parts):
    return os.path.join(STATE, *parts)


# --- certificates -------------------------------------------------------------------------------


def openssl(*args):
    result = subprocess.run(["openssl"] + list(args), capture_output=True, text=True)
    if result.returncode != 0:
        raise ClusterError("openssl %s failed: %s" % (args[0], result.stderr.strip()))


# The extensions real clusters' certificates carry (kubeadm's, OpenShift's): Python 3.13 verifies strictly (RFC
# 5280: VERIFY_X509_STRICT), and refuses a CA without keyUsage or a leaf without authorityKeyIdentifier.
CA_EXTENSIONS = """[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,digitalSignature,keyEncipherment,keyCertSign
subjectKeyIdentifier = hash
"""
LEAF_EXTENSIONS = """basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


def issue_certificate(name, subject, server=False):
    """A key and certificate signed by the cluster CA, for a server (with loopback SANs) or a client."""
    key, csr, crt = (os.path.join(PKI, name + ext) for ext in (".key", ".csr", ".crt"))
    ext_file = os.path.join(PKI, name + ".ext")
    with open(ext_file, "w") as f:
        f.write(LEAF_EXTENSIONS)
        if server:
            f.write(
                "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
                "DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n"
            )
        else:
            f.write("extendedKeyUsage=clientAuth\n")
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-subj", subject, "-out", csr)
    openssl(
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        os.path.join(PKI, "ca.crt"),
        "-CAkey",
        os.path.join(PKI, "ca.key"),
        "-CAcreateserial",
        "-days",
        "3650",
        "-extfile",
        ext_file,
        "-out",
        crt,
    )
    os.remove(csr)
    os.remove(ext_file)


def write_kubeconfig(path, user, token=None, cert_name=None):
    user_entry = (
        {"token": token}
        if token
        else {
            "client-certificate": os.path.join(PKI, cert_name + ".crt"),
            "client-key": os.path.join(PKI, cert_name + ".key"),
        }
    )
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "gpushare-local",
        "clusters": [
            {
                "name": "gpushare-local",
                "cluster": {"server": SERVER, "certificate-authority": os.path.join(PKI, "ca.crt")},
            }
        ],
        "users": [{"name": user, "user": user_entry}],
        "contexts": [{"name": "gpushare-local", "context": {"cluster": "gpushare-local", "user": user}}],
    }
    # JSON is YAML, and needs no third-party library here.
    with open(path, "w") as f:
        json.dump(config, f, indent=2)


def prepare_state():
    """Certificates, tokens, kubeconfigs and the audit policy; made once per state folder."""
    for folder in (PKI, LOGS, PIDS):
        os.makedirs(folder, exist_ok=True)
    if os.path.exists(state_path("kubeconfig")):
        return
    log("generating a CA, certificates and kubeconfigs in %s" % STATE)
    ca_config = os.path.join(PKI, "ca.cnf")
    with open(ca_config, "w") as f:
        f.write(CA_EXTENSIONS)
    openssl(
        "req",
        "-x509",
        "-config",
        ca_config,
        "-extensions",
        "ca",
        "-new",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        os.path.join(PKI, "ca.key"),
        "-subj",
        "/CN=gpushare-local-ca",
        "-days",
        "3650",
        "-out",
        os.path.join(PKI, "ca.crt"),
    )
    os.remove(ca_config)
    issue_certificate("apiserver", "/CN=kube-apiserver", server=True)
    issue_certificate("admin", "/CN=%s/O=system:masters" % ADMIN_USER)
    issue_certificate("simulator", "/CN=%s/O=system:masters" % SIMULATOR_USER)
    issue_certificate("controller-manager", "/CN=%s" % CONTROLLER_MANAGER_USER)
    issue_certificate("scheduler", "/CN=%s" % SCHEDULER_USER)
    # The simulated kubelets serve exec with the first; the API server shows them the second.
    issue_certificate("kubelet", "/CN=gpushare-simulated-kubelet", server=True)
    issue_certificate("apiserver-kubelet-client", "/CN=kube-apiserver-kubelet-client")
    openssl("genrsa", "-out", os.path.join(PKI, "sa.key"), "2048")
    openssl("rsa", "-in", os.path.join(PKI, "sa.key"), "-pubout", "-out", os.path.join(PKI, "sa.pub"))

    admin_token, viewer_token = secrets.token_hex(24), secrets.token_hex(24)
    with open(state_path("tokens.csv"), "w") as f:
        f.write('%s,%s,%s,"system:masters"\n' % (admin_token, ADMIN_USER, ADMIN_USER))
        f.write("%s,%s,%s\n" % (viewer_token, VIEWER_USER, VIEWER_USER))
    for name, token in (("admin.token", admin_token), ("nobody.token", viewer_token)):
        with open(state_path(name), "w") as f:
            f.write(token)
    with open(state_path("audit-policy.yaml"), "w") as f:
        f.write(AUDIT_POLICY)

    write_kubeconfig(
        state_path("kubeconfig-controller-manager"), CONTROLLER_MANAGER_USER, cert_name="controller-manager"
    )
    write_kubeconfig(state_path("kubeconfig-scheduler"), SCHEDULER_USER, cert_name="scheduler")
    write_kubeconfig(state_path("kubeconfig-simulator"), SIMULATOR_USER, cert_name="simulator")
    write_kubeconfig(state_path("kubeconfig-token"), ADMIN_USER, token=admin_token)
    # Written last: its presence means the state folder is complete.
    write_kubeconfig(state_path("kubeconfig"), ADMIN_USER, cert_name="admin")


# --- processes ----------------------------------------------------------------------------------


def pid_of(name):
    """The PID of a running component, or None (a stale PID file is not a running component)."""
    try:
        with open(os.path.join(PIDS, name + ".pid")) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read()
    except (OSError, ValueError):
        return None
    # A recycled PID belongs to some other program: its command line does not name the component.
    return pid if name.encode() in cmdline else None


def tail(path, lines=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def start_process(name, argv, env=None):
    log_path = os.path.join(LOGS, name + ".log")
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            argv,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            env=env,
            start_new_session=True,
        )
    with open(os.path.join(PIDS, name + ".pid"), "w") as f:
        f.write(str(process.pid))
    return process


def refuse_taken_ports(name, *ports):
    """Fail before starting ``name`` when another process listens on one of its ports. A component that cannot bind
    exits, but another cluster answering on that port would pass its readiness probe first: an etcd of someone else's
    on a fleet cluster's etcd port once gave that cluster another profile's nodes."""
    for port in ports:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # Sockets in TIME_WAIT (a cluster just stopped) do not count: only a listener keeps the bind from succeeding.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise ClusterError(
                "%s cannot start: port %d is taken (%s), by another cluster? Stop it, or start this one on other "
                "ports (GPUSHARE_ETCD_PORT, GPUSHARE_APISERVER_PORT; docs/DESIGN.md, Tests)" % (name, port, error)
            )
        finally:
            probe.close()


def wait_until(name, process, ready, timeout=START_TIMEOUT):
    """Poll a readiness probe of a component we just started; fail with its log if it dies or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ClusterError(
                "%s exited with code %s while starting; last lines of %s:\n%s"
                % (name, process.returncode, os.path.join(LOGS, name + ".log"), tail(os.path.join(LOGS, name + ".log")))
            )
        if ready():
            return
        time.sleep(0.2)
    raise ClusterError(
        "%s was not ready after %ds; last lines of its log:\n%s"
        % (name, timeout, tail(os.path.join(LOGS, name + ".log")))
    )


def admin_ssl_context():
    context = ssl.create_default_context(cafile=os.path.join(PKI, "ca.crt"))
    context.load_cert_chain(os.path.join(PKI, "admin.crt"), os.path.join(PKI, "admin.key"))
    return context


def https_ok(url, context=None):
    try:
        with urllib.request.urlopen(url, context=context or admin_ssl_context(), timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def default_service_account_has_token():
    """Whether pods may be created in the default namespace yet.

    Kubernetes 1.20's ServiceAccount admission refuses a pod until the token controller has given its namespace's
    default ServiceAccount a token; a cluster is handed over ready for pods, as a real one is.
    """
    url = SERVER + "/api/v1/namespaces/default/serviceaccounts/default"
    try:
        with urllib.request.urlopen(url, context=admin_ssl_context(), timeout=2) as response:
            return bool(json.load(response).get("secrets"))
    except (urllib.error.URLError, OSError, ValueError):
        return False


def insecure_context():
    # The controller-manager and scheduler serve /healthz with self-signed certificates.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def find_kubernetes_binaries():
    result = subprocess.run(
        ["bash", os.path.join(REPO, "testbed", "build-kubernetes.sh")], stdout=subprocess.PIPE, text=True
    )
    if result.returncode != 0:
        raise ClusterError("building Kubernetes failed (see the messages above)")
    return result.stdout.strip().splitlines()[-1]


def etcd_argv():
    url = "http://127.0.0.1:%d" % ETCD_CLIENT_PORT
    peer = "http://127.0.0.1:%d" % ETCD_PEER_PORT
    return [
        "etcd",
        "--name",
        "gpushare",
        "--data-dir",
        state_path("etcd"),
        "--listen-client-urls",
        url,
        "--advertise-client-urls",
        url,
        "--listen-peer-urls",
        peer,
        "--initial-advertise-peer-urls",
        peer,
        "--initial-cluster",
        "gpushare=" + peer,
        "--log-level",
        "warn",
        # One member, so no follower waits on heartbeats: raft's ticks at etcd's default 100 ms were most of an idle
        # etcd's CPU (0.54 CPU-s a minute, 0.32 at 1 s), times eleven clusters during make test. Writes still commit at
        # once; a lone member elects itself at start without waiting out the election timeout.
        "--heartbeat-interval",
        "1000",
        "--election-timeout",
        "10000",
    ]


def apiserver_argv(bin_dir):
    return [
        os.path.join(bin_dir, "kube-apiserver"),
        "--etcd-servers=http://127.0.0.1:%d" % ETCD_CLIENT_PORT,
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        "--secure-port=%d" % APISERVER_PORT,
        "--insecure-port=0",
        "--tls-cert-file=" + os.path.join(PKI, "apiserver.crt"),
        "--tls-private-key-file=" + os.path.join(PKI, "apiserver.key"),
        "--client-ca-file=" + os.path.join(PKI, "ca.crt"),
        "--token-auth-file=" + state_path("tokens.csv"),
        "--authorization-mode=RBAC",
        "--service-account-key-file=" + os.path.join(PKI, "sa.pub"),
        "--service-account-signing-key-file=" + os.path.join(PKI, "sa.key"),
        "--service-account-issuer=https://kubernetes.default.svc",
        "--api-audiences=https://kubernetes.default.svc",
        "--service-cluster-ip-range=10.0.0.0/24",
        # Loopback only: there is no endpoint worth reconciling for the kubernetes Service.
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        # pods/exec reaches the node's kubelet at its InternalIP (127.0.0.1 on every seeded node, where the
        # simulator serves exec), verified against the cluster CA.
        "--kubelet-preferred-address-types=InternalIP",
        "--kubelet-certificate-authority=" + os.path.join(PKI, "ca.crt"),
        "--kubelet-client-certificate=" + os.path.join(PKI, "apiserver-kubelet-client.crt"),
        "--kubelet-client-key=" + os.path.join(PKI, "apiserver-kubelet-client.key"),
        "--audit-log-path=" + state_path("audit.log"),
        "--audit-policy-file=" + state_path("audit-policy.yaml"),
        "--audit-log-format=json",
        "--audit-log-maxsize=0",
        # API Priority and Fairness classifies every request against its FlowSchemas and keeps their status up
        # to date: measurable CPU on a 2-core machine running several clusters, and nothing the tests exercise
        # (one client at a time per cluster, no starvation to prevent).
        "--enable-priority-and-fairness=false",
        # The etcd_object_counts metric polls etcd for a count of every resource each minute: a quarter of an idle
        # etcd's CPU (0.48 -> 0.36 CPU-s a minute), for a metric nothing here reads.
        "--etcd-count-metric-poll-period=0",
        "--v=1",
    ]


UNUSED_CONTROLLERS = (
    "attachdetach",
    "bootstrapsigner",
    "cloud-node-lifecycle",
    "cronjob",
    "csrapproving",
    "csrcleaner",
    "csrsigning",
    "endpoint",
    "endpointslice",
    "endpointslicemirroring",
    "horizontalpodautoscaling",
    "job",
    "persistentvolume-binder",
    "persistentvolume-expander",
    "pv-protection",
    "pvc-protection",
    "replicationcontroller",
    "route",
    "service",
    "statefulset",
    "tokencleaner",
    "ttl-after-finished",
)


def controller_manager_argv(bin_dir):
    kubeconfig = state_path("kubeconfig-controller-manager")
    return [
        os.path.join(bin_dir, "kube-controller-manager"),
        "--kubeconfig=" + kubeconfig,
        "--leader-elect=false",
        "--port=0",
        "--bind-address=127.0.0.1",
        "--secure-port=%d" % CONTROLLER_MANAGER_PORT,
        "--service-account-private-key-file=" + os.path.join(PKI, "sa.key"),
        "--root-ca-file=" + os.path.join(PKI, "ca.crt"),
        # Each controller then acts as its own service account, which the bootstrap RBAC roles cover.
        "--use-service-account-credentials=true",
        # Otherwise it creates a folder under /usr/libexec on the host.
        "--flex-volume-plugin-dir=" + state_path("flexvolume"),
        # Simulated nodes renew their Lease every ~20 s; 2 minutes of grace spreads a large fleet.
        "--node-monitor-grace-period=2m",
        # Not the controllers of what no test, chart or module here makes (volumes, Jobs, CronJobs, StatefulSets,
        # Services and their endpoints, HPAs, certificate requests, bootstrap tokens, cloud routes): their periodic
        # resyncs were most of an idle controller manager's CPU, times eight clusters (docs/NOTES.md).
        "--controllers=*," + ",".join("-" + name for name in UNUSED_CONTROLLERS),
        "--kube-api-qps=100",
        "--kube-api-burst=200",
        "--v=1",
    ]


def scheduler_argv(bin_dir):
    return [
        os.path.join(bin_dir, "kube-scheduler"),
        "--kubeconfig=" + state_path("kubeconfig-scheduler"),
        "--leader-elect=false",
        "--port=0",
        "--bind-address=127.0.0.1",
        "--secure-port=%d" % SCHEDULER_PORT,
        "--v=1",
    ]


def go_env():
    """The Go components' environment: one OS thread running Go code each. The test jobs run several clusters on a
    2-core machine; with GOMAXPROCS at the core count each process's garbage collector and scheduler compete for
    both cores, which cost more CPU in total for the same requests (measured: docs/NOTES.md)."""
    env = dict(os.environ)
    env.setdefault("GOMAXPROCS", "1")
    return env


def python_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO, os.path.join(REPO, ".build")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    return env


def simulator_argv(step_delay, profile):
    # OpenShift's machine API (MachineSets -> Machines -> Nodes) exists on the openshift profile only.
    return [
        sys.executable,
        "-m",
        "testbed.simulator",
        "--kubeconfig",
        state_path("kubeconfig-simulator"),
        "--step-delay",
        str(step_delay),
        "--ready-file",
        state_path("simulator.ready"),
        "--kubelet-cert",
        os.path.join(PKI, "kubelet.crt"),
        "--kubelet-key",
        os.path.join(PKI, "kubelet.key"),
        "--client-ca",
        os.path.join(PKI, "ca.crt"),
    ] + (["--machine-api"] if profile == "openshift" else [])


COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "simulator")


def ensure_collection_link():
    """``.build/ansible_collections/gpushare/k8s`` -> the repo, so the collection imports by its name."""
    link = os.path.join(REPO, ".build", "ansible_collections", "gpushare", "k8s")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.join("..", "..", ".."), link)


def seed(profile, nodes):
    command = [
        sys.executable,
        "-m",
        "testbed.seed",
        "--kubeconfig",
        state_path("kubeconfig-simulator"),
        "--profile",
        profile,
    ]
    if nodes:
        command += ["--nodes", str(nodes)]
    result = subprocess.run(command, cwd=REPO, env=python_env())
    if result.returncode != 0:
        raise ClusterError("seeding the %s profile failed (see the messages above)" % profile)


def up(profile, nodes, step_delay):
    if shutil.which("openssl") is None:
        raise ClusterError("openssl is missing: apt-get install openssl")
    running_profile = read_profile()
    if running_profile and running_profile != profile and pid_of("kube-apiserver"):
        raise ClusterError(
            "the cluster is up with the %s profile; run 'make cluster-down' first to switch to %s"
            % (running_profile, profile)
        )
    bin_dir = find_kubernetes_binaries()
    ensure_collection_link()
    prepare_state()
    started = time.monotonic()

    if not pid_of("etcd"):
        refuse_taken_ports("etcd", ETCD_CLIENT_PORT, ETCD_PEER_PORT)
        process = start_process("etcd", etcd_argv(), env=go_env())
        wait_until("etcd", process, lambda: http_ok("http://127.0.0.1:%d/health" % ETCD_CLIENT_PORT))
    if not pid_of("kube-apiserver"):
        refuse_taken_ports("kube-apiserver", APISERVER_PORT)
        process = start_process("kube-apiserver", apiserver_argv(bin_dir), env=go_env())
        wait_until("kube-apiserver", process, lambda: https_ok(SERVER + "/readyz"))
    if not pid_of("kube-controller-manager"):
        refuse_taken_ports("kube-controller-manager", CONTROLLER_MANAGER_PORT)
        process = start_process("kube-controller-manager", controller_manager_argv(bin_dir), env=go_env())
        wait_until(
            "kube-controller-manager",
            process,
            lambda: https_ok("https://127.0.0.1:%d/healthz" % CONTROLLER_MANAGER_PORT, insecure_context()),
        )
        wait_until("kube-controller-manager", process, default_service_account_has_token)
    if not pid_of("kube-scheduler"):
        refuse_taken_ports("kube-scheduler", SCHEDULER_PORT)
        process = start_process("kube-scheduler", scheduler_argv(bin_dir), env=go_env())
        wait_until(
            "kube-scheduler",
            process,
            lambda: https_ok("https://127.0.0.1:%d/healthz" % SCHEDULER_PORT, insecure_context()),
        )
    log("control plane ready in %.1fs" % (time.monotonic() - started))

    if running_profile != profile or nodes:
        seed(profile, nodes)
        with open(state_path("profile"), "w") as f:
            f.write(profile)
    if not pid_of("simulator"):
        ready_file = state_path("simulator.ready")
        if os.path.exists(ready_file):
            os.remove(ready_file)
        refuse_taken_ports("simulator", KUBELET_PORT)
        process = start_process("simulator", simulator_argv(step_delay, profile), env=python_env())
        wait_until("simulator", process, lambda: os.path.exists(ready_file))
        with open(state_path("kubelet-port"), "w") as f:
            f.write(str(KUBELET_PORT))
    log("cluster up (%s profile) in %.1fs" % (profile, time.monotonic() - started))
    print("export KUBECONFIG=%s" % state_path("kubeconfig"))


def restart_apiserver():
    """Stop the API server and start it again with the command line it ran with, the rest of the cluster left running:
    its clients meet a real restart (its watches end, connections are refused until it serves again)."""
    pid = pid_of("kube-apiserver")
    if not pid:
        raise ClusterError("kube-apiserver is not running")
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = [arg.decode() for arg in f.read().split(b"\0") if arg]
    port = int(next(arg for arg in argv if arg.startswith("--secure-port=")).split("=", 1)[1])
    stop_process("kube-apiserver")
    process = start_process("kube-apiserver", argv, env=go_env())
    wait_until("kube-apiserver", process, lambda: https_ok("https://127.0.0.1:%d/readyz" % port))
    log("kube-apiserver restarted")


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def connect(kubeconfig, make_api_client, profile="openshift"):
    """``make_api_client()`` once ``kubeconfig`` exists and its API server answers; else ClusterError saying how to
    start the cluster (the test suites skip on it)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    hint = "the local cluster is not up: run '.venv/bin/python testbed/cluster.py up --profile %s'" % profile
    if not os.path.exists(kubeconfig):
        raise ClusterError("%s (no %s)" % (hint, kubeconfig))
    api = make_api_client()
    try:
        client.VersionApi(api).get_code(_request_timeout=5)
    except (ApiException, urllib.error.URLError, ssl.SSLError, OSError) as exc:
        raise ClusterError("%s: %s" % (hint, exc))
    return api


def read_profile():
    try:
        with open(state_path("profile")) as f:
            return f.read().strip()
    except OSError:
        return None


def stop_process(name, timeout=15):
    pid = pid_of(name)
    pid_file = os.path.join(PIDS, name + ".pid")
    if pid:
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and os.path.exists("/proc/%d" % pid) and not is_zombie(pid):
            time.sleep(0.1)
        if os.path.exists("/proc/%d" % pid) and not is_zombie(pid):
            os.killpg(pid, signal.SIGKILL)
        log("stopped %s (pid %d)" % (name, pid))
    if os.path.exists(pid_file):
        os.remove(pid_file)


def is_zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def down():
    for name in reversed(COMPONENTS):
        stop_process(name)
    # Logs are kept for post-mortems; everything else is state of a cluster that no longer runs.
    if os.path.isdir(STATE):
        for entry in os.listdir(STATE):
            if entry != "logs":
                path = state_path(entry)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    log("cluster down")


def status():
    states = {name: pid_of(name) for name in COMPONENTS}
    for name, pid in states.items():
        print("%-24s %s" % (name, "running (pid %d)" % pid if pid else "stopped"))
    print("profile                  %s" % (read_profile() or "-"))
    return 0 if all(states.values()) else 3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up", help="start (or keep) the cluster and seed a profile")
    up_parser.add_argument(
        "--profile", default=os.environ.get("PROFILE", "openshift"), choices=["openshift", "scaleway", "vks"]
    )
    up_parser.add_argument(
        "--nodes", type=int, default=0, help="seed a large fleet of this many GPU nodes (benchmarks)"
    )
    up_parser.add_argument(
        "--step-delay",
        type=float,
        default=float(os.environ.get("GPUSHARE_STEP_DELAY", "0.2")),
        help="seconds the simulator waits between state steps",
    )
    sub.add_parser("down", help="stop every component and forget the cluster's state")
    sub.add_parser("status", help="show which components run")
    sub.add_parser("restart-apiserver", help="stop the API server and start it again (the resilience tests)")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            up(args.profile, args.nodes, args.step_delay)
        elif args.command == "down":
            down()
        elif args.command == "restart-apiserver":
            restart_apiserver()
        else:
            return status()
    except ClusterError as exc:
        log("error: %s" % exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
