# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The retry policy of kube/retry.py: backoff bounds, Retry-After, which failures are tried again,
and writes never retried when their outcome is unknown. A fake clock whose ``sleep`` advances it
stands in for time, so nothing here waits."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import email.utils
import time

import pytest

kubernetes = pytest.importorskip("kubernetes")

from fake_clock import FakeClock  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402
from urllib3.exceptions import (  # noqa: E402
    ConnectTimeoutError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import (  # noqa: E402
    GpuShareError,
    OutcomeUnknown,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.retry import (  # noqa: E402
    RetryPolicy,
    call_with_retries,
    judge,
    retry_after_seconds,
)


def policy(clock, random=0.5, **numbers):
    return RetryPolicy(clock=clock.monotonic, sleep=clock.sleep, random=lambda: random, **numbers)


def api_exception(status, message=None, retry_after=None, reason="Reason"):
    exc = ApiException(status=status, reason=reason)
    if message is not None:
        exc.body = (
            '{"kind":"Status","apiVersion":"v1","status":"Failure","message":"%s","code":%d}' % (message, status)
        ).encode()
    exc.headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return exc


def refused():
    return NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused")


def reset():
    return ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset by peer"))


class Calls(object):
    """A callable that raises the given failures in turn, then returns "ok"; counts its calls."""

    def __init__(self, *failures):
        self.failures = list(failures)
        self.count = 0

    def __call__(self):
        self.count += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


# --- backoff ---------------------------------------------------------------------------------


def test_nominal_backoff_doubles_from_a_quarter_second_up_to_five_seconds():
    numbers = RetryPolicy()
    assert [numbers.nominal_delay(n) for n in range(8)] == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert numbers.nominal_delay(10**6) == 5.0  # no overflow, still capped
    assert numbers.deadline == 30.0


def test_reads_time_out_after_a_minute_and_watches_after_their_length_and_a_grace():
    # A watch's reads may pause until the server ends it at its timeoutSeconds.
    assert RetryPolicy().request_timeout == (10.0, 60.0)
    assert RetryPolicy().watch_request_timeout(60) == (10.0, 75.0)


@pytest.mark.parametrize("attempt", range(12))
def test_jittered_backoff_stays_between_half_and_all_of_the_nominal_delay(attempt):
    clock = FakeClock(100.0)
    lowest = policy(clock, random=1.0 - 1e-12).backoff(attempt)
    highest = policy(clock, random=0.0).backoff(attempt)
    nominal = RetryPolicy().nominal_delay(attempt)
    assert highest == nominal
    assert nominal / 2 <= lowest < highest
    assert lowest == pytest.approx(nominal / 2)


def test_backoff_is_randomised():
    delays = set(RetryPolicy().backoff(3) for _ in range(50))
    assert len(delays) > 1 and all(1.0 <= delay <= 2.0 for delay in delays)


def test_policy_numbers_are_checked():
    with pytest.raises(ValueError):
        RetryPolicy(jitter=2)
    with pytest.raises(ValueError):
        RetryPolicy(first_delay=10, max_delay=1)


# --- Retry-After -----------------------------------------------------------------------------


def test_retry_after_in_seconds_or_as_a_date():
    assert retry_after_seconds(api_exception(429, retry_after=3)) == 3.0
    assert retry_after_seconds(api_exception(429, retry_after="0")) == 0.0
    assert retry_after_seconds(api_exception(429)) is None
    assert retry_after_seconds(api_exception(429, retry_after="soon")) is None
    in_a_minute = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= retry_after_seconds(api_exception(429, retry_after=in_a_minute)) <= 60
    assert retry_after_seconds(ApiException(status=429)) is None  # no headers at all


# --- which failures are retried --------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_reads_retry_throttling_and_server_errors(status):
    verdict = judge(api_exception(status), write=False)
    assert verdict.retry and not verdict.unknown


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 409, 410, 415, 422])
def test_answers_are_not_retried(status):
    for write in (False, True):
        verdict = judge(api_exception(status), write=write)
        assert not verdict.retry and not verdict.unknown


@pytest.mark.parametrize(
    "failure",
    [
        refused(),
        ConnectTimeoutError(None, "timed out connecting"),
        ConnectionRefusedError(111, "Connection refused"),
        MaxRetryError(None, "/api/v1/nodes", refused()),
    ],
    ids=["NewConnectionError", "ConnectTimeoutError", "ConnectionRefusedError", "MaxRetryError(refused)"],
)
def test_a_request_never_sent_is_retried_read_or_write(failure):
    for write in (False, True):
        verdict = judge(failure, write=write)
        assert verdict.retry and not verdict.unknown


