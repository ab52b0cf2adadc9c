"""Plain helpers behind the integration fixtures, also imported by the benchmark scripts.

- ``Cluster``: where the local test cluster keeps its state (``GPUSHARE_CLUSTER_DIR``, default
  ``.cluster``) and which profile it runs; an admin ``ApiClient`` for it.
- ``run_module_in_process``: run one module in this process through Ansible's own module entry point (its
  ``main()`` with the arguments Ansible passes, check and diff mode included), as a fresh module process would
  run it, and return its result.
- ``run_module``: run one module as a one-task playbook through ``ansible-playbook`` and return the
  task's result, exactly as a playbook would register it (for what needs the controller: ``no_log`` in the
  output, the installed collection's files, concurrent runs).
- ``AuditWindow``: the requests the API server audited while a block ran (``audit.log``).
- ``wait_for_object``, ``wait_for_objects``: LIST then WATCH until an object, or the whole list, satisfies a
  predicate (never a fixed sleep).

Nothing here fakes or intercepts the API: modules talk to the real kube-apiserver of the test cluster.
"""

import contextlib
import importlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# `make` puts these on PYTHONPATH; a bare `pytest tests/integration` needs them too (testbed.seed,
# and the collection under its ansible_collections name).
for _path in (REPO, os.path.join(REPO, ".build")):
    if _path not in sys.path:
        sys.path.append(_path)
from testbed.simulator.kube import as_dict, discard  # noqa: E402 (found through the path above)

VENV_BIN = os.path.dirname(sys.executable)
ANSIBLE_PLAYBOOK = os.path.join(VENV_BIN, "ansible-playbook")
COLLECTIONS_PATH = os.path.join(REPO, ".build")

# Requests the test harness itself makes carry this User-Agent, so that audit counts can leave them
# out: what remains is what the modules asked (the simulator and control plane are never audited).
HARNESS_USER_AGENT = "gpushare-integration-harness"
ADMIN_USER = "gpushare-admin"
NOBODY_USER = "gpushare-nobody"
# The identities tests and modules use (admin by certificate or token, and the user without rights).
# The audit policy leaves out the simulator and the control plane's own users, but the
# controller-manager's controllers run as kube-system service accounts, which are logged: only
# these users count.
USERS = frozenset((ADMIN_USER, NOBODY_USER))
WRITE_VERBS = frozenset(("create", "update", "patch", "delete", "deletecollection"))
PROFILES = ("openshift", "scaleway", "vks")
# A test whose behaviour does not depend on the platform (the same module code on any fleet: refusals, check mode,
# credentials, planner rules) runs on one profile; a test of what differs between platforms runs on each.
ONE_PROFILE = pytest.mark.profiles("openshift")


class Cluster(object):
    """The local cluster's state folder, as written by ``testbed/cluster.py up``."""

    def __init__(self, directory=None):
        self.dir = directory or os.environ.get("GPUSHARE_CLUSTER_DIR") or os.path.join(REPO, ".cluster")

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    @property
    def kubeconfig(self):
        return self.path("kubeconfig")

    @property
    def audit_log(self):
        return self.path("audit.log")

    @property
    def ca_cert(self):
        return self.path("pki", "ca.crt")

    def token(self, who="admin"):
        """The bearer token of ``admin`` (system:masters) or ``nobody`` (no RBAC rights)."""
        with open(self.path("%s.token" % who)) as token_file:
            return token_file.read().strip()

    def running_profile(self):
        try:
            with open(self.path("profile")) as profile_file:
                return profile_file.read().strip() or None
        except OSError:
            return None

    def server(self):
        with open(self.kubeconfig) as kubeconfig_file:
            return json.load(kubeconfig_file)["clusters"][0]["cluster"]["server"]

    def restart_apiserver(self):
        """``testbed/cluster.py restart-apiserver``: its watches end, connections are refused until it serves again."""
        restart = subprocess.run(
            [sys.executable, os.path.join(REPO, "testbed", "cluster.py"), "restart-apiserver"],
            env=dict(os.environ, GPUSHARE_CLUSTER_DIR=self.dir),
            capture_output=True,
            text=True,
            check=False,
        )
        assert restart.returncode == 0, restart.stdout + restart.stderr

    def api_client(self):
        """An admin ApiClient (client certificate) whose requests the audit counts leave out."""
        configuration = client.Configuration()
        config.load_kube_config(config_file=self.kubeconfig, client_configuration=configuration)
        configuration.connection_pool_maxsize = 16
        api = client.ApiClient(configuration)
        api.user_agent = HARNESS_USER_AGENT
        return api

    def awx_env(self, who="admin"):
        """The environment AWX's "OpenShift or Kubernetes API Bearer Token" credential injects,
        with no kubeconfig at all (KUBECONFIG names a file that does not exist)."""
        return {
            "K8S_AUTH_HOST": self.server(),
            "K8S_AUTH_API_KEY": self.token(who),
            "K8S_AUTH_VERIFY_SSL": "True",
            "K8S_AUTH_SSL_CA_CERT": self.ca_cert,
            "KUBECONFIG": os.path.join(self.dir, "no-such-kubeconfig"),
        }


