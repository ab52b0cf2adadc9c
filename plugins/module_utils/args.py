# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every argument spec and shared option of the collection's modules, in one place."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible.module_utils.basic import AnsibleFallbackNotFound
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC as K8S_AUTH_ARG_SPEC

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    CUSTOM_MIG_CONFIG_MAP,
    POLICY_MIG_STRATEGIES,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import MPS_MAX_CLIENTS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_VALUE,
    LABEL_VALUE_MAX_LENGTH,
)

# NVIDIA's CUDA vectorAdd sample, as the GPU Operator's documentation runs it.
SMOKE_TEST_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"


def k8s_env_fallback(*names, **kwargs):
    """Read the first of ``names`` that is set, as kubernetes.core does.

    kubernetes.core reads booleans as "anything but 0/false/no is true"; Ansible's own boolean
    parsing would reject or flip some values (``off``), so booleans are converted here.
    """
    for name in names:
        value = os.environ.get(name)
        if value is not None:
            if kwargs.get("boolean"):
                return value.lower() not in ("0", "false", "no")
            if kwargs.get("comma_list"):
                return [item.strip() for item in value.split(",") if item.strip()]
            return value
    raise AnsibleFallbackNotFound


# validate-modules only accepts fallback=(callable, [args]), so the keyword variants get their own
# callables.
def k8s_env_bool_fallback(*names):
    """``k8s_env_fallback(*names, boolean=True)``."""
    return k8s_env_fallback(*names, boolean=True)


def k8s_env_list_fallback(*names):
    """``k8s_env_fallback(*names, comma_list=True)``."""
    return k8s_env_fallback(*names, comma_list=True)


