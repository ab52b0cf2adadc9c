"""A stand-in for AWX's REST API (``/api/v2/``), enough for awxkit's ``awx import`` of awx/gpushare-k8s.yml, built
from AWX's own source at tag 24.6.1 (commit 94e5795dfc37b95c576d61f3e3b4e936c021548c, the release awxkit 24.6.1 comes
from). Running AWX itself needs PostgreSQL, Redis, a receptor mesh and a container runtime: too much for a test of a
file. What awxkit's import relies on is modelled as AWX serves it:

- ``/api/v2/`` lists AWX's resources (awx/api/views/root.py ``ApiVersionRootView``); awxkit maps each to a page class.
- ``OPTIONS`` on a list gives ``actions.POST``: the writable fields of the type's serializer (awx/api/serializers.py,
  each ``Meta.fields`` minus its read-only ones), foreign keys as type ``id`` (awx/api/metadata.py). awxkit posts only
  these fields, so a field of the file that AWX does not have is dropped here as it is by AWX.
- Every object carries ``related`` links to the objects it points to, as the serializer's ``get_related`` gives them:
  awxkit builds the natural key of an existing object from its ``NATURAL_KEY`` fields that are in ``related`` or in
  the object. An inventory source has no organization (InventorySourceSerializer), a job template's organization is
  read-only and comes from its project (JobTemplate.save, JobOptionsSerializer ``read_only_fields``).
- ``PUT`` is DRF's full update: every required field must be given, except a host's and an inventory source's
  inventory, read-only once the object exists (``build_relational_field`` of HostSerializer and
  InventorySourceSerializer).
- Uniqueness is AWX's: Django's ``unique`` and ``unique_together`` (``Inventory``, ``Host``, ``CredentialType``,
  ``ExecutionEnvironment`` via ``CommonModel``) and AWX's ``SOFT_UNIQUE_TOGETHER`` (``Project``, ``InventorySource``,
  ``JobTemplate``, awx/main/models/base.py ``PrimordialModel.validate_unique``). A duplicate gets AWX's answer: 400
  with the messages keyed by field, or ``__all__`` (BaseSerializer.validate in awx/api/serializers.py).

- Behind Automation Platform 2.5's and 2.6's platform gateway (``AwxStandIn(prefix="controller")``): the gateway routes
  ``/api/controller/`` to the controller with the path unchanged, and the controller, whose
  ``OPTIONAL_API_URLPATTERN_PREFIX`` is ``controller``, answers there with the same API (awx/settings/defaults.py;
  awx/main/middleware.py ``OptionalURLPrefixPath`` gives such a request the URL patterns of
  ``awx/urls.py get_urlpatterns(prefix)``, so every URL it builds, ``url``, ``related`` and the version root's lists,
  starts with ``/api/controller/v2/``). ``/api/controller/`` is AWX's ``ApiRootView`` under the prefix:
  ``current_version`` ``/api/controller/v2/`` and no ``oauth2`` link (awx/api/views/root.py,
  ``is_optional_api_urlpattern_prefix_request``). Only that prefix is served: a client of the gateway reaches
  nothing else of the controller. What the gateway itself answers elsewhere (its own API is ``/api/gateway/``) is
  not modelled; here it is a 404, so that a request that leaves the prefix fails the import. ``paths`` records
  every path requested, for the test to check.

What is not modelled, because the import does not depend on it: authentication (any bearer token is accepted; behind
the gateway, the gateway checks the token and forwards a JWT the controller trusts), RBAC, project updates (a project
is ``successful`` at once, where AWX clones it first; awxkit waits for that) and the check that a job template's
playbook is in its project, and the types the file does not use (their lists are read-only and empty here: awxkit
imports nothing into them).

    server = AwxStandIn(); server.start(); ...; server.stop()    # server.url: http://127.0.0.1:<port>
    AwxStandIn(prefix="controller")                               # the API under /api/controller/, as the gateway
"""

import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