# --- running modules --------------------------------------------------------------------------

PLAYBOOK = """\
- name: Run gpushare.k8s modules
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks: []
"""

# A callback that appends each task's result (what ``register`` would hold) as a JSON line: cheaper than a
# second task copying the registered variable to a file. Written to a temporary folder at run time.
RESULT_CALLBACK = """\
import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpushare_result"
    CALLBACK_NEEDS_ENABLED = True

    def _save(self, result, failed):
        data = dict(getattr(result, "result", None) or result._result)
        data = dict((key, value) for key, value in data.items() if not key.startswith("_ansible"))
        data["failed"] = bool(data.get("failed", failed))
        data.setdefault("changed", False)
        with open(os.environ["GPUSHARE_RESULT_FILE"], "a") as result_file:
            result_file.write(json.dumps(data, default=str) + "\\n")

    def v2_runner_on_ok(self, result, **kwargs):
        self._save(result, False)

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._save(result, True)

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._save(result, True)
"""


class PlaybookError(Exception):
    """ansible-playbook did not get as far as registering the module's result."""


def module_env(cluster, env=None):
    """The environment ansible-playbook runs with: the test cluster's admin kubeconfig, no inherited
    ``K8S_AUTH_*``, then ``env`` on top (a None value removes a variable)."""
    base = dict((key, value) for key, value in os.environ.items() if not key.startswith("K8S_AUTH_"))
    base.update(
        KUBECONFIG=cluster.kubeconfig,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="false",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
    )
    for key, value in (env or {}).items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def module_task(name, args=None):
    """A playbook task running module ``name`` (short names get the ``gpushare.k8s.`` prefix) with ``args``."""
    fqcn = name if "." in name else "gpushare.k8s." + name
    return {"name": fqcn, fqcn: args or {}}


def run_tasks(cluster, tasks, check=False, diff=False, env=None, timeout=900):
    """Run ``tasks`` (playbook task dicts, e.g. from ``module_task``) in one playbook; return the result of each
    task that ran, in order, as ``register`` would hold it, and ansible-playbook's (output, wall seconds, peak
    resident MiB). One process for many tasks: a task that fails stops the play unless it has ``ignore_errors``."""
    with tempfile.TemporaryDirectory(prefix="gpushare-run-") as work:
        dest = os.path.join(work, "results.jsonl")
        playbook = os.path.join(work, "playbook.yml")
        play = yaml.safe_load(PLAYBOOK)
        play[0]["tasks"] = list(tasks)
        with open(playbook, "w") as playbook_file:
            # JSON is YAML: arguments go in verbatim, without templating surprises.
            json.dump(play, playbook_file)
        with open(os.path.join(work, "gpushare_result.py"), "w") as callback_file:
            callback_file.write(RESULT_CALLBACK)
        command = [ANSIBLE_PLAYBOOK, "-i", "localhost,", playbook]
        if check:
            command.append("--check")
        if diff:
            command.append("--diff")
        run_env = module_env(cluster, env)
        run_env.update(
            ANSIBLE_CALLBACK_PLUGINS=work, ANSIBLE_CALLBACKS_ENABLED="gpushare_result", GPUSHARE_RESULT_FILE=dest
        )
        started = time.monotonic()
        returncode, stdout, peak_rss = run_measured(command, run_env, work, timeout)
        seconds = time.monotonic() - started
        results = []
        if os.path.exists(dest):
            with open(dest) as result_file:
                results = [json.loads(line) for line in result_file if line.strip()]
    if not results:
        raise PlaybookError("ansible-playbook exited %d without a result:\n%s" % (returncode, stdout))
    return results, (stdout, seconds, peak_rss)