# The environment variables kubernetes.core reads for each connection option (its client's K8S_AUTH_<OPTION>, then
# K8S_AUTH_<client attribute>), as fallbacks: booleans and lists read as kubernetes.core reads them.
AUTH_ENV_FALLBACKS = dict(
    kubeconfig=(k8s_env_fallback, ["K8S_AUTH_KUBECONFIG"]),
    context=(k8s_env_fallback, ["K8S_AUTH_CONTEXT"]),
    host=(k8s_env_fallback, ["K8S_AUTH_HOST"]),
    api_key=(k8s_env_fallback, ["K8S_AUTH_API_KEY"]),
    username=(k8s_env_fallback, ["K8S_AUTH_USERNAME"]),
    password=(k8s_env_fallback, ["K8S_AUTH_PASSWORD"]),
    validate_certs=(k8s_env_bool_fallback, ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"]),
    ca_cert=(k8s_env_fallback, ["K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"]),
    client_cert=(k8s_env_fallback, ["K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"]),
    client_key=(k8s_env_fallback, ["K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"]),
    proxy=(k8s_env_fallback, ["K8S_AUTH_PROXY"]),
    no_proxy=(k8s_env_fallback, ["K8S_AUTH_NO_PROXY"]),
    persist_config=(k8s_env_bool_fallback, ["K8S_AUTH_PERSIST_CONFIG"]),
    impersonate_user=(k8s_env_fallback, ["K8S_AUTH_IMPERSONATE_USER"]),
    impersonate_groups=(k8s_env_list_fallback, ["K8S_AUTH_IMPERSONATE_GROUPS"]),
)
PROXY_HEADERS_ENV_FALLBACKS = dict(
    proxy_basic_auth=(k8s_env_fallback, ["K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH"]),
    basic_auth=(k8s_env_fallback, ["K8S_AUTH_PROXY_HEADERS_BASIC_AUTH"]),
    user_agent=(k8s_env_fallback, ["K8S_AUTH_PROXY_HEADERS_USER_AGENT"]),
)


def _with_env_fallbacks(spec, fallbacks):
    """A copy of ``spec`` where each option of ``fallbacks`` reads its environment variables when not given."""
    return dict(
        (name, dict(option, fallback=fallbacks[name]) if name in fallbacks else dict(option))
        for name, option in spec.items()
    )


# kubernetes.core's connection options themselves (names, types, aliases, no_log), as its modules and
# community.okd's take them; kube/client.py turns them into a client (tests/unit: every one of them is handled).
AUTH_ARG_SPEC = _with_env_fallbacks(K8S_AUTH_ARG_SPEC, AUTH_ENV_FALLBACKS)
AUTH_ARG_SPEC["proxy_headers"]["options"] = _with_env_fallbacks(
    K8S_AUTH_ARG_SPEC["proxy_headers"]["options"], PROXY_HEADERS_ENV_FALLBACKS
)
# The path of a key file, not a key: said so, for validate-modules' no-log-needed rule.
AUTH_ARG_SPEC["client_key"]["no_log"] = False

# Where the GPU Operator is (documented by the gpushare.k8s.operator fragment).
OPERATOR_ARG_SPEC = dict(
    cluster_policy=dict(type="str"),
    namespace=dict(type="str"),
)


def wait_arg_spec(default_timeout):
    """``wait`` and ``wait_timeout``; each module documents what it waits for."""
    return dict(wait=dict(type="bool", default=True), wait_timeout=dict(type="int", default=default_timeout))


NODES_SPEC = dict(
    type="dict",
    options=dict(
        names=dict(type="list", elements="str"),
        selector=dict(type="str"),
    ),
)

# Options every device-plugin profile module shares (documented in the device_plugin_profile fragment).
PROFILE_ARG_SPEC = dict(
    state=dict(type="str", default="present", choices=["present", "absent"]),
    replicas=dict(type="int"),
    rename_by_default=dict(type="bool", default=False),
    fail_requests_greater_than_one=dict(type="bool"),
    config_map=dict(type="str"),
    config_key=dict(type="str", no_log=False),
    nodes=NODES_SPEC,
    make_default=dict(type="bool", default=False),
    restart_device_plugin=dict(type="bool"),
    drain=dict(type="bool", default=False),
    force=dict(type="bool", default=True),
    **dict(OPERATOR_ARG_SPEC, **wait_arg_spec(300)),
)

PROFILE_REQUIRED_IF = [("state", "present", ["replicas"])]
TIMESLICING_ARG_SPEC = dict(PROFILE_ARG_SPEC, resources=dict(type="list", elements="str", default=["nvidia.com/gpu"]))
MPS_ARG_SPEC = PROFILE_ARG_SPEC
MIG_ARG_SPEC = dict(
    strategy=dict(type="str", choices=list(POLICY_MIG_STRATEGIES)),
    config=dict(type="str"),
    layout=dict(type="list", elements="dict"),
    config_name=dict(type="str"),
    config_map=dict(type="str", default=CUSTOM_MIG_CONFIG_MAP),
    nodes=dict(NODES_SPEC, required=True),
    drain=dict(type="bool", default=False),
    **dict(OPERATOR_ARG_SPEC, **wait_arg_spec(600)),
)

MIG_MODULE_KWARGS = dict(
    mutually_exclusive=[("config", "layout")],
    required_one_of=[("config", "layout")],
    required_together=[("layout", "config_name")],
)

RESET_ARG_SPEC = dict(
    nodes=NODES_SPEC,
    config_key=dict(type="str", no_log=False),
    remove_profiles=dict(type="bool", default=False),
    mig=dict(type="bool", default=True),
    restore=dict(type="bool", default=False),
    drain=dict(type="bool", default=False),
    force=dict(type="bool", default=False),
    restart_device_plugin=dict(type="bool"),
    **dict(OPERATOR_ARG_SPEC, **wait_arg_spec(600)),
)

# A restore puts back every record, whatever the reset options say: combining them is a mistake to report.
RESET_MODULE_KWARGS = dict(
    mutually_exclusive=[
        ("restore", "nodes"),
        ("restore", "config_key"),
        ("restore", "remove_profiles"),
        ("restore", "mig"),
    ]
)

INFO_ARG_SPEC = dict(OPERATOR_ARG_SPEC, node_selector=dict(type="str"))

SHARING_PLAN_REQUEST_SPEC = dict(
    resource=dict(type="str"),
    profile=dict(type="str"),
    memory_gib=dict(type="float"),
    compute_share=dict(type="float"),
    count=dict(type="int", required=True),
    pool=dict(type="str"),
)
# One entry of gpu_sharing_plan's ``node_pools``: a node pool that is not a Kubernetes object (Kapsule, VKS).
SHARING_PLAN_NODE_POOL_SPEC = dict(
    pool=dict(type="str", required=True),
    name=dict(type="str"),
    size=dict(type="int", required=True),
    min_size=dict(type="int", default=0),
    max_size=dict(type="int"),
    gpus=dict(type="int", required=True),
    product=dict(type="str"),
    gpu_memory_mib=dict(type="int"),
    autoscaling=dict(type="bool", default=False),
)
SHARING_PLAN_ARG_SPEC = dict(
    OPERATOR_ARG_SPEC,
    node_selector=dict(type="str"),
    pool_label=dict(type="str"),
    requests=dict(type="list", elements="dict", options=SHARING_PLAN_REQUEST_SPEC),
    read_pods=dict(type="bool", default=True),
    allow_moves=dict(type="bool", default=False, aliases=["drain"]),
    sharing_method=dict(type="str", default="time-slicing", choices=["time-slicing", "mps"]),
    max_replicas=dict(type="int", default=MPS_MAX_CLIENTS),
    time_limit=dict(type="float", default=10.0),
    capacity=dict(type="bool", default=False),
    node_pools=dict(type="list", elements="dict", options=SHARING_PLAN_NODE_POOL_SPEC),
    max_new_nodes=dict(type="int", default=0),
    node_costs=dict(type="dict"),
    max_new_nodes_per_hour=dict(type="int"),
    scale_in_after=dict(type="int", default=1800),
)

# The gpu_demand event source's own options (extensions/eda, docs/EDA.md); it takes AUTH_ARG_SPEC's beside them.
GPU_DEMAND_ARG_SPEC = dict(
    pool_label=dict(type="str"),
    node_selector=dict(type="str", default="nvidia.com/gpu.present=true"),
    settle_seconds=dict(type="float", default=10.0),
    longest_settle_seconds=dict(type="float", default=60.0),
    cool_down_seconds=dict(type="float", default=60.0),
    handoff_timeout_seconds=dict(type="float", default=300.0),
)

PREFLIGHT_CHECKS = ["taints", "operator", "sharing", "autoscaling", "quota"]
PREFLIGHT_ARG_SPEC = dict(
    OPERATOR_ARG_SPEC,
    node_selector=dict(type="str"),
    fail_on=dict(type="str", default="never", choices=["error", "warning", "never"]),
    checks=dict(type="list", elements="str", default=PREFLIGHT_CHECKS, choices=PREFLIGHT_CHECKS),
    autoscaler_gpu_label=dict(type="str"),
)

TOLERATION_SPEC = dict(
    key=dict(type="str", no_log=False),
    operator=dict(type="str", choices=["Exists", "Equal"]),
    value=dict(type="str"),
    effect=dict(type="str", choices=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
    tolerationSeconds=dict(type="int"),
)
TOLERATIONS_ARG_SPEC = dict(
    OPERATOR_ARG_SPEC,
    tolerations=dict(type="list", elements="dict", required=True, options=TOLERATION_SPEC),
    state=dict(type="str", default="present", choices=["present", "absent"]),
    keep_gpu_toleration=dict(type="bool", default=True),
    nfd=dict(type="bool", default=True),
)

SMOKE_TEST_ARG_SPEC = dict(
    name=dict(type="str", default="gpushare-smoke-test"),
    workload_namespace=dict(type="str", default="default"),
    kind=dict(type="str", default="deployment", choices=["deployment", "pod"]),
    replicas=dict(type="int", default=1),
    resource=dict(type="str", default="nvidia.com/gpu"),
    amount=dict(type="int", default=1),
    image=dict(type="str", default=SMOKE_TEST_IMAGE),
    command=dict(type="list", elements="str"),
    node_selector=dict(type="dict"),
    nodes=NODES_SPEC,
    tolerations=dict(type="list", elements="dict"),
    cleanup=dict(type="bool", default=True),
    wait_timeout=dict(type="int", default=300),
)

QUOTA_ARG_SPEC = dict(
    quota_namespace=dict(type="str", required=True),
    name=dict(type="str", default="gpu-quota"),
    limits=dict(type="dict", required=True),
    state=dict(type="str", default="present", choices=["present", "absent"]),
)

AUTOSCALING_ARG_SPEC = dict(
    machinesets=dict(type="list", elements="str"),
    machine_api_namespace=dict(type="str", default="openshift-machine-api"),
    accelerator=dict(type="str"),
    gpus_per_machine=dict(type="int"),
    min_replicas=dict(type="int"),
    max_replicas=dict(type="int"),
    gpu_limit=dict(type="dict", options=dict(min=dict(type="int", required=True), max=dict(type="int", required=True))),
    delay_after_add=dict(type="str"),
    zone_label=dict(type="bool", default=True),
    create_cluster_autoscaler=dict(type="bool", default=False),
    autoscaler_gpu_label=dict(type="str"),
    nodes=NODES_SPEC,
)
AUTOSCALING_MODULE_KWARGS = dict(mutually_exclusive=[("machinesets", "nodes")])

# gpu_machineset's ``sharing``: what the MachineSet's new nodes boot into (plan/machineset.py checks the fields each
# mode takes).
MACHINESET_SHARING_SPEC = dict(
    mode=dict(type="str", required=True, choices=["whole", "mig", "time-slicing", "mps"]),
    layout=dict(type="list", elements="dict"),
    config_name=dict(type="str"),
    config_key=dict(type="str", no_log=False),
    replicas=dict(type="int"),
    rename_by_default=dict(type="bool", default=False),
)
MACHINESET_ARG_SPEC = dict(
    name=dict(type="str", required=True),
    machine_api_namespace=dict(type="str", default="openshift-machine-api"),
    replicas=dict(type="int"),
    sharing=dict(type="dict", options=MACHINESET_SHARING_SPEC),
    **dict(OPERATOR_ARG_SPEC, **wait_arg_spec(1200)),
)
MACHINESET_MODULE_KWARGS = dict(required_one_of=[("replicas", "sharing")])

VGPU_LICENSING_ARG_SPEC = dict(
    OPERATOR_ARG_SPEC,
    client_configuration_token=dict(type="str", no_log=True),
    gridd_conf=dict(type="str", default="FeatureType=1\n"),
    name=dict(type="str", default="licensing-config"),
    storage=dict(type="str", default="secret", choices=["secret", "configmap"]),
    nls_enabled=dict(type="bool", default=True),
    state=dict(type="str", default="present", choices=["present", "absent"]),
)
VGPU_LICENSING_MODULE_KWARGS = dict(required_if=[("state", "present", ("client_configuration_token",))])

MONITORING_ARG_SPEC = dict(
    OPERATOR_ARG_SPEC,
    dcgm_exporter=dict(type="bool"),
    service_monitor=dict(type="bool"),
)
MONITORING_MODULE_KWARGS = dict(required_one_of=[("dcgm_exporter", "service_monitor")])

NVIDIA_SMI_ARG_SPEC = dict(
    OPERATOR_ARG_SPEC,
    nodes=NODES_SPEC,
    exec_timeout=dict(type="int", default=30),
    fail_on_error=dict(type="bool", default=True),
)


# --- what Kubernetes accepts in the options that become names, keys and label values ------------------------------

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL = re.compile(r"^%s$" % _DNS_LABEL)
DNS_SUBDOMAIN = re.compile(r"^%s(\.%s)*$" % (_DNS_LABEL, _DNS_LABEL))
# A label key: an optional DNS-subdomain prefix and '/', then a name of 63 characters or less.
LABEL_KEY = re.compile(r"^(%s(\.%s)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$" % (_DNS_LABEL, _DNS_LABEL))

NAMESPACE_RULE = (
    DNS_LABEL,
    63,
    "a namespace name: 63 characters or less, lower-case letters, digits and '-', starting and ending with a letter "
    "or digit",
)
OBJECT_NAME_RULE = (
    DNS_SUBDOMAIN,
    253,
    "an object name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, 253 "
    "characters or less",
)
# A profile's key names a ConfigMap key (a label value is one too) and becomes the value of the node label
# nvidia.com/device-plugin.config; a MIG config's name becomes the value of nvidia.com/mig.config: both must be
# label values.
LABEL_VALUE_RULE = (
    LABEL_VALUE,
    LABEL_VALUE_MAX_LENGTH,
    "it becomes a node label value: 63 characters or less, letters, digits, '-', '_' and '.', starting and ending "
    "with a letter or digit (e.g. team-a)",
)
LABEL_KEY_RULE = (
    LABEL_KEY,
    317,
    "a node label key: an optional prefix (a DNS subdomain, 253 characters or less) and '/', then a name of 63 "
    "characters or less, letters, digits, '-', '_' and '.', starting and ending with a letter or digit (e.g. "
    "vks.vngcloud.vn/accelerator)",
)

# option -> (pattern, longest length, what the value must be); "parent.child" is a suboption ("nodes.names" applies to
# each listed name).
OPTION_RULES = {
    "namespace": NAMESPACE_RULE,
    "quota_namespace": NAMESPACE_RULE,
    "workload_namespace": NAMESPACE_RULE,
    "machine_api_namespace": NAMESPACE_RULE,
    "cluster_policy": OBJECT_NAME_RULE,
    "config_map": OBJECT_NAME_RULE,
    "nodes.names": OBJECT_NAME_RULE,
    "config_key": LABEL_VALUE_RULE,
    "config_name": LABEL_VALUE_RULE,
    "sharing.config_key": LABEL_VALUE_RULE,
    "sharing.config_name": LABEL_VALUE_RULE,
    "autoscaler_gpu_label": LABEL_KEY_RULE,
    "pool_label": LABEL_KEY_RULE,
}
# Options counting seconds: a wait of 0 or less would start a change and fail at once, half way through it.
TIMEOUT_OPTIONS = ("wait_timeout", "exec_timeout")


def _option_values(params, option):
    """The values ``params`` holds for ``option`` (``nodes.names``: each name), with their display names."""
    if "." in option:
        parent, child = option.split(".", 1)
        values = (params.get(parent) or {}).get(child)
        values = [] if values is None else values if isinstance(values, list) else [values]
        return [(option, value) for value in values]
    value = params.get(option)
    return [] if value is None else [(option, value)]


def option_problems(params):
    """Every option value Kubernetes would refuse (or that would make a change fail half way), as messages
    naming the option, the value and what it must be; checked before a module makes any request."""
    problems = []
    for option, (pattern, longest, rule) in sorted(OPTION_RULES.items()):
        for shown, value in _option_values(params, option):
            value = str(value)
            if len(value) > longest:
                problems.append("%s %r is %d characters long; %s" % (shown, value, len(value), rule))
            elif not pattern.match(value):
                problems.append("%s %r is not valid: %s" % (shown, value, rule))
    for option in TIMEOUT_OPTIONS:
        value = params.get(option)
        if value is not None and value <= 0:
            hint = " (to not wait at all, set wait: false)" if option == "wait_timeout" and "wait" in params else ""
            problems.append("%s is %s; give a number of seconds above 0%s" % (option, value, hint))
    return problems


def gpu_demand_options(args):
    """The gpu_demand event source's args checked as a module checks its arguments (aliases, types, defaults, the
    ``K8S_AUTH_*`` fallbacks of the connection options, unknown names refused): the same connection options work in a
    rulebook as in a playbook. Raises GpuShareError listing every problem."""
    result = ArgumentSpecValidator(dict(AUTH_ARG_SPEC, **GPU_DEMAND_ARG_SPEC)).validate(dict(args))
    problems = list(result.error_messages)
    params = result.validated_parameters
    for option in ("settle_seconds", "longest_settle_seconds", "cool_down_seconds"):
        if not problems and params[option] < 0:
            problems.append("%s is %s; give a number of seconds, 0 or more" % (option, params[option]))
    if not problems and params["longest_settle_seconds"] < params["settle_seconds"]:
        problems.append("longest_settle_seconds is shorter than settle_seconds")
    if not problems and params["handoff_timeout_seconds"] <= 0:
        problems.append(
            "handoff_timeout_seconds is %s; give a number of seconds above 0" % params["handoff_timeout_seconds"]
        )
    if problems:
        raise GpuShareError("gpushare.k8s.gpu_demand: " + "; ".join(problems))
    return params