@pytest.mark.parametrize(
    "failure",
    [
        reset(),
        ConnectionResetError(104, "Connection reset by peer"),
        ReadTimeoutError(None, "/api/v1/nodes", "Read timed out."),
        MaxRetryError(None, "/api/v1/nodes", reset()),
        MaxRetryError(None, "/api/v1/nodes", ReadTimeoutError(None, "/api/v1/nodes", "Read timed out.")),
    ],
    ids=["ProtocolError", "ConnectionResetError", "ReadTimeoutError", "MaxRetryError(reset)", "MaxRetryError(timeout)"],
)
def test_a_connection_broken_after_sending_retries_reads_but_not_writes(failure):
    read = judge(failure, write=False)
    assert read.retry and not read.unknown
    write = judge(failure, write=True)
    assert not write.retry and write.unknown


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_write_answered_with_a_server_error_has_an_unknown_outcome(status):
    verdict = judge(api_exception(status, retry_after=1), write=True)
    assert not verdict.retry and verdict.unknown


def test_a_throttled_write_is_retried_only_with_retry_after():
    throttled = judge(api_exception(429, retry_after=1), write=True)
    assert throttled.retry and throttled.retry_after == 1.0 and not throttled.unknown
    # The Eviction API's refusal under a PodDisruptionBudget: 429 without Retry-After, an answer.
    refused_by_budget = judge(
        api_exception(429, "Cannot evict pod as it would violate the pod's disruption budget."), True
    )
    assert not refused_by_budget.retry and not refused_by_budget.unknown


def test_tls_errors_and_other_exceptions():
    assert not judge(ApiException(status=0, reason="SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED]")).retry
    assert not judge(SSLError("certificate verify failed")).retry
    assert not judge(MaxRetryError(None, "/", SSLError("certificate verify failed"))).retry
    assert judge(KeyError("items")) is None  # not an API failure: propagates as it is


# --- call_with_retries -----------------------------------------------------------------------


def test_a_read_succeeds_after_throttling_and_server_errors():
    clock = FakeClock(100.0)
    call = Calls(api_exception(429, retry_after=2), api_exception(503), reset(), refused())
    assert call_with_retries(call, "list nodes", policy=policy(clock)) == "ok"
    assert call.count == 5
    # Retry-After is honoured (never shorter); the others follow the backoff (random 0.5: 3/4 of nominal).
    assert clock.sleeps == [2.0, 0.375, 0.75, 1.5]


def test_retry_after_shorter_than_the_backoff_does_not_shorten_it():
    clock = FakeClock(100.0)
    call = Calls(api_exception(503), api_exception(503), api_exception(503), api_exception(429, retry_after=0))
    call_with_retries(call, "list nodes", policy=policy(clock, random=0.0))
    assert clock.sleeps == [0.25, 0.5, 1.0, 2.0]


def test_retry_after_past_the_deadline_ends_the_retries_at_once():
    clock = FakeClock(100.0)
    call = Calls(api_exception(503), api_exception(429, "too many requests", retry_after=60))
    with pytest.raises(GpuShareError) as error:
        call_with_retries(call, "list nodes", policy=policy(clock, random=0.0, deadline=30))
    assert call.count == 2
    assert clock.sleeps == [0.25]  # no sleep for, or into, the 60 s
    assert error.value.status == 429
    assert error.value.msg == (
        "Failed to list nodes: too many requests (HTTP 429). The API server asked to retry after 60s, past "
        "the 30s deadline; gave up after 2 attempts in 0.2s"
    )


def test_gives_up_at_the_deadline_without_sleeping_past_it():
    clock = FakeClock(100.0)
    failures = [api_exception(503, "the server is currently unable to handle the request")] * 100
    call = Calls(*failures)
    with pytest.raises(GpuShareError) as error:
        call_with_retries(call, "list nodes", policy=policy(clock, random=0.0, deadline=10))
    # 0.25 + 0.5 + 1 + 2 + 4 = 7.75 s, then the last wait is cut to the 2.25 s left, then one more try.
    assert clock.sleeps == [0.25, 0.5, 1.0, 2.0, 4.0, 2.25]
    assert sum(clock.sleeps) == 10
    assert call.count == 7
    assert error.value.status == 503
    assert error.value.msg == (
        "Failed to list nodes: the server is currently unable to handle the request (HTTP 503). "
        "Gave up after 7 attempts in 10s"
    )


