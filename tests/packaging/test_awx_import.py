"""awx/gpushare-k8s.yml imported twice in a row with the AWX CLI, as docs/AWX.md tells users to (``awx -f yaml
import``, awxkit 24.6.1 from tools/awxkit_venv.py), into a stand-in for AWX's API built from AWX's own source
(awx_standin.py: its types, fields, natural keys and uniqueness are AWX 24.6.1's). Both runs exit 0, and AWX then
holds each object of the file once, as the file says (issue 29: the second import used to fail on a duplicate). The
same through Automation Platform 2.5's platform gateway, which serves the controller's API under ``/api/controller/``:
awxkit told so by ``AWXKIT_API_BASE_PATH``, as docs/AWX.md says, against the stand-in served under that prefix only
(issue 38).
"""

import copy
import json
import os
import subprocess
from urllib.request import urlopen

import pytest
import yaml
from awx_standin import AwxStandIn
from collection_package import COMMAND_TIMEOUT_SECONDS, REPO, repo_tool

AWX_FILE = os.path.join(REPO, "awx", "gpushare-k8s.yml")
# The file's top-level keys and the lists they are imported into (awxkit's EXPORTABLE_RESOURCES, AWX's URLs).
LISTS = {
    "execution_environments": "execution_environments/",
    "credential_types": "credential_types/",
    "projects": "projects/",
    "inventory": "inventories/",
    "inventory_sources": "inventory_sources/",
    "job_templates": "job_templates/",
}


@pytest.fixture(scope="module")
def awx_cli():
    return os.path.join(repo_tool("awxkit_venv").awxkit_venv(), "bin", "awx")


@pytest.fixture
def awx(request):
    """The stand-in; parametrized indirectly with a prefix, under /api/<prefix>/ only (the gateway's controller)."""
    server = AwxStandIn(prefix=getattr(request, "param", None))
    server.start()
    yield server
    server.stop()


def awx_import(awx_cli, awx, text):
    """``awx --conf.host ... --conf.token ... -f yaml import < file``, as docs/AWX.md runs it; (rc, output). Behind
    the gateway, with ``AWXKIT_API_BASE_PATH=/api/controller/`` (awxkit 24.6.1's awxkit/config.py reads it once, at
    import; it has no ``--conf`` option for it)."""
    command = [awx_cli, "--conf.host", awx.url, "--conf.token", "a-token", "-f", "yaml", "import"]
    env = {name: value for name, value in os.environ.items() if not name.startswith(("AWXKIT_", "CONTROLLER_"))}
    if awx.root != "/api/":
        env["AWXKIT_API_BASE_PATH"] = awx.root
    completed = subprocess.run(
        command,
        input=text,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )
    return completed.returncode, completed.stdout


def get(awx, url):
    with urlopen(awx.url + url, timeout=30) as response:
        return json.load(response)


def natural_key_of(awx, item, reference):
    """The natural key of ``item`` (an object as AWX serves it) over the fields of ``reference``, following
    ``related`` links as awxkit does: equal to ``reference`` when ``item`` is the object it names."""
    key = {}
    for name, value in reference.items():
        if name == "type":
            key[name] = item["type"]
        elif isinstance(value, dict):
            related = item["related"].get(name)
            key[name] = natural_key_of(awx, get(awx, related), value) if related else None
        else:
            key[name] = item.get(name)
    return key


def assert_holds(awx, item, wanted):
    """``item`` (from AWX) has every field of ``wanted`` (from the file); references name the same objects."""
    assert natural_key_of(awx, item, wanted["natural_key"]) == wanted["natural_key"]
    for name, value in wanted.items():
        if name in ("natural_key", "related"):
            continue
        if isinstance(value, dict) and "type" in value:
            assert natural_key_of(awx, get(awx, item["related"][name]), value) == value, name
        else:
            assert item[name] == value, (wanted["name"], name)
    related = wanted.get("related", {})
    if "survey_spec" in related:
        assert get(awx, item["related"]["survey_spec"]) == related["survey_spec"]
    if "hosts" in related:
        hosts = get(awx, item["related"]["hosts"])["results"]
        assert sorted(host["name"] for host in hosts) == sorted(host["name"] for host in related["hosts"])
        for host in related["hosts"]:
            (found,) = [candidate for candidate in hosts if candidate["name"] == host["name"]]
            assert_holds(awx, found, host)


def snapshot(awx):
    """Every object the file makes, as AWX serves it, with the hosts and surveys under them."""
    state = {}
    for path in list(LISTS.values()) + ["hosts/"]:
        for item in get(awx, awx.root + "v2/" + path)["results"]:
            state[item["url"]] = item
            if "survey_spec" in item["related"]:
                state[item["related"]["survey_spec"]] = get(awx, item["related"]["survey_spec"])
    return state


@pytest.mark.parametrize("awx", [None, "controller"], ids=["awx", "gateway"], indirect=True)
def test_the_awx_file_imports_twice_in_a_row(awx_cli, awx):
    """Straight to AWX (``/api/v2/``), and through the platform gateway (``/api/controller/v2/``, AAP 2.5 and 2.6)."""
    with open(AWX_FILE) as stream:
        text = stream.read()
    objects = yaml.safe_load(text)
    assert set(objects) == set(LISTS)

    first = awx_import(awx_cli, awx, text)
    after_first = snapshot(awx)
    second = awx_import(awx_cli, awx, text)

    assert first[0] == 0, first[1]
    assert second[0] == 0, second[1]
    assert snapshot(awx) == after_first  # the second import changed nothing
    assert all(path.startswith(awx.root) for path in awx.paths), sorted(set(awx.paths))
    for key, path in LISTS.items():
        items = get(awx, awx.root + "v2/" + path)["results"]
        assert sorted(item["name"] for item in items) == sorted(item["name"] for item in objects[key]), key
        for wanted in objects[key]:
            (item,) = [item for item in items if item["name"] == wanted["name"]]
            assert_holds(awx, item, wanted)
    assert [host["name"] for host in get(awx, awx.root + "v2/hosts/")["results"]] == ["localhost"]


def test_a_natural_key_awx_cannot_match_fails_the_second_import(awx_cli, awx):
    """The key the file had before issue 29 (an inventory source with an organization): the stand-in refuses the
    second import's duplicate as AWX does, so the test above would catch it."""
    with open(AWX_FILE) as stream:
        objects = yaml.safe_load(stream)
    wrong = copy.deepcopy(objects)
    (source,) = wrong["inventory_sources"]
    source["natural_key"]["organization"] = objects["inventory"][0]["organization"]
    text = yaml.safe_dump(wrong)

    first = awx_import(awx_cli, awx, text)
    second = awx_import(awx_cli, awx, text)

    assert first[0] == 0, first[1]
    assert second[0] == 1
    assert "Bad Request (400)" in second[1] and "'__all__': ['InventorySource with this (" in second[1], second[1]
    assert len(get(awx, "/api/v2/inventory_sources/")["results"]) == 1