def run_module(cluster, name, args=None, check=False, diff=False, env=None, timeout=900):
    """Run module ``name`` (short names get the ``gpushare.k8s.`` prefix) with ``args`` in a one-task
    playbook; return the task's result as ``register`` would hold it (``failed``, ``msg``,
    ``changed``...) plus ``_stdout`` (ansible-playbook's output, for failure messages), ``_seconds``
    (its wall time) and ``_peak_rss_mib``."""
    results, (stdout, seconds, peak_rss) = run_tasks(
        cluster, [module_task(name, args)], check=check, diff=diff, env=env, timeout=timeout
    )
    result = results[0]
    result["_stdout"] = stdout
    result["_seconds"] = seconds
    result["_peak_rss_mib"] = peak_rss
    return result


# --- running modules in this process --------------------------------------------------------------

MODULES_PACKAGE = "ansible_collections.gpushare.k8s.plugins.modules."


@contextlib.contextmanager
def _environment(env):
    """``os.environ`` is exactly ``env`` inside the block, and what it was afterwards."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _fresh_process_state():
    """What a new module process starts with, for the state that outlives a module run in one process.

    - ``kubernetes.config`` reads ``KUBECONFIG`` when it is imported: in a module process that is the run's own;
    - ``kube_config.load_kube_config`` sets the client library's default ``Configuration``, which the next
      client built from ``host`` and ``api_key`` alone would otherwise start from;
    - the collection's client factory keeps one client per connection within a run;
    - AnsibleModule collects warnings and deprecations in globals, reported with the next result.
    """
    from ansible.module_utils import _internal
    from ansible.module_utils.common import warnings
    from kubernetes.config import kube_config

    from ansible_collections.gpushare.k8s.plugins.module_utils.kube import client as collection_client

    if _internal.is_controller:
        # Ansible's controller code turns a module's warnings into displayed messages instead of result fields.
        raise RuntimeError("modules cannot run in a process that imported Ansible's controller code")
    saved = (kube_config.KUBE_CONFIG_DEFAULT_LOCATION, client.Configuration._default)
    kube_config.KUBE_CONFIG_DEFAULT_LOCATION = os.environ.get("KUBECONFIG", "~/.kube/config")
    client.Configuration._default = None
    collection_client._client_pool.clear()
    warnings._global_warnings.clear()
    warnings._global_deprecations.clear()
    try:
        yield
    finally:
        kube_config.KUBE_CONFIG_DEFAULT_LOCATION, client.Configuration._default = saved
        collection_client._client_pool.clear()


def run_module_in_process(cluster, name, args=None, check=False, diff=False, env=None):
    """Run module ``name`` (a short name of this collection) in this process, through Ansible's own module
    entry point: ``main()`` under ``ansible.module_utils.testing.patch_module_args`` with the arguments and the
    ``_ansible_check_mode`` / ``_ansible_diff`` flags the controller sends, in the environment ``module_env``
    gives (the test cluster's kubeconfig, ``env`` on top). The same real ``AnsibleModule`` and real API server
    as a module process; what would end that process (``exit_json``, ``fail_json``, an exception) ends the run.

    Returns the result as ``register`` would hold it, plus ``_stdout`` (what the module printed) and
    ``_seconds``. An exception escaping the module is returned as Ansible reports it: failed, ``MODULE FAILURE``,
    the traceback in ``module_stderr``."""
    from ansible.module_utils.testing import patch_module_args

    module = importlib.import_module(MODULES_PACKAGE + name)
    module_args = dict(args or {}, _ansible_check_mode=check, _ansible_diff=diff)
    output = io.StringIO()
    started = time.monotonic()
    with _environment(module_env(cluster, env)), _fresh_process_state(), patch_module_args(module_args):
        try:
            with contextlib.redirect_stdout(output):
                module.main()
            exit_code = 0
        except SystemExit as exit:
            exit_code = exit.code
        except Exception:  # what an ansible-playbook run reports as MODULE FAILURE
            trace = traceback.format_exc()
            return dict(
                failed=True, changed=False, msg="MODULE FAILURE", module_stderr=trace, exception=trace, _stdout=trace
            )
    stdout = output.getvalue()
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise PlaybookError("module %s exited %s without a result" % (name, exit_code))
    result = json.loads(lines[-1])
    # The result carries warnings and deprecations as serialized summaries; the controller turns them into
    # their messages, which is what a registered result shows.
    from ansible.module_utils.common import warnings

    if result.get("warnings"):
        result["warnings"] = list(warnings.get_warning_messages())
    if result.get("deprecations"):
        result["deprecations"] = list(warnings.get_deprecation_messages())
    result["failed"] = bool(result.get("failed", exit_code != 0))
    result.setdefault("changed", False)
    result["_stdout"] = stdout
    result["_seconds"] = time.monotonic() - started
    return result


# Runs a command and writes the peak resident KiB of its largest process to a file. A small process of its own:
# a child forked straight from a large one (the test process) counts the parent's memory in its ru_maxrss, since
# Linux keeps the high-water mark of the memory a process had before exec.
MEASURE_WRAPPER = (
    "import os, subprocess, sys; process = subprocess.Popen(sys.argv[2:]); "
    "_p, status, usage = os.wait4(process.pid, 0); "
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss)); sys.exit(os.waitstatus_to_exitcode(status) % 256)"
)


def run_measured(command, env, cwd, timeout):
    """(exit code, output, peak resident MiB of its largest process) of a command; killed after ``timeout``.

    wait4's usage covers the process and every descendant it waited for (the module processes of an
    ansible-playbook run): its ru_maxrss is the largest of them. For benchmarks; tests never assert it.
    """
    with tempfile.TemporaryFile() as output, tempfile.NamedTemporaryFile("r") as peak:
        process = subprocess.Popen(
            [sys.executable, "-c", MEASURE_WRAPPER, peak.name] + list(command),
            env=env,
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a timeout kills the command too
        )
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        output.seek(0)
        text = output.read().decode(errors="replace")
        peak_kib = peak.read().strip()
    return process.returncode, text, round(int(peak_kib) / 1024.0, 1) if peak_kib else None


def run_plays(cluster, playbook, env=None, check=False):
    """``playbook`` (a list of plays as dicts) through ``run_playbook``: ([(task name, localhost's result)], the JSON
    report, stderr)."""
    with tempfile.TemporaryDirectory(prefix="gpushare-lp-") as work:
        path = os.path.join(work, "playbook.yml")
        with open(path, "w") as stream:
            json.dump(playbook, stream)  # JSON is YAML
        _code, report, stderr = run_playbook(cluster, path, *(["--check"] if check else []), env=env)
    results = [
        (task["task"]["name"], task["hosts"]["localhost"])
        for one_play in report["plays"]
        for task in one_play["tasks"]
        if "localhost" in task["hosts"]
    ]
    return results, report, stderr


def run_playbook(
    cluster, playbook, *args, inventory="localhost,", env=None, timeout=1800, ansible_playbook=ANSIBLE_PLAYBOOK
):
    """``ansible-playbook playbooks/<playbook> <args>`` against ``cluster`` (its admin kubeconfig; None: each
    inventory host names its cluster) with ansible.posix's json callback: (exit code, the JSON report, stderr);
    ``ansible_playbook``, another ansible-core's (the oldest one claimed)."""
    run_env = (
        module_env(cluster, env) if cluster is not None else dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH)
    )
    if cluster is None:
        run_env.pop("KUBECONFIG", None)
    run_env.update(
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_CONFIG=os.path.join(REPO, "tests", "ansible.cfg")
    )
    completed = subprocess.run(
        [ansible_playbook, "-i", inventory, os.path.join(REPO, "playbooks", playbook)] + list(args),
        env=run_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        check=False,  # a failing run is part of what tests look at
    )
    try:
        report = json.loads(completed.stdout)
    except ValueError:
        raise PlaybookError(
            "ansible-playbook exited %d without a JSON report:\n%s\n%s"
            % (completed.returncode, completed.stdout, completed.stderr)
        )
    return completed.returncode, report, completed.stderr


def changed_hosts(report):
    """``{host: changed tasks}`` of a JSON report, hosts that changed nothing left out."""
    return dict((host, stats["changed"]) for host, stats in report["stats"].items() if stats["changed"])


# --- the audit log ----------------------------------------------------------------------------


class AuditWindow(object):
    """Audit events of the requests tests and modules (``USERS``) made between ``start()`` and
    ``stop()``, the harness's own requests left out.

    The window is bounded by two marker requests (a GET of a ConfigMap that does not exist, named
    uniquely) that the harness makes and then waits to see in the log, so no event is missed or
    counted twice however the API server buffers its writes. Only requests that completed are
    logged (the policy omits the RequestReceived and ResponseStarted stages): a watch appears once
    it ended, which for a module is at the latest when its process exits.
    """

    def __init__(self, cluster, api_client, marker_timeout=30):
        self.cluster = cluster
        self.core = client.CoreV1Api(api_client)
        self.marker_timeout = marker_timeout
        self.events = []
        self.everyone = []
        self._offset = 0
        self._start = None

    def _mark(self):
        name = "gpushare-audit-mark-" + uuid.uuid4().hex
        try:
            discard(self.core.read_namespaced_config_map, name, "default")
        except ApiException as exc:
            if exc.status != 404:
                raise
        return name

    def _read_until(self, offset, marker):
        """(events from byte ``offset`` up to and including the marker's, byte offset after it)."""
        deadline = time.monotonic() + self.marker_timeout
        events, partial = [], b""
        with open(self.cluster.audit_log, "rb") as log:
            log.seek(offset)
            while True:
                chunk = log.read()
                if not chunk:
                    if time.monotonic() > deadline:
                        raise AssertionError("audit marker %s never reached %s" % (marker, self.cluster.audit_log))
                    time.sleep(0.02)  # polling a file the API server appends to, bounded by the deadline
                    continue
                lines = (partial + chunk).split(b"\n")
                partial = lines.pop()
                for line in lines:
                    offset += len(line) + 1  # the byte after this line
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    events.append(event)
                    if (event.get("objectRef") or {}).get("name") == marker:
                        return events, offset

    def start(self):
        offset = os.path.getsize(self.cluster.audit_log) if os.path.exists(self.cluster.audit_log) else 0
        marker = self._mark()
        events, self._offset = self._read_until(offset, marker)
        self._start = events[-1]["requestReceivedTimestamp"]
        return self

    def stop(self):
        marker = self._mark()
        events, _ = self._read_until(self._offset, marker)
        end = events[-1]["requestReceivedTimestamp"]
        # Everyone's requests in the window (the simulator's too, for benchmarks), and the modules' own.
        self.everyone = [event for event in events if self._start <= event["requestReceivedTimestamp"] <= end]
        self.events = [
            event
            for event in self.everyone
            if event["user"]["username"] in USERS and event.get("userAgent") != HARNESS_USER_AGENT
        ]
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    # what was asked --------------------------------------------------------------------------

    @property
    def requests(self):
        """Every request the modules made in the window (audit event dicts)."""
        return list(self.events)

    @property
    def writes(self):
        """Create, update, patch and delete requests (server-side dry runs left out), as ``"verb resource/name"``
        strings."""
        return [describe(event) for event in self.events if is_write(event)]

    def count(self, verb=None, resource=None, user=None):
        return sum(
            1
            for event in self.events
            if (verb is None or event["verb"] == verb)
            and (resource is None or (event.get("objectRef") or {}).get("resource") == resource)
            and (user is None or event["user"]["username"] == user)
        )

    def summary(self):
        """``{"verb resource": count}`` of the window, for reports."""
        counts = {}
        for event in self.events:
            key = "%s %s" % (event["verb"], (event.get("objectRef") or {}).get("resource") or event.get("requestURI"))
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))


