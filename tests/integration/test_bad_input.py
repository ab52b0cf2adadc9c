"""The bad-input matrix: inputs a user gets wrong, each refused before anything is written, with a message that
names what is wrong and how to fix it, no traceback, and the same refusal in check mode.

All module cases run one after the other through Ansible's module entry point (``run_module_in_process``), once
for real and once in check mode, inside one audit window each: the window must hold no write at all, so no case
wrote anything. A few cases need the cluster in a given state first (MIG mixed on the policy, a node with
time-slicing): the harness sets it up before the window, as a user's earlier change would have. The playbook and
role cases, and what ansible-playbook prints of credentials, go through ``ansible-playbook``.
"""

import json

import pytest
from integration_helpers import AuditWindow, run_module_in_process, run_playbook

pytestmark = pytest.mark.profiles("openshift")

A100, H100, T4 = "gpu-a100-0", "gpu-h100-0", "gpu-t4-0"
UNREACHABLE = "https://127.0.0.1:9"  # the discard port: nothing listens there
NOT_A_KUBECONFIG = "/etc/hostname"
MISSING_FILE = "/nonexistent/gpushare/kubeconfig"
OTHER_CA = "/etc/ssl/certs/ca-certificates.crt"  # the system's CAs, none of which signed the test API server's cert


def _ts(**args):
    """A gpu_timeslicing call on one A100 node unless the case says otherwise."""
    return dict(dict(replicas=4, nodes={"names": [A100]}), **args)


def _mig(**args):
    return dict(dict(strategy="mixed", config="all-balanced", nodes={"names": [A100]}), **args)


def _layout(profiles):
    return [{"devices": "all", "mig-enabled": True, "mig-devices": profiles}]


