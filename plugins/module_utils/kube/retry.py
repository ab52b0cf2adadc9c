# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When an API call is tried again, how long to wait first, and when to give up.

One policy for every call KubeApi makes:

- Reads (GET, LIST, the start of a watch) are retried on 429 Too Many Requests, on 500, 502, 503 and
  504, and when the connection fails or breaks (refused, reset, cut, read timeout), because trying
  again cannot change anything.
- Writes (create, patch, delete, eviction) are retried only when the request certainly was not
  processed: the connection was never made (refused, connect timeout), or the API server throttled
  it (429 with ``Retry-After``, which its max-in-flight and priority-and-fairness filters send before
  handling anything). A write whose connection broke after sending, or that got a 5xx, may have
  been applied: it fails at once with ``OutcomeUnknown`` saying so; running again converges, because
  every run re-reads the cluster and plans afresh. A 429 without ``Retry-After`` is the Eviction
  API's refusal under a PodDisruptionBudget: an answer, not retried.
- Waits grow exponentially with jitter (``RetryPolicy.backoff``), are never shorter than the
  server's ``Retry-After``, and stop at the call's deadline: no sleep goes past it, and a
  ``Retry-After`` longer than the time left ends the retries at once.

Sleeping here is backoff between attempts, not waiting for state: waits for state use watches
(kube/wait.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import email.utils
import functools
import inspect
import random as _random
import time
from http.client import HTTPException

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import (
    CONFLICT,
    GpuShareError,
    OutcomeUnknown,
    error_from_exception,
)

try:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import ConnectTimeoutError, HTTPError, MaxRetryError, ProtocolError, ReadTimeoutError

    try:
        from urllib3.exceptions import IncompleteRead as Urllib3IncompleteRead
    except ImportError:  # pragma: no cover - old urllib3
        Urllib3IncompleteRead = ProtocolError
except ImportError:  # reported by GpuShareModule; nothing here runs without the library
    ApiException = ConnectTimeoutError = HTTPError = MaxRetryError = ProtocolError = ReadTimeoutError = None
    Urllib3IncompleteRead = None

# HTTP statuses after which a read is tried again.
RETRY_STATUSES = frozenset((429, 500, 502, 503, 504))
TOO_MANY_REQUESTS = 429


class RetryPolicy(object):
    """The numbers of the retry policy, and the clock, sleep and randomness it uses (tests replace them).

    ``deadline``: seconds a call may spend in all, retries and waits included (default 30).
    ``first_delay``, ``multiplier``, ``max_delay``: the nominal wait before retry n (n from 0) is
    ``min(max_delay, first_delay * multiplier ** n)``: 0.25, 0.5, 1, 2, 4, 5, 5... seconds.
    ``jitter``: the actual wait is drawn uniformly from ``[nominal * (1 - jitter), nominal]``
    (default 0.5: between half and all of it), so that clients refused together do not return together.
    ``connect_timeout``, ``read_timeout``: per attempt, for calls other than watches (the API server
    ends a request at 60 s by itself). A watch reads with ``its own length + watch_read_grace``.
    ``max_watch_seconds``: the longest watch asked of the server; a longer wait starts a new watch
    from the last resourceVersion when one ends, as client-go's informers do.
    """

    def __init__(
        self,
        deadline=30.0,
        first_delay=0.25,
        multiplier=2.0,
        max_delay=5.0,
        jitter=0.5,
        connect_timeout=10.0,
        read_timeout=60.0,
        max_watch_seconds=300,
        watch_read_grace=15.0,
        clock=None,
        sleep=None,
        random=None,
    ):
        if deadline < 0 or first_delay < 0 or max_delay < first_delay or multiplier < 1 or not 0 <= jitter <= 1:
            raise ValueError("invalid retry policy")
        self.deadline = deadline
        self.first_delay = first_delay
        self.multiplier = multiplier
        self.max_delay = max_delay
        self.jitter = jitter
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_watch_seconds = max_watch_seconds
        self.watch_read_grace = watch_read_grace
        self.clock = clock or time.monotonic
        self.sleep = sleep or time.sleep
        self.random = random or _random.random

    def nominal_delay(self, attempt):
        """The wait before retry ``attempt`` (0 for the first retry), before jitter."""
        return min(self.max_delay, self.first_delay * self.multiplier ** min(attempt, 64))

    def backoff(self, attempt):
        """The jittered wait before retry ``attempt``: within ``[nominal * (1 - jitter), nominal]``."""
        return self.nominal_delay(attempt) * (1.0 - self.jitter * self.random())

    @property
    def request_timeout(self):
        """``_request_timeout`` for a call other than a watch: (connect, read) seconds."""
        return (self.connect_timeout, self.read_timeout)

    def watch_request_timeout(self, watch_seconds):
        return (self.connect_timeout, watch_seconds + self.watch_read_grace)


DEFAULT_POLICY = RetryPolicy()


def retry_after_seconds(exc):
    """The ``Retry-After`` of an ApiException (delta-seconds or HTTP-date), in seconds; None if absent."""
    headers = getattr(exc, "headers", None) or {}
    value = None
    for name in ("Retry-After", "retry-after"):
        try:
            value = headers.get(name)
        except AttributeError:
            return None
        if value is not None:
            break
    if value is None:
        return None
    value = str(value).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _root_cause(exc):
    """The error behind urllib3's MaxRetryError (raised once its own retries are used up)."""
    while MaxRetryError is not None and isinstance(exc, MaxRetryError) and exc.reason is not None:
        exc = exc.reason
    return exc


def _never_sent(cause):
    """True when no byte of the request can have reached the server: the connection was never made."""
    return isinstance(cause, ConnectionRefusedError) or (
        ConnectTimeoutError is not None and isinstance(cause, ConnectTimeoutError)
    )


def _broke_after_connecting(cause):
    """True for failures of an established connection: reset, cut, ended early, read timeout."""
    types = (ConnectionError, HTTPException)
    if ProtocolError is not None:
        types += (ProtocolError, ReadTimeoutError, Urllib3IncompleteRead)
    return isinstance(cause, types)


class Verdict(object):
    """What to do after a failed attempt: ``retry`` or not; ``retry_after`` (seconds, the server's);
    ``unknown`` when a write failed without an answer, so whether it was applied is unknown."""

    def __init__(self, retry, retry_after=None, unknown=False):
        self.retry = retry
        self.retry_after = retry_after
        self.unknown = unknown


def judge(exc, write=False):
    """The Verdict on a failed attempt, or None when ``exc`` is not an API or connection failure."""
    if ApiException is not None and isinstance(exc, ApiException):
        if not exc.status:  # the client's ApiException(status=0): TLS errors, not transient
            return Verdict(False)
        if exc.status == TOO_MANY_REQUESTS:
            retry_after = retry_after_seconds(exc)
            # Throttling (max-in-flight, priority and fairness) refuses before processing and always
            # sends Retry-After; the Eviction API's PodDisruptionBudget refusal sends none.
            return Verdict(not write or retry_after is not None, retry_after)
        if exc.status in RETRY_STATUSES:
            return Verdict(not write, retry_after_seconds(exc), unknown=write)
        return Verdict(False)
    cause = _root_cause(exc)
    if _never_sent(cause):
        return Verdict(True)
    if _broke_after_connecting(cause):
        return Verdict(not write, unknown=write)
    if (HTTPError is not None and isinstance(exc, HTTPError)) or isinstance(exc, OSError):
        return Verdict(False)  # TLS, proxy and URL errors: trying again changes nothing
    return None


def _seconds(value):
    return ("%.1f" % value).rstrip("0").rstrip(".")


def call_with_retries(function, what, write=False, policy=None, deadline=None):
    """``function()``, tried again under ``policy`` (default DEFAULT_POLICY) as the module doc says.

    ``what`` names the call for messages ("list nodes"); ``deadline`` (seconds) overrides the
    policy's for this call. Any API or connection failure that is not retried, or the last one,
    becomes a GpuShareError (OutcomeUnknown for a write that may have been applied).
    """
    policy = policy or DEFAULT_POLICY
    limit = policy.deadline if deadline is None else deadline
    started = policy.clock()
    attempt = 0
    while True:
        try:
            return function()
        except GpuShareError:
            raise
        except Exception as exc:
            verdict = judge(exc, write)
            if verdict is None:
                raise
            if verdict.unknown:
                raise _outcome_unknown(what, exc)
            if not verdict.retry:
                note = None
                if write and getattr(exc, "status", None) == CONFLICT:
                    note = "The object changed since this run read it; running the module again re-reads it"
                raise error_from_exception(what, exc, note)
            elapsed = policy.clock() - started
            remaining = limit - elapsed
            tries = "%d attempt%s in %ss" % (attempt + 1, "" if attempt == 0 else "s", _seconds(elapsed))
            if verdict.retry_after is not None and verdict.retry_after > remaining:
                raise error_from_exception(
                    what,
                    exc,
                    "The API server asked to retry after %ss, past the %ss deadline; gave up after %s"
                    % (_seconds(verdict.retry_after), _seconds(limit), tries),
                )
            if remaining <= 0:
                raise error_from_exception(what, exc, "Gave up after %s" % tries)
            delay = max(policy.backoff(attempt), verdict.retry_after or 0.0)
            policy.sleep(min(delay, remaining))
            attempt += 1


def _outcome_unknown(what, exc):
    if getattr(exc, "status", None):
        how = "the API server answered with an error that does not say whether it was applied"
    else:
        how = "the connection broke after the request was sent"
    return error_from_exception(
        what,
        exc,
        "Whether it was applied is unknown (%s), so it was not tried again; running the module again "
        "re-reads the cluster and converges" % how,
        error_class=OutcomeUnknown,
    )


def api_call(what, write=False):
    """Decorate a KubeApi method: retries under ``self.retry_policy`` and one GpuShareError on failure.

    ``what`` is a format string filled from the call's arguments, e.g. ``"patch node {name}"``, so
    the error names the object involved; ``write`` selects the rules for writes.
    """

    def decorator(func):
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            description = what.format(**signature.bind(self, *args, **kwargs).arguments)
            return call_with_retries(
                lambda: func(self, *args, **kwargs),
                description,
                write=write,
                policy=getattr(self, "retry_policy", None),
            )

        return wrapper

    return decorator
