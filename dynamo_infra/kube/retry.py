"""Which failed requests are sent again, and after how long: the server's `Retry-After` when it sends
one (API Priority and Fairness answers 429 with it), otherwise a doubling backoff.

As client-go's `checkWait` (k8s.io/client-go/rest/request.go), a `Retry-After` is honoured on 429 and
on a 5xx answer; unlike client-go, whose header must be whole seconds, an HTTP date is read too (RFC 9110
section 10.2.3 allows both).
"""

from __future__ import annotations

import email.utils
import time

# Transient failures (connection refused, 429, 5xx) are retried this many times.
RETRIES = 5
# The first pause before a retry without `Retry-After`, doubled each time up to MAX_BACKOFF_S.
FIRST_BACKOFF_S = 0.2
MAX_BACKOFF_S = 5.0
# A server's `Retry-After` is waited at most this long (a longer one would stall a preview for minutes).
MAX_RETRY_AFTER_S = 30.0
# The server turned the request away before handling it: any request may be sent again.
TOO_MANY_REQUESTS = 429
# The server may have failed while handling it: only requests that mean the same sent twice are retried.
SERVER_ERRORS = frozenset({500, 502, 503, 504})
# Methods that mean the same when sent twice (RFC 9110 section 9.2.2).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
# Patches that mean the same when sent twice: server-side apply and JSON merge patch (a JSON patch's
# `add` to a list does not).
IDEMPOTENT_PATCHES = frozenset({"application/apply-patch+yaml", "application/merge-patch+json"})


def idempotent(method: str, content_type: str) -> bool:
    return method in IDEMPOTENT_METHODS or (method == "PATCH" and content_type in IDEMPOTENT_PATCHES)


def retried(status: int, method: str, content_type: str) -> bool:
    """Whether an answer with `status` to this request is worth sending it again."""
    if status == TOO_MANY_REQUESTS:
        return True
    return status in SERVER_ERRORS and idempotent(method, content_type)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks to wait (delay-seconds or an HTTP date), at most
    MAX_RETRY_AFTER_S; None when there is none or it cannot be read."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        seconds = float(text)
    else:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def backoff(attempt: int) -> float:
    """The pause before retry number `attempt` (1-based) when the server names none."""
    return min(FIRST_BACKOFF_S * float(2 ** max(attempt - 1, 0)), MAX_BACKOFF_S)