# (case id, module, arguments, fragments the message must contain: what is wrong and what to do)
CASES = [
    # --- gpu_timeslicing: values, types, options
    ("ts-replicas-1", "gpu_timeslicing", _ts(replicas=1), ["replicas", ">= 2"]),
    ("ts-replicas-0", "gpu_timeslicing", _ts(replicas=0), ["replicas", ">= 2"]),
    ("ts-replicas-negative", "gpu_timeslicing", _ts(replicas=-3), ["replicas", ">= 2"]),
    ("ts-replicas-not-int", "gpu_timeslicing", _ts(replicas="many"), ["replicas", "int"]),
    ("ts-replicas-beyond-kubelet", "gpu_timeslicing", _ts(replicas=100000), ["kubelet", "lower replicas to"]),
    ("ts-replicas-missing", "gpu_timeslicing", {"nodes": {"names": [A100]}}, ["replicas"]),
    ("ts-unknown-option", "gpu_timeslicing", _ts(replica=4), ["replica", "Unsupported parameters"]),
    ("ts-bad-state", "gpu_timeslicing", _ts(state="enabled"), ["state", "present, absent"]),
    ("ts-no-target", "gpu_timeslicing", {"replicas": 4}, ["nodes.names", "make_default"]),
    ("ts-foreign-resource", "gpu_timeslicing", _ts(resources=["amd.com/gpu"]), ["amd.com/gpu", "nvidia.com"]),
    # --- names and keys the API would refuse only after earlier writes
    (
        "ts-config-map-not-dns",
        "gpu_timeslicing",
        _ts(config_map="My_Config"),
        ["config_map", "My_Config", "object name"],
    ),
    ("ts-config-key-slash", "gpu_timeslicing", _ts(config_key="team/a"), ["config_key", "team/a", "/"]),
    ("ts-config-key-long", "gpu_timeslicing", _ts(config_key="k" * 64), ["config_key", "63"]),
    ("ts-config-key-space", "gpu_timeslicing", _ts(config_key="team a"), ["config_key", "team a"]),
    ("ts-namespace-not-dns", "gpu_timeslicing", _ts(namespace="GPU Operator"), ["namespace", "GPU Operator"]),
    # --- nodes
    ("ts-selector-syntax", "gpu_timeslicing", _ts(nodes={"selector": "gpu in (a"}), ["nodes.selector", "gpu in (a"]),
    ("ts-selector-no-node", "gpu_timeslicing", _ts(nodes={"selector": "pool=none"}), ["pool=none", "no node"]),
    (
        "ts-selector-cpu-nodes",
        "gpu_timeslicing",
        _ts(nodes={"selector": "kubernetes.io/hostname=worker-0"}),
        ["worker-0", "GPU"],
    ),
    ("ts-node-missing", "gpu_timeslicing", _ts(nodes={"names": ["gpu-z9-0"]}), ["gpu-z9-0", "not found"]),
    ("ts-node-cpu", "gpu_timeslicing", _ts(nodes={"names": ["worker-1"]}), ["worker-1", "GPU"]),
    (
        "ts-node-names-and-selector",
        "gpu_timeslicing",
        _ts(nodes={"names": [A100], "selector": "a=b"}),
        ["a=b", "matches no node"],
    ),
    # --- the operator
    ("ts-namespace-missing", "gpu_timeslicing", _ts(namespace="no-such-ns"), ["no-such-ns", "namespace"]),
    (
        "ts-policy-missing",
        "gpu_timeslicing",
        _ts(cluster_policy="no-such-policy"),
        ["no-such-policy", "cluster_policy"],
    ),
    # --- waiting
    ("ts-wait-timeout-0", "gpu_timeslicing", _ts(wait_timeout=0), ["wait_timeout", "0"]),
    ("ts-wait-timeout-negative", "gpu_timeslicing", _ts(wait_timeout=-30), ["wait_timeout", "-30"]),
    # --- connection and credentials
    ("auth-kubeconfig-missing", "gpu_info", {"kubeconfig": MISSING_FILE}, ["kubeconfig", MISSING_FILE]),
    ("auth-kubeconfig-not-one", "gpu_info", {"kubeconfig": NOT_A_KUBECONFIG}, [NOT_A_KUBECONFIG, "not a kubeconfig"]),
    ("auth-context-missing", "gpu_info", {"context": "no-such-context"}, ["context", "no-such-context"]),
    ("auth-unreachable", "gpu_info", {"host": UNREACHABLE, "api_key": "x"}, ["cannot reach", UNREACHABLE, "host"]),
    ("auth-ca-missing", "gpu_info", {"ca_cert": MISSING_FILE}, ["ca_cert", MISSING_FILE]),
    # gpu_mps
    ("mps-replicas-49", "gpu_mps", _ts(replicas=49), ["replicas", "48"]),
    ("mps-replicas-1", "gpu_mps", _ts(replicas=1), ["replicas", ">= 2"]),
    ("mps-on-mig-node", "gpu_mps", _ts(nodes={"names": ["gpu-a100-1"]}), ["gpu-a100-1", "MIG"]),
    ("mps-mixed-strategy", "gpu_mps", _ts(nodes={"names": [H100]}), [H100, "strategy", "mixed"]),
    (
        "mps-on-timeslicing-key",
        "gpu_mps",
        _ts(nodes={"names": ["gpu-h100-1"]}, config_key="time-slicing"),
        ["time-slicing profile", "config_key"],
    ),
    # --- gpu_mig_config
    ("mig-unknown-config", "gpu_mig_config", _mig(config="all-9g.99gb"), ["all-9g.99gb", "config"]),
    (
        "mig-foreign-profile",
        "gpu_mig_config",
        _mig(config=None, layout=_layout({"1g.10gb": 7}), config_name="mine"),
        ["1g.10gb", "A100"],
    ),
    (
        "mig-too-many",
        "gpu_mig_config",
        _mig(config=None, layout=_layout({"1g.5gb": 8}), config_name="mine"),
        ["holds at most 7"],
    ),
    (
        "mig-slices",
        "gpu_mig_config",
        _mig(nodes={"names": [H100]}, config=None, layout=_layout({"4g.40gb": 1, "2g.20gb": 2}), config_name="x"),
        ["8 compute slices"],
    ),
    ("mig-no-mig-gpu", "gpu_mig_config", _mig(nodes={"names": [T4]}), ["T4 does not support MIG"]),
    ("mig-single-mixed-layout", "gpu_mig_config", _mig(strategy="single"), ["use strategy mixed"]),
    ("mig-config-and-layout", "gpu_mig_config", _mig(layout=_layout({"7g.40gb": 1})), ["mutually exclusive"]),
    (
        "mig-config-name-space",
        "gpu_mig_config",
        _mig(config=None, layout=_layout({"7g.40gb": 1}), config_name="my layout"),
        ["config_name", "my layout"],
    ),
    ("mig-layout-no-name", "gpu_mig_config", _mig(config=None, layout=_layout({"7g.40gb": 1})), ["config_name"]),
    ("mig-no-nodes", "gpu_mig_config", {"strategy": "mixed", "config": "all-balanced"}, ["nodes"]),
    ("mig-bad-strategy", "gpu_mig_config", _mig(strategy="dual"), ["strategy", "single"]),
    ("mig-wait-timeout-0", "gpu_mig_config", _mig(wait_timeout=0), ["wait_timeout"]),
    (
        "mig-typo",
        "gpu_mig_config",
        _mig(config=None, layout=[{"devices": "all", "mig-enabled": True, "mig-device": {}}], config_name="x"),
        ["unexpected field 'mig-device'"],
    ),
    ("mig-plus-in-name", "gpu_mig_config", _mig(nodes={"names": [H100]}, config="all-1g.10gb+me"), ["all-1g.10gb.me"]),
    ("mig-config-map-not-dns", "gpu_mig_config", _mig(config_map="Custom MIG"), ["config_map", "Custom MIG"]),
    # --- gpu_reset
    ("reset-node-missing", "gpu_reset", {"nodes": {"names": ["gpu-z9-0"]}}, ["gpu-z9-0", "not found"]),
    ("reset-config-key-slash", "gpu_reset", {"config_key": "a/b", "remove_profiles": True}, ["config_key", "a/b"]),
    ("reset-wait-timeout-negative", "gpu_reset", {"wait_timeout": -1}, ["wait_timeout", "-1"]),
    ("reset-selector-syntax", "gpu_reset", {"nodes": {"selector": "=x"}}, ["nodes.selector", "=x"]),
    ("reset-restore-with-nodes", "gpu_reset", {"restore": True, "nodes": {"names": [A100]}}, ["restore", "nodes"]),
    ("reset-restore-with-key", "gpu_reset", {"restore": True, "config_key": "time-slicing"}, ["restore", "config_key"]),
    # --- gpu_info
    ("info-namespace-wrong", "gpu_info", {"namespace": "default"}, ["default", "namespace"]),
    ("info-policy-wrong", "gpu_info", {"cluster_policy": "no-such-policy"}, ["no-such-policy", "cluster_policy"]),
    ("info-selector-syntax", "gpu_info", {"node_selector": "a in (b"}, ["node_selector", "a in (b"]),
    # --- gpu_sharing_plan
    ("plan-pool-label-bad", "gpu_sharing_plan", {"pool_label": "a b"}, ["pool_label", "a b"]),
    (
        "plan-request-two-kinds",
        "gpu_sharing_plan",
        {"requests": [{"resource": "nvidia.com/gpu", "profile": "1g.5gb", "count": 1}]},
        ["requests[1]", "exactly one of"],
    ),
    (
        "plan-request-unknown-pool",
        "gpu_sharing_plan",
        {"requests": [{"profile": "1g.5gb", "count": 1, "pool": "nowhere"}]},
        ["requests[1]", "nowhere"],
    ),
    ("plan-max-replicas-one", "gpu_sharing_plan", {"max_replicas": 1}, ["max_replicas is 1", "give 2"]),
    ("plan-max-replicas-huge", "gpu_sharing_plan", {"max_replicas": 100000}, ["max_replicas", "4 MiB"]),
    ("plan-time-limit-zero", "gpu_sharing_plan", {"time_limit": 0}, ["time_limit is 0"]),
    # --- the readiness modules
    (
        "tolerations-exists-with-value",
        "gpu_tolerations",
        {"tolerations": [{"key": "gpu", "operator": "Exists", "value": "x", "effect": "NoSchedule"}]},
        ["Exists", "value"],
    ),
    (
        "quota-bad-quantity",
        "gpu_quota",
        {"quota_namespace": "default", "limits": {"nvidia.com/gpu": "lots"}},
        ["nvidia.com/gpu", "lots"],
    ),
    ("smoke-amount-0", "gpu_smoke_test", {"amount": 0}, ["amount"]),
    ("vgpu-no-token", "gpu_vgpu_licensing", {"state": "present"}, ["client_configuration_token"]),
    (
        "autoscaling-min-above-max",
        "gpu_autoscaling",
        {"machinesets": ["gpushare-ocp-gpu-t4-us-east-1a"], "min_replicas": 3, "max_replicas": 1},
        ["min_replicas", "max_replicas"],
    ),
]