# awx/api/views/root.py ApiVersionRootView: the resources of /api/v2/ (list endpoints; awxkit maps each to a page).
ROOT_RESOURCES = {
    "ping": "ping/",
    "instances": "instances/",
    "instance_groups": "instance_groups/",
    "config": "config/",
    "settings": "settings/",
    "me": "me/",
    "dashboard": "dashboard/",
    "organizations": "organizations/",
    "users": "users/",
    "execution_environments": "execution_environments/",
    "projects": "projects/",
    "project_updates": "project_updates/",
    "teams": "teams/",
    "credentials": "credentials/",
    "credential_types": "credential_types/",
    "credential_input_sources": "credential_input_sources/",
    "applications": "applications/",
    "tokens": "tokens/",
    "metrics": "metrics/",
    "inventory": "inventories/",
    "constructed_inventory": "constructed_inventories/",
    "inventory_sources": "inventory_sources/",
    "inventory_updates": "inventory_updates/",
    "groups": "groups/",
    "hosts": "hosts/",
    "job_templates": "job_templates/",
    "jobs": "jobs/",
    "ad_hoc_commands": "ad_hoc_commands/",
    "system_job_templates": "system_job_templates/",
    "system_jobs": "system_jobs/",
    "schedules": "schedules/",
    "roles": "roles/",
    "notification_templates": "notification_templates/",
    "notifications": "notifications/",
    "labels": "labels/",
    "unified_job_templates": "unified_job_templates/",
    "unified_jobs": "unified_jobs/",
    "activity_stream": "activity_stream/",
    "workflow_job_templates": "workflow_job_templates/",
    "workflow_jobs": "workflow_jobs/",
    "workflow_approvals": "workflow_approvals/",
    "workflow_job_template_nodes": "workflow_job_template_nodes/",
    "workflow_job_nodes": "workflow_job_nodes/",
}


def field(kind="string", required=False, default=None, target=None):
    """One writable field as OPTIONS describes it; ``target`` is the list a foreign key (``id``) points into."""
    return {"type": kind, "required": required, "default": default, "target": target}


NAME = field(required=True)
DESCRIPTION = field(default="")
ORGANIZATION = field("id", target="organizations/")
CREDENTIAL = field("id", target="credentials/")
EXECUTION_ENVIRONMENT = field("id", target="execution_environments/")
INVENTORY = field("id", True, target="inventories/")  # required on create


class Model(object):
    """One AWX type: its list's path under /api/v2/, its ``type``, its serializer's writable fields, its uniqueness
    (``unique``: Django's unique_together, ``soft_unique``: AWX's SOFT_UNIQUE_TOGETHER, ``verbose``: the model's
    verbose name, for Django's message), the fields read-only once it exists (``fixed``), the lists under it
    (``sublists``: name, list path, the key the parent sets), the read-only values it shows (``read_only``) and the
    foreign key its read-only organization comes from (``organization_from``)."""

    def __init__(self, path, kind, verbose, fields, unique=(), soft_unique=(), fixed=(), sublists=(), **options):
        self.path, self.kind, self.verbose, self.fields = path, kind, verbose, fields
        self.unique, self.soft_unique, self.fixed, self.sublists = unique, soft_unique, fixed, sublists
        self.organization_from = options.pop("organization_from", None)
        self.read_only = options