# Requests made with a write verb that change nothing: the modules ask these before writing.
REVIEWS = frozenset(("selfsubjectaccessreviews",))


def is_write(event):
    """Whether an audit event is a write: a write verb, but neither a server-side dry run (kubernetes.core in check
    mode) nor an access review (a create that changes nothing)."""
    return (
        event["verb"] in WRITE_VERBS
        and "dryRun=All" not in event.get("requestURI", "")
        and (event.get("objectRef") or {}).get("resource") not in REVIEWS
    )


def describe(event):
    ref = event.get("objectRef") or {}
    name = "/".join(part for part in (ref.get("namespace"), ref.get("name")) if part)
    status = (event.get("responseStatus") or {}).get("code")
    return "%s %s%s (%s, HTTP %s)" % (
        event["verb"],
        ref.get("resource"),
        "/" + name if name else "",
        event["user"]["username"],
        status,
    )


# --- waiting ----------------------------------------------------------------------------------


def _listed_then_watched(list_call, deadline, what, *args, **kwargs):
    """``(type, object)`` pairs: ``("ADDED", item)`` for each item of a LIST, then ``("LISTED", None)``, then the
    events of WATCHes from the list's resourceVersion until ``deadline``."""
    listed = json.loads(list_call(*args, _preload_content=False, **kwargs).data)
    for item in listed["items"]:
        yield "ADDED", item
    yield "LISTED", None
    resource_version = listed["metadata"]["resourceVersion"]
    while time.monotonic() < deadline:
        response = list_call(
            *args,
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=max(1, int(deadline - time.monotonic())),
            _preload_content=False,
            **kwargs,
        )
        try:
            for line in iter_resp_lines(response):
                if not line.strip():
                    continue
                event = json.loads(line)
                if event["type"] == "ERROR":
                    raise AssertionError("watch for %s failed: %s" % (what, event["object"].get("message")))
                resource_version = event["object"]["metadata"].get("resourceVersion", resource_version)
                yield event["type"], event["object"]
        finally:
            response.release_conn()


