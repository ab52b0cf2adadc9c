# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""eda/gpushare-k8s.yml, the EDA controller objects as code (issue 30), checked without an EDA controller: every task
against the argument spec of its ansible.eda module, every object against what eda-server accepts, and the
controller's rulebook against the one ansible-rulebook runs alone. Neither ansible.eda nor eda-server can be installed
here: their rules are carried (tests/unit/data/eda/README.md names the sources and commits)."""

import ast
import json
import os
import re

import pytest
import yaml
from ansible.module_utils.basic import env_fallback
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_rulebook.validators import Validate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RULEBOOKS = os.path.join(ROOT, "extensions", "eda", "rulebooks")
with open(os.path.join(ROOT, "tests", "unit", "data", "eda", "ansible_eda_argument_specs.json")) as _stream:
    ANSIBLE_EDA = json.load(_stream)
# The secrets the playbook takes from a vaulted file (-e @FILE), as a user gives them.
SECRETS = {
    "gpushare_eda_k8s_token": "a-service-account-token",
    "gpushare_eda_k8s_ca_cert": "-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n",
    "gpushare_eda_aap_token": "an-oauth-token",
}

# eda-server d05189a, src/aap_eda/api/serializers/*.py: the fields each create serializer takes, and (ansible.eda
# 8a96752, plugins/modules/*.py create_params) the field each module option the playbook uses is sent as.
SERIALIZER_FIELDS = {
    "credential_type": {"name", "description", "inputs", "injectors"},
    "credential": {"name", "description", "inputs", "credential_type_id", "organization_id"},
    "project": {
        "url", "proxy", "name", "description", "organization_id", "eda_credential_id",
        "signature_validation_credential_id", "verify_ssl", "scm_type", "scm_branch", "scm_refspec",
        "update_revision_on_launch", "scm_update_cache_timeout",
    },
    "decision_environment": {"name", "description", "image_url", "organization_id", "eda_credential_id", "pull_policy"},
    "rulebook_activation": {
        "name", "description", "is_enabled", "restart_on_project_update", "decision_environment_id", "rulebook_id",
        "extra_var", "organization_id", "user", "restart_policy", "awx_token_id", "log_level", "eda_credentials",
        "k8s_service_name", "source_mappings", "skip_audit_events", "enable_persistence", "rule_engine_credential_id",
        "k8s_pod_service_account_name", "k8s_pod_labels", "k8s_pod_annotations", "k8s_pod_node_selector",
        "k8s_pod_tolerations",
    },
}  # fmt: skip
SENT_AS = {
    "organization_name": "organization_id",
    "credential_type_name": "credential_type_id",
    "project_name": "rulebook_id",
    "rulebook_name": "rulebook_id",
    "decision_environment_name": "decision_environment_id",
    "extra_vars": "extra_var",
    "state": "is_enabled",
}
# Options that are the module's own, never sent: the object's name lookups, and the project's sync after saving.
NOT_SENT = {"state", "sync", "wait"}
# eda-server d05189a, src/aap_eda/core/utils/credentials.py.
SUPPORTED_KEYS_IN_INJECTORS = {"env", "extra_vars", "file"}
RESERVED_EXTRA_VAR_KEYS = {"ansible", "eda"}
VALID_FIELD_FORMATS = {"aes_key", "aes_salt", "binary_base64", "pem_certificate", "ssh_private_key", "url", "vault_id"}
FIELD_TYPES = {"string", "boolean"}
# eda-server d05189a, src/aap_eda/core/management/commands/create_initial_data.py: the managed type run_job_template
# needs (src/aap_eda/core/validators.py, check_rulesets_require_token), its input fields and what it injects.
AAP_TYPE = "Red Hat Ansible Automation Platform"
AAP_FIELDS = {"host", "username", "password", "oauth_token", "verify_ssl", "request_timeout"}
AAP_INJECTS = {
    "extra_vars": {
        "aap_hostname", "aap_username", "aap_password", "aap_token", "aap_request_timeout", "aap_verify_ssl",
    },
    "env": {
        "TOWER_HOST", "TOWER_USERNAME", "TOWER_PASSWORD", "TOWER_VERIFY_SSL", "TOWER_OAUTH_TOKEN", "CONTROLLER_HOST",
        "CONTROLLER_USERNAME", "CONTROLLER_PASSWORD", "CONTROLLER_VERIFY_SSL", "CONTROLLER_OAUTH_TOKEN",
        "CONTROLLER_REQUEST_TIMEOUT", "AAP_HOSTNAME", "AAP_USERNAME", "AAP_PASSWORD", "AAP_VERIFY_SSL", "AAP_TOKEN",
        "AAP_REQUEST_TIMEOUT",
    },
}  # fmt: skip
TOKEN_ACTIONS = {"run_job_template", "run_workflow_template"}


def load_tasks():
    """The play's tasks as the ansible.eda modules receive them: (module, templated arguments)."""
    loader = DataLoader()
    (play,) = loader.load_from_file(os.path.join(ROOT, "eda", "gpushare-k8s.yml"), trusted_as_template=True)
    templar = Templar(loader=loader, variables=dict(play["vars"], **SECRETS))
    tasks = []
    for task in play["tasks"]:
        (module,) = [key for key in task if key.startswith("ansible.eda.")]
        tasks.append((module.split(".")[-1], templar.template(task[module])))
    return tasks