MODELS = {
    model.path: model
    for model in (
        # OrganizationSerializer; AWX makes "Default" at install (awx-manage create_preload_data).
        Model(
            "organizations/",
            "organization",
            "Organization",
            {
                "name": NAME,
                "description": DESCRIPTION,
                "max_hosts": field("integer", default=0),
                "default_environment": EXECUTION_ENVIRONMENT,
            },
            unique=[("name",)],
        ),
        # ExecutionEnvironmentSerializer: ('*', 'organization', 'image', 'managed', 'credential', 'pull'); managed
        # is read-only; CommonModel: name unique=True.
        Model(
            "execution_environments/",
            "execution_environment",
            "Execution environment",
            {
                "name": NAME,
                "description": DESCRIPTION,
                "organization": ORGANIZATION,
                "image": field(required=True),
                "credential": CREDENTIAL,
                "pull": field("choice", default=""),
            },
            unique=[("name",)],
        ),
        # CredentialTypeSerializer: ('*', 'kind', 'namespace', 'name', 'managed', 'inputs', 'injectors');
        # CredentialType.Meta.unique_together = (('name', 'kind'),).
        Model(
            "credential_types/",
            "credential_type",
            "Credential type",
            {
                "name": NAME,
                "description": DESCRIPTION,
                "kind": field("choice", required=True),
                "inputs": field("json", default={}),
                "injectors": field("json", default={}),
            },
            unique=[("name", "kind")],
        ),
        # ProjectSerializer + ProjectOptionsSerializer; Project.SOFT_UNIQUE_TOGETHER (polymorphic_ctype, name,
        # organization).
        Model(
            "projects/",
            "project",
            "Project",
            {
                "name": NAME,
                "description": DESCRIPTION,
                "local_path": field(default=""),
                "scm_type": field("choice", default=""),
                "scm_url": field(default=""),
                "scm_branch": field(default=""),
                "scm_refspec": field(default=""),
                "scm_clean": field("boolean", default=False),
                "scm_track_submodules": field("boolean", default=False),
                "scm_delete_on_update": field("boolean", default=False),
                "credential": CREDENTIAL,
                "timeout": field("integer", default=0),
                "organization": ORGANIZATION,
                "scm_update_on_launch": field("boolean", default=False),
                "scm_update_cache_timeout": field("integer", default=0),
                "allow_override": field("boolean", default=False),
                "default_environment": EXECUTION_ENVIRONMENT,
                "signature_validation_credential": CREDENTIAL,
            },
            soft_unique=[("name", "organization")],
            status="successful",
        ),
        # InventorySerializer; Inventory.Meta.unique_together = [('name', 'organization')].
        Model(
            "inventories/",
            "inventory",
            "Inventory",
            {
                "name": NAME,
                "description": DESCRIPTION,
                "organization": field("id", True, target="organizations/"),
                "kind": field("choice", default=""),
                "host_filter": field(),
                "variables": field("json", default=""),
                "prevent_instance_group_fallback": field("boolean", default=False),
            },
            unique=[("name", "organization")],
            sublists=[("hosts", "hosts/", "inventory")],
        ),
        # HostSerializer; Host.Meta.unique_together = (("name", "inventory"),); Host.inventory is not null.
        Model(
            "hosts/",
            "host",
            "Host",
            {
                "name": NAME,
                "description": DESCRIPTION,
                "inventory": INVENTORY,
                "enabled": field("boolean", default=True),
                "instance_id": field(default=""),
                "variables": field("json", default=""),
            },
            unique=[("name", "inventory")],
            fixed=("inventory",),
        ),
        # InventorySourceSerializer + InventorySourceOptionsSerializer (no organization);
        # InventorySource.SOFT_UNIQUE_TOGETHER (polymorphic_ctype, name, inventory).
        Model(
            "inventory_sources/",
            "inventory_source",
            "InventorySource",
            {
                "name": NAME,
                "description": DESCRIPTION,
                "source": field("choice", default=""),
                "source_path": field(default=""),
                "source_vars": field(default=""),
                "scm_branch": field(default=""),
                "credential": field("integer"),
                "enabled_var": field(default=""),
                "enabled_value": field(default=""),
                "host_filter": field(default=""),
                "overwrite": field("boolean", default=False),
                "overwrite_vars": field("boolean", default=False),
                "timeout": field("integer", default=0),
                "verbosity": field("choice", default=1),
                "limit": field(default=""),
                "inventory": INVENTORY,
                "update_on_launch": field("boolean", default=False),
                "update_cache_timeout": field("integer", default=0),
                "source_project": field("id", target="projects/"),
                "execution_environment": EXECUTION_ENVIRONMENT,
            },
            soft_unique=[("name", "inventory")],
            fixed=("inventory",),
        ),
        # JobTemplateSerializer + JobOptionsSerializer (organization read-only, from the project: JobTemplate.save);
        # JobTemplate.SOFT_UNIQUE_TOGETHER (polymorphic_ctype, name, organization), JobTemplate.validate_unique.
        Model(
            "job_templates/",
            "job_template",
            "JobTemplate",
            dict(
                {
                    "name": NAME,
                    "description": DESCRIPTION,
                    "job_type": field("choice", default="run"),
                    "inventory": field("id", target="inventories/"),
                    "project": field("id", target="projects/"),
                    "playbook": field(default=""),
                    "scm_branch": field(default=""),
                    "forks": field("integer", default=0),
                    "limit": field(default=""),
                    "verbosity": field("choice", default=0),
                    "extra_vars": field("json", default=""),
                    "job_tags": field(default=""),
                    "force_handlers": field("boolean", default=False),
                    "skip_tags": field(default=""),
                    "start_at_task": field(default=""),
                    "timeout": field("integer", default=0),
                    "use_fact_cache": field("boolean", default=False),
                    "host_config_key": field(default=""),
                    "survey_enabled": field("boolean", default=False),
                    "become_enabled": field("boolean", default=False),
                    "diff_mode": field("boolean", default=False),
                    "allow_simultaneous": field("boolean", default=False),
                    "job_slice_count": field("integer", default=1),
                    "webhook_service": field("choice", default=""),
                    "webhook_credential": CREDENTIAL,
                    "prevent_instance_group_fallback": field("boolean", default=False),
                    "execution_environment": EXECUTION_ENVIRONMENT,
                },
                **{
                    "ask_%s_on_launch" % prompt: field("boolean", default=False)
                    for prompt in (
                        "scm_branch",
                        "diff_mode",
                        "variables",
                        "limit",
                        "tags",
                        "skip_tags",
                        "job_type",
                        "verbosity",
                        "inventory",
                        "credential",
                        "execution_environment",
                        "labels",
                        "forks",
                        "job_slice_count",
                        "timeout",
                        "instance_groups",
                    )
                },
            ),
            soft_unique=[("name", "organization")],
            sublists=[("survey_spec", None, None)],
            organization_from="project",
        ),
    )
}