@pytest.fixture
def prepared(kube, run_module):
    """The states a few cases need: gpu-a100-1 with MIG on, gpu-h100-1 time-sliced."""
    for name, args in (
        ("gpu_mig_config", _mig(nodes={"names": ["gpu-a100-1"]})),
        ("gpu_timeslicing", _ts(nodes={"names": ["gpu-h100-1"]})),
    ):
        result = run_module(name, args)
        assert not result["failed"], result["msg"]
    return kube


def connection_cases(cluster):
    """Credentials and TLS, against the test cluster's own server."""
    server = cluster.server()
    return [
        (
            "auth-wrong-token",
            "gpu_info",
            {"host": server, "api_key": "not-a-token", "ca_cert": cluster.ca_cert},
            ["Unauthorized", "check the credentials"],
        ),
        (
            "auth-forbidden",
            "gpu_info",
            {"host": server, "api_key": cluster.token("nobody"), "ca_cert": cluster.ca_cert},
            ["forbidden", "list"],
        ),
        (
            "auth-wrong-ca",
            "gpu_info",
            {"host": server, "api_key": cluster.token(), "ca_cert": OTHER_CA},
            ["CERTIFICATE_VERIFY_FAILED", server, "ca_cert", "validate_certs"],
        ),
        (
            "auth-self-signed-no-ca",
            "gpu_info",
            {"host": server, "api_key": cluster.token()},
            ["CERTIFICATE_VERIFY_FAILED", "ca_cert", "validate_certs: false"],
        ),
    ]