def wait_for_object(list_call, predicate, what, *args, timeout=60, **kwargs):
    """The first object from ``list_call`` (a LIST, then a WATCH from its resourceVersion) for which
    ``predicate(obj)`` holds, as a dict. Raises AssertionError naming the last object seen on timeout."""
    last = None
    for kind, obj in _listed_then_watched(list_call, time.monotonic() + timeout, what, *args, **kwargs):
        if kind in ("ADDED", "MODIFIED"):
            last = obj
            if predicate(obj):
                return obj
    raise AssertionError(
        "timed out after %ss waiting for %s; last seen: %s"
        % (timeout, what, json.dumps(_brief(last), indent=1, sort_keys=True))
    )


def wait_for_objects(list_call, predicate, what, *args, timeout=60, **kwargs):
    """Wait until ``predicate(objects)`` holds for the whole list ``list_call`` returns (a LIST, then WATCH events
    applied to it), and return that list. ``predicate`` returns None when it holds, else what is still wrong,
    which the AssertionError on timeout says."""
    objects, listed, wrong = {}, False, "nothing listed"
    for kind, obj in _listed_then_watched(list_call, time.monotonic() + timeout, what, *args, **kwargs):
        if kind in ("ADDED", "MODIFIED"):
            objects[obj["metadata"]["uid"]] = obj
        elif kind == "DELETED":
            objects.pop(obj["metadata"]["uid"], None)
        listed = listed or kind == "LISTED"
        if listed and kind != "BOOKMARK":
            wrong = predicate(list(objects.values()))
            if wrong is None:
                return list(objects.values())
    raise AssertionError("timed out after %ss waiting for %s; still: %s" % (timeout, what, wrong))


