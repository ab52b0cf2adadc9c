# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one error type, and the decorator that turns API failures into it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import inspect
import json

# The HTTP statuses the collection acts on.
NOT_FOUND = 404
CONFLICT = 409
GONE = 410
TOO_MANY_REQUESTS = 429


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


def _api_message(body):
    """The ``message`` of a Kubernetes Status body, or the raw body when it is not one."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        return json.loads(body).get("message") or body
    except (TypeError, ValueError, AttributeError):
        return body


def api_errors(what):
    """Decorate an API wrapper so that any client-side failure becomes a GpuShareError.

    ``what`` is a format string filled from the call's arguments, e.g.
    ``"patch ConfigMap {namespace}/{name}"``, so the error names the object involved.
    """

    def decorator(func):
        signature = inspect.signature(func)

        def describe(args, kwargs):
            return what.format(**signature.bind(*args, **kwargs).arguments)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            # Imported here so that pure module_utils can import this file without the library.
            from kubernetes.client.exceptions import ApiException
            from urllib3.exceptions import HTTPError

            try:
                return func(*args, **kwargs)
            except ApiException as exc:
                raise GpuShareError(
                    "Failed to %s: %s (HTTP %s)"
                    % (describe(args, kwargs), _api_message(exc.body) or exc.reason, exc.status),
                    status=exc.status,
                    reason=exc.reason,
                )
            except HTTPError as exc:
                raise GpuShareError("Failed to %s: cannot reach the Kubernetes API: %s" % (describe(args, kwargs), exc))

        return wrapper

    return decorator