TASKS = load_tasks()


def objects(module):
    return [args for name, args in TASKS if name == module]


def argument_spec(module):
    """The module's spec with its env fallbacks made callable again, as AnsibleModule gets it."""
    spec = dict(ANSIBLE_EDA["modules"][module], **ANSIBLE_EDA["auth_argspec"])
    for option in spec.values():
        if "fallback" in option:
            option["fallback"] = (env_fallback, option["fallback"][1])
        # Deprecation metadata, not validation: AnsibleModule reads it only to warn.
        option.pop("removed_in_version", None)
        option.pop("removed_from_collection", None)
    return spec


def load_rulebook(name):
    with open(os.path.join(RULEBOOKS, name)) as stream:
        return yaml.safe_load(stream)


@pytest.mark.parametrize("module, args", TASKS, ids=["%s: %s" % (module, args["name"]) for module, args in TASKS])
def test_every_task_validates_against_its_ansible_eda_modules_argument_spec(module, args, monkeypatch):
    # The connection comes from the environment, as the playbook's header says.
    monkeypatch.setenv("CONTROLLER_HOST", "https://aap.example.com")
    result = ArgumentSpecValidator(argument_spec(module)).validate(dict(args))
    assert result.error_messages == [] and result.unsupported_parameters == set()


@pytest.mark.parametrize("module, args", TASKS, ids=["%s: %s" % (module, args["name"]) for module, args in TASKS])
def test_what_the_module_sends_is_a_field_of_eda_servers_serializer(module, args):
    sent = {SENT_AS.get(option, option) for option in args if option not in NOT_SENT}
    if module == "rulebook_activation":
        sent.add("is_enabled")
    assert sent - SERIALIZER_FIELDS[module] == set()


def test_the_credential_type_passes_eda_servers_schema_and_injector_rules():
    (credential_type,) = objects("credential_type")
    fields = credential_type["inputs"]["fields"]
    ids = [field["id"] for field in fields]
    # validate_schema
    assert len(ids) == len(set(ids))
    assert all(re.match(r"^\w+$", id_) and not id_.upper().startswith("EDA_") for id_ in ids)
    for field in fields:
        assert isinstance(field.get("label"), str) and field.get("type", "string") in FIELD_TYPES
        assert field.get("format") in VALID_FIELD_FORMATS | {None}
        assert isinstance(field.get("default"), (str, bool, type(None)))
        assert all(isinstance(field[flag], bool) for flag in ("secret", "multiline") if flag in field)
    assert set(credential_type["inputs"]["required"]) <= set(ids)
    # validate_injectors: its keys, file keys `template` or `template.<name>`, every {{ }} a field or the file's name
    injectors = credential_type["injectors"]
    assert set(injectors) <= SUPPORTED_KEYS_IN_INJECTORS
    assert all(re.match(r"^template(\.\w+)?$", key) for key in injectors.get("file", {}))
    known = set(ids) | ({"eda.filename"} if injectors.get("file") else set())
    for kind in injectors:
        assert not set(injectors[kind]) & RESERVED_EXTRA_VAR_KEYS
        for value in injectors[kind].values():
            assert set(re.findall(r"{{\s*([\w.]+)\s*}}", value)) <= known, value
    # What the source and kubernetes.core read (plugins/module_utils/args.py's fallbacks), each from the credential.
    assert set(injectors["env"]) == {"K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_VERIFY_SSL", "K8S_AUTH_SSL_CA_CERT"}


def test_each_credential_gives_the_inputs_of_its_type():
    (credential_type,) = objects("credential_type")
    own = {field["id"] for field in credential_type["inputs"]["fields"]}
    for credential in objects("credential"):
        inputs = set(credential["inputs"])
        if credential["credential_type_name"] == AAP_TYPE:
            assert inputs <= AAP_FIELDS
            # activation.py, _validate_aap_credential: a token, or a user and a password.
            assert "oauth_token" in inputs or {"username", "password"} <= inputs
        else:
            assert credential["credential_type_name"] == credential_type["name"]
            assert set(credential_type["inputs"]["required"]) <= inputs <= own