def all_cases(cluster):
    return CASES + connection_cases(cluster)


def test_matrix_covers_every_module(cluster):
    cases = all_cases(cluster)
    assert len(cases) >= 40
    assert {"gpu_timeslicing", "gpu_mps", "gpu_mig_config", "gpu_reset", "gpu_info"} <= {case[1] for case in cases}
    assert len({case[0] for case in cases}) == len(cases)


@pytest.mark.parametrize("check", [False, True], ids=["real", "check"])
def test_bad_inputs_refused_before_any_write(cluster, api_client, prepared, check):
    cases = all_cases(cluster)
    with AuditWindow(cluster, api_client) as audit:
        results = [
            run_module_in_process(
                cluster, module, dict((key, value) for key, value in args.items() if value is not None), check=check
            )
            for _case_id, module, args, _fragments in cases
        ]
    problems = []
    for (case_id, _module, _args, fragments), result in zip(cases, results):
        msg = str(result.get("msg", ""))
        missing = [fragment for fragment in fragments if fragment not in msg]
        # An exception the module did not turn into a message comes back with its traceback (MODULE FAILURE).
        traceback = "Traceback (most recent call last)" in msg + str(result.get("exception", ""))
        if not result["failed"]:
            problems.append("%s: not refused (changed=%s)" % (case_id, result.get("changed")))
        elif missing or traceback:
            problems.append("%s: %r lacks %s%s" % (case_id, msg, missing, " (traceback)" if traceback else ""))
    assert not problems, "\n".join(problems)
    assert audit.writes == []
    # No credential given as an option shows in what the modules printed.
    printed = "".join(result["_stdout"] for result in results)
    for secret in (cluster.token(), cluster.token("nobody")):
        assert secret not in printed