def _brief(obj):
    if not obj:
        return obj
    status = obj.get("status") or {}
    return {
        "name": obj["metadata"].get("name"),
        "labels": obj["metadata"].get("labels"),
        "status": dict((key, value) for key, value in status.items() if key in ("capacity", "allocatable", "phase")),
    }


def wait_for_node(api_client, name, predicate, timeout=60):
    """Watch node ``name`` until ``predicate(node dict)`` holds; returns the node."""
    core = client.CoreV1Api(api_client)
    return wait_for_object(
        core.list_node, predicate, "node " + name, timeout=timeout, field_selector="metadata.name=" + name
    )


# --- reading and changing cluster objects as a user would (kubectl get/label/patch/apply) -----

MERGE_PATCH = "application/merge-patch+json"
POLICY = dict(group="nvidia.com", version="v1", plural="clusterpolicies")
DEVICE_PLUGIN_DAEMONSET = "nvidia-device-plugin-daemonset"
# OpenShift's objects the openshift profile seeds (reference section 5).
MACHINESETS = dict(group="machine.openshift.io", version="v1beta1", plural="machinesets")


def _made_by(node, machineset, namespace):
    """Whether ``node`` (a dict) is a Machine's of ``machineset``: its machine.openshift.io/machine annotation."""
    machine = (node["metadata"].get("annotations") or {}).get("machine.openshift.io/machine", "")
    return machine.startswith("%s/%s-" % (namespace, machineset))


