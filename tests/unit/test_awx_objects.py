# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""awx/gpushare-k8s.yml, the AWX objects users import (issue 21): every playbook it names exists, every reference
resolves, and every survey question sets a variable the playbook or its role takes, with the role's type, choices
and default (meta/argument_specs.yml), booleans as the strings AWX sends."""

import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(ROOT, "awx", "gpushare-k8s.yml")) as stream:
    OBJECTS = yaml.safe_load(stream)
TEMPLATES = OBJECTS["job_templates"]
ROLES = ("openshift", "scaleway", "vks")
# The playbooks' own variables: gpushare_mode is each role's <role>_mode (site.yml); gpushare_fail_on the severities
# preflight.yml fails on (its dict of choices).
PLAYBOOK_VARIABLES = ("gpushare_mode", "gpushare_fail_on")
# argument spec type -> survey question types that send it (AWX sends booleans as text: multiple choice true/false).
SURVEY_TYPES = {"str": ("text", "multiplechoice", "password"), "int": ("integer",), "bool": ("multiplechoice",)}


def playbook_defaults(playbook):
    """The variables a playbook sets itself (its play's ``vars``), the defaults a survey must repeat."""
    with open(os.path.join(ROOT, playbook)) as stream:
        return yaml.safe_load(stream)[0].get("vars") or {}


def role_options(role):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as stream:
        return yaml.safe_load(stream)["argument_specs"]["main"]["options"]


def platform_of(template):
    return (yaml.safe_load(template.get("extra_vars") or "") or {}).get("gpushare_platform")


def questions(template):
    return ((template.get("related") or {}).get("survey_spec") or {}).get("spec", [])


def survey_default(option):
    default = option.get("default", "")
    if option["type"] == "bool":
        return "true" if default else "false"
    return "" if default is None else default


@pytest.mark.parametrize("template", TEMPLATES, ids=[t["name"] for t in TEMPLATES])
def test_the_playbook_exists_and_the_references_resolve(template):
    assert os.path.isfile(os.path.join(ROOT, template["playbook"])), template["playbook"]
    assert template["project"] in [project["natural_key"] for project in OBJECTS["projects"]]
    assert template["inventory"] in [inventory["natural_key"] for inventory in OBJECTS["inventory"]]
    assert template["execution_environment"] in [ee["natural_key"] for ee in OBJECTS["execution_environments"]]
    assert template["natural_key"] == {
        "organization": template["project"]["organization"],
        "name": template["name"],
        "type": "job_template",
    }
    assert bool(questions(template)) == bool(template.get("survey_enabled"))


def test_the_fleet_inventory_comes_from_a_file_of_the_project():
    [source] = OBJECTS["inventory_sources"]
    assert os.path.isfile(os.path.join(ROOT, source["source_path"]))
    assert source["source_project"] in [project["natural_key"] for project in OBJECTS["projects"]]


def test_every_platform_has_a_template():
    assert sorted(platform_of(t) for t in TEMPLATES if platform_of(t)) == sorted(ROLES)


@pytest.mark.parametrize(
    "template, question",
    [(t, q) for t in TEMPLATES for q in questions(t)],
    ids=["%s: %s" % (t["name"], q["variable"]) for t in TEMPLATES for q in questions(t)],
)
def test_a_survey_question_matches_what_its_playbook_or_role_takes(template, question):
    variable, platform = question["variable"], platform_of(template)
    own = playbook_defaults(template["playbook"])
    if variable in own:
        default = own[variable]
        assert question["default"] == (str(default).lower() if isinstance(default, bool) else default)
        if isinstance(default, bool):
            assert question["choices"] == ["true", "false"]
        return
    if variable in PLAYBOOK_VARIABLES:
        if variable == "gpushare_mode":
            roles = [platform] if platform else ROLES
            assert set(question["choices"]) <= set.intersection(
                *(set(role_options(role)["%s_mode" % role]["choices"]) for role in roles)
            )
        else:
            with open(os.path.join(ROOT, "playbooks", "preflight.yml")) as stream:
                preflight = stream.read()
            assert all("'%s':" % choice in preflight for choice in question["choices"])
            assert question["default"] in question["choices"]
        return
    assert platform and variable.startswith(platform + "_"), "%s is not a variable of the %s role" % (
        variable,
        platform,
    )
    option = role_options(platform).get(variable)
    assert option is not None, "%s is not in roles/%s/meta/argument_specs.yml" % (variable, platform)
    assert question["type"] in SURVEY_TYPES[option["type"]], (question["type"], option["type"])
    assert question["default"] == survey_default(option)
    assert question["required"] == bool(option.get("required"))
    if option["type"] == "bool":
        assert question["choices"] == ["true", "false"]
    elif question["type"] == "multiplechoice":
        assert question["choices"] == option["choices"]
    else:
        assert "choices" not in option


# What awxkit (24.6.1, awxkit/api/pages/*.py NATURAL_KEY) builds the natural key of an existing object from, limited to
# the fields AWX's API serves for that type: a key in the file with any other field never matches what exists, and a
# second import then creates the object again, which AWX refuses (issue 29: inventory sources have no organization).
NATURAL_KEY_FIELDS = {
    "execution_environment": {"name"},
    "credential_type": {"name", "kind"},
    "project": {"organization", "name"},
    "inventory": {"organization", "name"},
    "host": {"name", "inventory"},
    "inventory_source": {"name", "inventory"},
    "job_template": {"organization", "name"},
}


def natural_keys(value):
    if isinstance(value, dict):
        if "natural_key" in value:
            yield value["natural_key"]
        for item in value.values():
            for key in natural_keys(item):
                yield key
    elif isinstance(value, list):
        for item in value:
            for key in natural_keys(item):
                yield key


def test_every_natural_key_holds_only_fields_awx_matches_on():
    keys = list(natural_keys(OBJECTS))
    assert any(key["type"] == "inventory_source" for key in keys)
    wrong = [
        key
        for key in keys
        if key["type"] in NATURAL_KEY_FIELDS and set(key) - {"type"} != NATURAL_KEY_FIELDS[key["type"]]
    ]
    assert wrong == []