def test_credentials_never_shown(cluster, run_module_via_playbook):
    """api_key, password and proxy credentials are no_log: not in the result, nor in what ansible-playbook prints at
    -vvv with --diff (the module's invocation included)."""
    secrets = dict(api_key=cluster.token(), password="gpushare-password-4e1d", basic="gpushare-proxy-9a7c")
    args = {
        "host": cluster.server(),
        "ca_cert": cluster.ca_cert,
        "api_key": secrets["api_key"],
        "username": "someone",
        "password": secrets["password"],
        "proxy_headers": {"proxy_basic_auth": "user:" + secrets["basic"], "basic_auth": "user:" + secrets["basic"]},
    }
    for module in ("gpu_info", "gpu_timeslicing"):
        module_args = dict(args, **(_ts() if module == "gpu_timeslicing" else {}))
        result = run_module_via_playbook(module, module_args, check=True, diff=True, env={"ANSIBLE_VERBOSITY": "3"})
        assert not result["failed"], result["msg"]
        shown = result["_stdout"] + json.dumps(dict((k, v) for k, v in result.items() if k != "_stdout"))
        for secret in secrets.values():
            assert secret not in shown


# (case id, playbook, extra variables, fragments of the failure message, also in check mode): the playbooks and roles
# as a user runs them, refused before any write too. In check mode again where the playbook or the role refuses
# (an assert, the role's argument spec); where a module refuses, the module matrix above already runs every case in
# check mode, and the role passes the variable on as it is (each of those runs cost about 10 CPU-s).
ROLE_CASES = [
    ("no-mode", "site.yml", {}, ["gpushare_mode", "timeslicing, mig, mps or none"], True),
    ("replicas-not-int", "timeslicing.yml", {"openshift_replicas": "many"}, ["openshift_replicas", "int"], True),
    (
        "replicas-1",
        "timeslicing.yml",
        {"openshift_replicas": 1, "openshift_nodes": {"names": [A100]}},
        [">= 2"],
        False,
    ),
    (
        "node-missing",
        "mps.yml",
        {"openshift_nodes": {"names": ["gpu-z9-0"]}},
        ["gpu-z9-0", "not found"],
        False,
    ),
    (
        "mig-unknown-config",
        "mig.yml",
        {"openshift_nodes": {"names": [H100]}, "openshift_mig_config": "all-9g.99gb"},
        ["all-9g.99gb"],
        False,
    ),
]


def failure_messages(report):
    """Every failed task's message in an ansible.posix.json report."""
    return [
        str(result.get("msg"))
        for play in report["plays"]
        for task in play["tasks"]
        for result in task["hosts"].values()
        if result.get("failed")
    ]


@pytest.mark.parametrize(
    "case_id, playbook, variables, fragments, check",
    [
        pytest.param(case_id, playbook, variables, fragments, check, id="%s-%s" % (case_id, mode))
        for case_id, playbook, variables, fragments, in_check_mode in ROLE_CASES
        for check, mode in ((False, "real"), (True, "check"))
        if in_check_mode or not check
    ],
)
def test_roles_refuse_bad_variables_before_any_write(
    cluster, audit_writes, case_id, playbook, variables, fragments, check
):
    with audit_writes() as audit:
        code, report, stderr = run_playbook(
            cluster, playbook, "-e", json.dumps(variables), *(["--check"] if check else [])
        )
    messages = " | ".join(failure_messages(report))
    assert code != 0, "%s was not refused" % case_id
    assert all(fragment in messages for fragment in fragments), messages or stderr
    assert "Traceback (most recent call last)" not in messages
    assert audit.writes == []


def test_restore_with_nothing_recorded_warns_and_writes_nothing(run_module, audit_writes):
    with audit_writes() as audit:
        result = run_module("gpu_reset", {"restore": True})
    assert not result["failed"] and not result["changed"], result.get("msg")
    assert any("Nothing to restore" in warning for warning in result.get("warnings", [])), result.get("warnings")
    assert audit.writes == []


def test_verification_turned_off_on_purpose_connects(cluster, run_module):
    """TLS verification is on by default (the self-signed case of the matrix fails); off on purpose, it connects."""
    result = run_module("gpu_info", {"host": cluster.server(), "api_key": cluster.token(), "validate_certs": False})
    assert not result["failed"], result["msg"]