class ApiError(Exception):
    def __init__(self, status, body):
        Exception.__init__(self, body)
        self.status, self.body = status, body


class Store(object):
    """The objects, by list path then id, behind one lock (each request comes on a thread of its own)."""

    def __init__(self, v2):
        self.v2 = v2  # where the API's version 2 is served: /api/v2/, or /api/<prefix>/v2/
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.objects = {path: {} for path in MODELS}
        self.surveys = {}
        self.objects["organizations/"][next(self.ids)] = {
            "name": "Default",
            "description": "",
            "max_hosts": 0,
            "default_environment": None,
        }

    def find(self, path, pk):
        if pk not in self.objects[path]:
            raise ApiError(404, {"detail": "Not found."})
        return self.objects[path][pk]

    def organization(self, model, values):
        """The organization of an object whose organization is read-only, from the object it comes from."""
        parent = values.get(model.organization_from)
        return self.objects[model.fields[model.organization_from]["target"]][parent]["organization"] if parent else None

    def render(self, path, pk):
        model, values = MODELS[path], self.find(path, pk)
        url = self.v2 + path + "%d/" % pk
        related = {}
        for name, spec in model.fields.items():
            if spec["type"] == "id" and values.get(name) is not None:
                related[name] = self.v2 + spec["target"] + "%d/" % values[name]
        if model.organization_from and self.organization(model, values) is not None:
            related["organization"] = self.v2 + "organizations/%d/" % self.organization(model, values)
        for name, _, _ in model.sublists:
            related[name] = url + name + "/"
        data = {"id": pk, "type": model.kind, "url": url, "related": related, "summary_fields": {}}
        data.update(model.read_only)
        data.update(values)
        return data

    def listing(self, path, query, parent=None):
        results = []
        for pk in sorted(self.objects[path]):
            values = self.objects[path][pk]
            if parent and values.get(parent[0]) != parent[1]:
                continue
            if all(str(values.get(key)) == value for key, value in query.items()):
                results.append(self.render(path, pk))
        return {"count": len(results), "next": None, "previous": None, "results": results}

    def validate(self, path, data, pk=None):
        """What DRF and the model's full_clean say of ``data`` (a POST, or a PUT of ``pk``); the values to save."""
        model = MODELS[path]
        errors, values = {}, {}
        for name, spec in model.fields.items():
            if pk is not None and name in model.fixed:
                continue
            if name not in data:
                if spec["required"]:
                    errors[name] = ["This field is required."]
                elif pk is None:
                    values[name] = spec["default"]
                continue
            value = data[name]
            if spec["type"] == "id" and value is not None:
                if not isinstance(value, int) or value not in self.objects[spec["target"]]:
                    errors[name] = ['Invalid pk "%s" - object does not exist.' % value]
                    continue
            if spec["required"] and value in (None, ""):
                errors[name] = ["This field may not be null." if value is None else "This field may not be blank."]
                continue
            values[name] = value
        if errors:
            raise ApiError(400, errors)
        merged = dict(self.objects[path][pk], **values) if pk is not None else values
        self.check_unique(model, path, merged, pk)
        return values

    def check_unique(self, model, path, values, pk):
        if model.organization_from:
            values = dict(values, organization=self.organization(model, values))
        others = [other for other_pk, other in self.objects[path].items() if other_pk != pk]
        errors = {}
        for fields in model.unique:
            if any(all(other.get(name) == values.get(name) for name in fields) for other in others):
                labels = [name.replace("_", " ").capitalize() for name in fields]
                key = fields[0] if len(fields) == 1 else "__all__"
                # Django's Model.unique_error_message: "%(model_name)s with this %(field_labels)s already exists."
                errors.setdefault(key, []).append(
                    "%s with this %s already exists." % (model.verbose, " and ".join(labels))
                )
        for fields in model.soft_unique:
            if any(all(other.get(name) == values.get(name) for name in fields) for other in others):
                # PrimordialModel.validate_unique, JobTemplate.validate_unique
                errors.setdefault("__all__", []).append(
                    "%s with this (%s) combination already exists." % (model.verbose, ", ".join(set(fields)))
                )
        if errors:
            raise ApiError(400, errors)

    def create(self, path, data, parent=None):
        if parent:
            data = dict(data, **{parent[0]: parent[1]})  # SubListCreateAPIView: the parent's key from the URL
        values = self.validate(path, data)
        pk = next(self.ids)
        self.objects[path][pk] = values
        return self.render(path, pk)

    def update(self, path, pk, data):
        self.find(path, pk)
        values = self.validate(path, data, pk)
        self.objects[path][pk].update(values)
        return self.render(path, pk)