CLUSTER_AUTOSCALERS = dict(group="autoscaling.openshift.io", version="v1", plural="clusterautoscalers")
MACHINE_AUTOSCALERS = dict(group="autoscaling.openshift.io", version="v1beta1", plural="machineautoscalers")


class KubeObjects(object):
    """The objects of one seeded profile, read and written as plain dicts by the harness."""

    def __init__(self, api_client, profile):
        self.api_client = api_client
        self.profile = profile
        self.namespace = profile.operator_namespace
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    # the fleet, from the seeding (testbed/seed.py)
    def gpu_nodes(self):
        """GPU node names of the seeded fleet, pool by pool."""
        from testbed import seed

        return [name for name, pool in seed.fleet(self.profile) if pool.product]

    def cpu_nodes(self):
        from testbed import seed

        return [name for name, pool in seed.fleet(self.profile) if not pool.product]

    def first_of_each_pool(self):
        from testbed import seed

        seen, names = set(), []
        for name, pool in seed.fleet(self.profile):
            if pool.product and pool.name not in seen:
                seen.add(pool.name)
                names.append(name)
        return names

    def mig_capable_nodes(self):
        return [name for name in self.gpu_nodes() if labels(self.node(name)).get("nvidia.com/mig.capable") == "true"]

    # reading
    def node(self, name):
        return json.loads(self.core.read_node(name, _preload_content=False).data)

    def config_map(self, name, namespace=None):
        try:
            return json.loads(
                self.core.read_namespaced_config_map(name, namespace or self.namespace, _preload_content=False).data
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def policy(self):
        return self.custom.get_cluster_custom_object(
            POLICY["group"], POLICY["version"], POLICY["plural"], self.profile.policy_name
        )

    def custom_object(self, kind, name, namespace=None):
        """A custom object (``kind`` as MACHINESETS above), None when absent."""
        try:
            if namespace:
                return self.custom.get_namespaced_custom_object(
                    kind["group"], kind["version"], namespace, kind["plural"], name
                )
            return self.custom.get_cluster_custom_object(kind["group"], kind["version"], kind["plural"], name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def device_plugin(self):
        return json.loads(
            self.apps.read_namespaced_daemon_set(DEVICE_PLUGIN_DAEMONSET, self.namespace, _preload_content=False).data
        )

    # writing
    def patch_policy(self, spec):
        """``kubectl patch clusterpolicy <name> --type merge -p '{"spec": ...}'``"""
        self.custom.patch_cluster_custom_object(
            POLICY["group"],
            POLICY["version"],
            POLICY["plural"],
            self.profile.policy_name,
            {"spec": spec},
            _content_type=MERGE_PATCH,
        )

    def patch_custom(self, kind, name, patch, namespace=None):
        """``kubectl patch <kind> <name> --type merge``"""
        if namespace:
            self.custom.patch_namespaced_custom_object(
                kind["group"], kind["version"], namespace, kind["plural"], name, patch, _content_type=MERGE_PATCH
            )
        else:
            self.custom.patch_cluster_custom_object(
                kind["group"], kind["version"], kind["plural"], name, patch, _content_type=MERGE_PATCH
            )

    def add_gpu_machineset(
        self, name, accelerator, gpus, namespace="openshift-machine-api", instance_type=None, autoscaler=True
    ):
        """A GPU MachineSet (another vendor's, say) of ``gpus`` per machine whose nodes are labelled ``accelerator``,
        with one machine, scaled from 1 to 2 machines by a MachineAutoscaler unless ``autoscaler`` is false, as a user
        would apply them; the reset deletes both. With ``instance_type`` (a node's ``node.kubernetes.io/instance-type``)
        its machines join as nodes of that hardware, carrying the GPU taint."""
        selector = {"machine.openshift.io/cluster-api-machineset": name}
        template_spec = {"metadata": {"labels": {"cluster-api/accelerator": accelerator}}}
        if instance_type:
            template_spec.update(
                taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                providerSpec={
                    "value": {
                        "instanceType": instance_type,
                        "placement": {"availabilityZone": "us-east-1a", "region": "us-east-1"},
                    }
                },
            )
        machineset = {
            "apiVersion": "machine.openshift.io/v1beta1",
            "kind": "MachineSet",
            "metadata": {"name": name, "namespace": namespace, "annotations": {"machine.openshift.io/GPU": str(gpus)}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": selector},
                "template": {"metadata": {"labels": selector}, "spec": template_spec},
            },
        }
        autoscaler_body = {
            "apiVersion": "autoscaling.openshift.io/v1beta1",
            "kind": "MachineAutoscaler",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "minReplicas": 1,
                "maxReplicas": 2,
                "scaleTargetRef": {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": name},
            },
        }
        created = [(MACHINESETS, machineset)] + ([(MACHINE_AUTOSCALERS, autoscaler_body)] if autoscaler else [])
        for kind, body in created:
            self.custom.create_namespaced_custom_object(kind["group"], kind["version"], namespace, kind["plural"], body)

    def machineset_node_names(self, name, namespace="openshift-machine-api"):
        """The nodes of MachineSet ``name``, through their Machine's annotation (OpenShift labels no node with it)."""
        return sorted(
            node["metadata"]["name"]
            for node in as_dict(self.core.list_node)["items"]
            if _made_by(node, name, namespace)
        )

    def machineset_gpu_node(self, name, namespace="openshift-machine-api"):
        """A node of MachineSet ``name`` once GPU Feature Discovery labelled its GPUs (a MIG layout for the set's new
        nodes is checked against their model), as a dict; waited for through a watch."""
        return wait_for_object(
            self.core.list_node,
            lambda node: _made_by(node, name, namespace) and "nvidia.com/gpu.product" in node["metadata"]["labels"],
            "MachineSet %s/%s's first node with its GPU labels" % (namespace, name),
        )

    def delete_custom(self, kind, name, namespace=None):
        if namespace:
            self.custom.delete_namespaced_custom_object(kind["group"], kind["version"], namespace, kind["plural"], name)
        else:
            self.custom.delete_cluster_custom_object(kind["group"], kind["version"], kind["plural"], name)

    def label_node(self, name, node_labels):
        """``kubectl label node --overwrite`` (None removes a label)."""
        discard(self.core.patch_node, name, {"metadata": {"labels": node_labels}}, _content_type=MERGE_PATCH)

    def annotate_node(self, name, annotations):
        discard(self.core.patch_node, name, {"metadata": {"annotations": annotations}}, _content_type=MERGE_PATCH)

    def put_config_map(self, name, data, namespace=None):
        """``kubectl apply`` of a ConfigMap with ``data`` (other keys of an existing one are replaced)."""
        namespace = namespace or self.namespace
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
        try:
            discard(self.core.create_namespaced_config_map, namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            discard(self.core.replace_namespaced_config_map, name, namespace, body)

    def wait_for_node(self, name, predicate, timeout=60):
        return wait_for_node(self.api_client, name, predicate, timeout)


def labels(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def allocatable(node, resource="nvidia.com/gpu"):
    return int((node.get("status") or {}).get("allocatable", {}).get(resource, "0"))