def test_the_activation_names_what_the_playbook_makes_and_eda_controller_accepts_it():
    (activation,) = objects("rulebook_activation")
    (project,) = objects("project")
    (decision_environment,) = objects("decision_environment")
    credentials = {credential["name"]: credential for credential in objects("credential")}
    assert activation["project_name"] == project["name"]
    assert activation["decision_environment_name"] == decision_environment["name"]
    assert set(activation["eda_credentials"]) <= set(credentials)

    # imports.py: a project's rulebooks are the YAML files under extensions/eda/rulebooks/, named by their path there;
    # each a list of rulesets whose rules all have a name, a condition and an action.
    rulebook = load_rulebook(activation["rulebook_name"])
    assert isinstance(rulebook, list)
    rules = [rule for ruleset in rulebook for rule in ruleset["rules"]]
    assert rules and all(rule.get("name") and rule.get("condition") and rule.get("action") for rule in rules)
    # validators.py: a rulebook with run_job_template needs the activation to carry an AAP credential.
    assert any(set(rule["action"]) & TOKEN_ACTIONS for rule in rules)
    assert AAP_TYPE in [credentials[name]["credential_type_name"] for name in activation["eda_credentials"]]

    # activation.py, _validate_eda_credentials: no injected key twice (extra variables, env, files), the activation's
    # own extra variables counted; none of them reserved.
    extra_vars = yaml.safe_load(activation["extra_vars"])
    assert isinstance(extra_vars, dict) and not set(extra_vars) & RESERVED_EXTRA_VAR_KEYS
    (credential_type,) = objects("credential_type")
    injected = {"extra_vars": list(extra_vars), "env": [], "file": []}
    for name in activation["eda_credentials"]:
        if credentials[name]["credential_type_name"] == AAP_TYPE:
            keys = {kind: list(AAP_INJECTS[kind]) for kind in AAP_INJECTS}
        else:
            keys = {kind: list(values) for kind, values in credential_type["injectors"].items()}
        for kind, values in keys.items():
            injected[kind] += values
    assert all(len(keys) == len(set(keys)) for keys in injected.values())
    # The rulebook's variables, and nothing it does not read.
    with open(os.path.join(RULEBOOKS, activation["rulebook_name"])) as stream:
        text = stream.read()
    assert all(re.search(r"\b%s\b" % name, text) for name in extra_vars)


@pytest.mark.parametrize("name", ["gpu_autoplan.yml", "gpu_autoplan_controller.yml"])
def test_the_rulebook_passes_ansible_rulebooks_own_schema(name):
    # ansible-rulebook 1.3.2 (requirements-dev.txt; the DE's), as it checks a rulebook before running it.
    Validate.rulebook(load_rulebook(name))


def test_the_event_sources_example_passes_ansible_rulebooks_own_schema():
    path = os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "gpu_demand.py")
    with open(path) as stream:
        tree = ast.parse(stream.read())
    [example] = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and [target.id for target in node.targets] == ["EXAMPLES"]
    ]
    Validate.rulebook(yaml.safe_load(example))


def test_the_controllers_rulebook_is_the_standalone_one_but_for_its_action():
    standalone = load_rulebook("gpu_autoplan.yml")
    controller = load_rulebook("gpu_autoplan_controller.yml")
    standalone_actions = [rule.pop("action") for ruleset in standalone for rule in ruleset["rules"]]
    controller_actions = [rule.pop("action") for ruleset in controller for rule in ruleset["rules"]]
    assert controller == standalone
    (run_playbook,) = [action["run_playbook"] for action in standalone_actions]
    (run_job_template,) = [action["run_job_template"] for action in controller_actions]
    assert run_job_template["job_args"]["extra_vars"] == run_playbook["extra_vars"]


def test_the_job_template_it_launches_runs_the_sharing_plan_and_takes_its_variables():
    with open(os.path.join(ROOT, "awx", "gpushare-k8s.yml")) as stream:
        templates = {template["name"]: template for template in yaml.safe_load(stream)["job_templates"]}
    (activation,) = objects("rulebook_activation")
    template = templates[yaml.safe_load(activation["extra_vars"])["gpu_autoplan_job_template"]]
    (action,) = [
        rule["action"] for ruleset in load_rulebook("gpu_autoplan_controller.yml") for rule in ruleset["rules"]
    ]
    assert "'%s'" % template["name"] in action["run_job_template"]["name"]
    assert template["playbook"] == "playbooks/sharing_plan.yml" and template["job_type"] == "run"
    # AWX drops launch-time extra variables a template does not prompt for.
    assert template["ask_variables_on_launch"] is True and not template.get("survey_enabled")