LIST = re.compile(r"^([a-z_]+/)$")
DETAIL = re.compile(r"^([a-z_]+/)(\d+)/$")
SUBLIST = re.compile(r"^([a-z_]+/)(\d+)/([a-z_]+)/$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: with Nagle's algorithm each answer would wait for a delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass  # quiet: the test reads the objects, not the access log

    def answer(self, status, body, allow=None):
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if allow:
            self.send_header("Allow", allow)
        self.end_headers()
        self.wfile.write(payload)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def handle_any(self, method):
        store = self.server.store
        parts = urlsplit(self.path)
        query = {k: v for k, v in parse_qsl(parts.query) if k not in ("page", "page_size", "order_by")}
        try:
            with store.lock:
                self.server.paths.append(parts.path)
                status, body, allow = self.route(store, method, parts.path, query)
        except ApiError as error:
            status, body, allow = error.status, error.body, None
        self.answer(status, body, allow)

    def route(self, store, method, path, query):
        root, v2 = self.server.root, store.v2
        if path == root:
            # ApiRootView: oauth2 only without the prefix; CUSTOM_LOGO and the others are "" by default.
            body = {"description": "AWX REST API", "current_version": v2, "available_versions": {"v2": v2}}
            if root == "/api/":
                body["oauth2"] = "/api/o/"
            body.update(custom_logo="", custom_login_info="", login_redirect_override="")
            return 200, body, None
        if path == v2:
            return 200, {name: v2 + sub for name, sub in ROOT_RESOURCES.items()}, None
        if not path.startswith(v2):
            raise ApiError(404 if method in ("GET", "OPTIONS") else 405, {"detail": "Not found."})
        path = path[len(v2) :]
        match = LIST.match(path)
        if match and match.group(1) in MODELS:
            return self.on_list(store, method, match.group(1), query)
        if match and match.group(1) in ROOT_RESOURCES.values():
            # A type the file does not use: empty and read-only (awxkit's get_post_fields: no POST, nothing to do).
            if method == "OPTIONS":
                return 200, {"actions": {"GET": {}}, "search_fields": ["name"]}, "GET, HEAD, OPTIONS"
            return 200, {"count": 0, "next": None, "previous": None, "results": []}, None
        match = DETAIL.match(path)
        if match and match.group(1) in MODELS:
            list_path, pk = match.group(1), int(match.group(2))
            if method == "GET":
                store.find(list_path, pk)
                return 200, store.render(list_path, pk), None
            if method == "PUT":
                return 200, store.update(list_path, pk, self.body()), None
        match = SUBLIST.match(path)
        if match and match.group(1) in MODELS:
            return self.on_sublist(store, method, match.group(1), int(match.group(2)), match.group(3), query)
        raise ApiError(404 if method in ("GET", "OPTIONS") else 405, {"detail": "Not found."})

    def on_list(self, store, method, path, query, parent=None):
        if method == "GET":
            return 200, store.listing(path, query, parent), None
        if method == "OPTIONS":
            post = {
                name: {k: v for k, v in spec.items() if k != "target"} for name, spec in MODELS[path].fields.items()
            }
            if parent:
                post.pop(parent[0])  # set from the URL
            return 200, {"actions": {"POST": post}, "search_fields": ["name", "description"]}, "GET, POST, OPTIONS"
        if method == "POST":
            return 201, store.create(path, self.body(), parent), None
        raise ApiError(405, {"detail": 'Method "%s" not allowed.' % method})

    def on_sublist(self, store, method, path, pk, name, query):
        store.find(path, pk)
        for sub_name, sub_path, parent_key in MODELS[path].sublists:
            if sub_name != name:
                continue
            if sub_path:
                return self.on_list(store, method, sub_path, query, parent=(parent_key, pk))
            # survey_spec: a JSON document replaced by POST (awx/api/views JobTemplateSurveySpec)
            if method == "GET":
                return 200, store.surveys.get((path, pk), {}), None
            if method == "POST":
                store.surveys[(path, pk)] = self.body()
                return 200, store.surveys[(path, pk)], None
        raise ApiError(404, {"detail": "Not found."})

    def do_GET(self):
        self.handle_any("GET")

    def do_OPTIONS(self):
        self.handle_any("OPTIONS")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")


class AwxStandIn(object):
    """AWX's API at ``url``: under ``/api/``, or with ``prefix`` under ``/api/<prefix>/`` only, as the platform gateway
    serves the controller's (``prefix="controller"``)."""

    def __init__(self, prefix=None):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.root = "/api/%s/" % prefix if prefix else "/api/"
        self.httpd.root = self.root
        self.httpd.store = Store(self.root + "v2/")
        self.httpd.paths = []
        self.paths = self.httpd.paths
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