def test_a_per_call_deadline_overrides_the_policy():
    clock = FakeClock(100.0)
    call = Calls(*[api_exception(503)] * 100)
    with pytest.raises(GpuShareError):
        call_with_retries(call, "watch nodes", policy=policy(clock, random=0.0), deadline=1)
    assert clock.sleeps == [0.25, 0.5, 0.25] and call.count == 4


def test_connection_failures_name_the_call_and_say_the_api_was_not_reached():
    clock = FakeClock(100.0)
    with pytest.raises(GpuShareError) as error:
        call_with_retries(Calls(*[refused()] * 100), "list nodes", policy=policy(clock, deadline=2))
    assert error.value.msg.startswith("Failed to list nodes: cannot reach the Kubernetes API: ")
    assert "Connection refused" in error.value.msg and "Gave up after" in error.value.msg
    assert error.value.status is None


def test_a_write_is_not_retried_when_the_connection_broke_after_sending():
    clock = FakeClock(100.0)
    call = Calls(reset())
    with pytest.raises(OutcomeUnknown) as error:
        call_with_retries(call, "patch node gpu-a100-0", write=True, policy=policy(clock))
    assert call.count == 1 and clock.sleeps == []
    msg = error.value.msg
    assert msg.startswith("Failed to patch node gpu-a100-0: cannot reach the Kubernetes API: ")
    assert "Whether it was applied is unknown (the connection broke after the request was sent)" in msg
    assert "so it was not tried again; running the module again re-reads the cluster and converges" in msg
    assert isinstance(error.value, GpuShareError)


def test_a_write_answered_503_is_not_retried_and_keeps_the_status():
    clock = FakeClock(100.0)
    call = Calls(api_exception(503, "etcdserver: request timed out", reason="Service Unavailable"))
    with pytest.raises(OutcomeUnknown) as error:
        call_with_retries(call, "create ConfigMap ns/cm", write=True, policy=policy(clock))
    assert call.count == 1
    assert error.value.status == 503 and error.value.reason == "Service Unavailable"
    assert error.value.msg.startswith("Failed to create ConfigMap ns/cm: etcdserver: request timed out (HTTP 503). ")
    assert "the API server answered with an error that does not say whether it was applied" in error.value.msg


def test_a_write_never_sent_or_throttled_is_retried():
    clock = FakeClock(100.0)
    call = Calls(refused(), MaxRetryError(None, "/", refused()), api_exception(429, retry_after=1))
    assert call_with_retries(call, "patch node a", write=True, policy=policy(clock, random=0.0)) == "ok"
    assert call.count == 4 and clock.sleeps == [0.25, 0.5, 1.0]


def test_a_conflicting_write_fails_at_once_with_409():
    clock = FakeClock(100.0)
    call = Calls(api_exception(409, 'configmaps \\"cm\\" already exists', reason="Conflict"))
    with pytest.raises(GpuShareError) as error:
        call_with_retries(call, "create ConfigMap ns/cm", write=True, policy=policy(clock))
    assert call.count == 1 and not isinstance(error.value, OutcomeUnknown)
    assert error.value.status == 409 and error.value.reason == "Conflict"
    assert error.value.msg == (
        'Failed to create ConfigMap ns/cm: configmaps "cm" already exists (HTTP 409). The object changed since '
        "this run read it; running the module again re-reads it"
    )


def test_answers_and_unrelated_exceptions_are_not_retried():
    clock = FakeClock(100.0)
    call = Calls(api_exception(403, 'nodes is forbidden: User \\"nobody\\" cannot list resource \\"nodes\\"'))
    with pytest.raises(GpuShareError) as error:
        call_with_retries(call, "list nodes", policy=policy(clock))
    assert call.count == 1 and error.value.status == 403
    assert (
        error.value.msg
        == 'Failed to list nodes: nodes is forbidden: User "nobody" cannot list resource "nodes" (HTTP 403)'
    )

    call = Calls(KeyError("items"))
    with pytest.raises(KeyError):
        call_with_retries(call, "list nodes", policy=policy(clock))
    assert call.count == 1 and clock.sleeps == []


def test_tls_errors_are_reported_as_unreachable_at_once():
    clock = FakeClock(100.0)
    call = Calls(ApiException(status=0, reason="SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"))
    with pytest.raises(GpuShareError) as error:
        call_with_retries(call, "list nodes", policy=policy(clock))
    assert call.count == 1 and error.value.status is None
    assert error.value.msg == (
        "Failed to list nodes: cannot reach the Kubernetes API: SSLError [SSL: CERTIFICATE_VERIFY_FAILED] "
        "certificate verify failed"
    )
