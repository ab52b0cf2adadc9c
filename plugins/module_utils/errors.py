# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one error type, and the one path by which API failures become it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

# The HTTP statuses the collection acts on.
NOT_FOUND = 404
CONFLICT = 409
GONE = 410
TOO_MANY_REQUESTS = 429
FORBIDDEN = 403

# The roles roles/rbac/files/ ships (docs/RBAC.md), as (kind, name, ("<API group> <resource>: <verbs>", ...)),
# "core" for the core group; the 403 message names the ones granting what was refused.
# tests/unit/plugins/module_utils/test_errors.py checks this table against those files.
RBAC_ROLES = (
    (
        "ClusterRole",
        "gpushare-viewer",
        (
            "core nodes: list watch",
            "core pods: list watch",
            "core events: list watch",
            "core namespaces: get",
            "core resourcequotas: get list",
            "apps daemonsets: get list watch",
            "apps deployments: get list watch",
            "nvidia.com clusterpolicies: list",
            "machine.openshift.io machinesets: list",
            "machine.openshift.io machines: list",
            "autoscaling.openshift.io machineautoscalers: list",
            "autoscaling.openshift.io clusterautoscalers: list",
        ),
    ),
    (
        "ClusterRole",
        "gpushare-sharing",
        ("core nodes: patch", "core pods/eviction: create", "nvidia.com clusterpolicies: patch"),
    ),
    (
        "ClusterRole",
        "gpushare-readiness",
        (
            "nvidia.com clusterpolicies: patch",
            "core resourcequotas: create patch delete",
            "core pods: create delete",
            "apps deployments: create delete",
            "machine.openshift.io machinesets: patch",
            "autoscaling.openshift.io machineautoscalers: create patch",
            "autoscaling.openshift.io clusterautoscalers: patch",
            "core nodes: patch",
        ),
    ),
    ("Role", "gpushare-viewer", ("core configmaps: get list", "core secrets: get")),
    ("Role", "gpushare-sharing", ("core configmaps: create patch delete", "apps daemonsets: patch")),
    (
        "Role",
        "gpushare-readiness",
        ("core secrets: create patch delete", "core configmaps: create patch delete", "apps daemonsets: patch"),
    ),
    ("Role", "gpushare-diagnostics", ("core pods/exec: get create",)),
)
# The API server's 403 message: 'User "u" cannot patch resource "nodes" in API group "" at the cluster scope'.
_FORBIDDEN_RE = re.compile(r'cannot (\w+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]*)")?')


def rbac_grants():
    """The shipped roles' rules as (kind, role, API group, resource, verb), "" for the core group, in table order."""
    grants = []
    for kind, role, rules in RBAC_ROLES:
        for rule in rules:
            target, verbs = rule.split(": ")
            group, resource = target.split(" ")
            for verb in verbs.split():
                grants.append((kind, role, "" if group == "core" else group, resource, verb))
    return grants


class GpuShareError(Exception):
    """A failure a module reports to the user.

    ``msg`` says what is wrong and what to do about it; ``status`` and ``reason`` carry the
    Kubernetes API's answer when the failure came from the API, so playbooks can branch on them.
    """

    def __init__(self, msg, status=None, reason=None, details=None):
        super(GpuShareError, self).__init__(msg)
        self.msg = msg
        self.status = status
        self.reason = reason
        self.details = details

    def to_result(self):
        result = {"msg": self.msg}
        if self.status is not None:
            result["status"] = self.status
        if self.reason is not None:
            result["reason"] = self.reason
        if self.details is not None:
            result["details"] = self.details
        return result


class OutcomeUnknown(GpuShareError):
    """A write whose request reached the API server (or may have) without a clear answer coming back.

    It was applied or not; nobody can tell, so it is never retried blindly. The runners re-read the
    cluster and re-plan on every run, so running the module again converges.
    """


class WatchDropped(GpuShareError):
    """A watch stream that broke off (connection reset, stream cut, ended early) or reported a
    transient server error: nothing about the objects is known to be wrong, the watch just has to
    start again from a fresh LIST (kube/wait.py does)."""


def _api_message(body):
    """The ``message`` of a Kubernetes Status body, or the raw body when it is not one."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        return json.loads(body).get("message") or body
    except (TypeError, ValueError, AttributeError):
        return body


def _one_line(text):
    return " ".join(str(text).split())


def forbidden_hint(message):
    """For the API server's 403 ``message``: the verb and resource refused and the shipped role granting them, as a
    sentence; None when the message names no verb and resource."""
    match = _FORBIDDEN_RE.search(message or "")
    if not match:
        return None
    verb, resource, group, namespace = match.groups()
    return access_hint(verb, group, resource, namespace)


def access_hint(verb, group, resource, namespace=None):
    """'The identity lacks <verb> on <resource>; bind <the shipped role granting it>' ("" is the core group)."""
    roles = []
    for kind, role, role_group, role_resource, role_verb in rbac_grants():
        if (role_group, role_resource, role_verb) == (group, resource, verb):
            where = " in namespace %s" % namespace if kind == "Role" and namespace else ""
            roles.append("the %s %s%s" % (role, kind, where))
    return "The identity lacks '%s' on '%s'; %s (docs/RBAC.md)" % (
        verb,
        "%s.%s" % (resource, group) if group else resource,
        "bind " + " or ".join(roles) if roles else "no role of gpushare.k8s grants it",
    )


def error_from_exception(what, exc, note=None, error_class=GpuShareError):
    """The GpuShareError for an API failure ``exc`` while trying to ``what`` ("patch node x").

    An HTTP answer gives the server's own message and its status (for a 403, also the verb, the resource and
    the shipped role that grants them); a transport failure says the API could not be reached and why.
    ``note`` (a sentence) is appended, e.g. how many attempts were made.
    """
    status = getattr(exc, "status", None)
    if status:  # an ApiException with an HTTP answer
        message = _one_line(_api_message(getattr(exc, "body", None)) or exc.reason)
        text = "%s (HTTP %s)" % (message, status)
        hint = forbidden_hint(message) if status == FORBIDDEN else None
        if hint:
            text = "%s. %s" % (text, hint)
        reason = exc.reason
    else:
        # urllib3 and socket errors, and the ApiException(status=0) the client raises for TLS errors.
        cause = getattr(exc, "reason", None) if status == 0 else exc
        text = "cannot reach the Kubernetes API: %s" % _one_line(cause)
        status = reason = None
    msg = "Failed to %s: %s" % (what, text)
    if note:
        msg = "%s. %s" % (msg, note)
    return error_class(msg, status=status, reason=reason)


def watch_event_error(what, status_object, error_class=GpuShareError):
    """The GpuShareError for the Status object of a watch ERROR event (e.g. code 410, "Expired")."""
    status_object = status_object or {}
    code = status_object.get("code")
    return error_class(
        "Failed to %s: %s (HTTP %s)" % (what, _one_line(status_object.get("message") or status_object), code),
        status=code,
        reason=status_object.get("reason"),
    )
