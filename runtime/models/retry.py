"""When to repeat a failed model call, and how long to wait first.

Only transient failures are repeated (`ModelError.transient`: rate limits, 5xx, timeouts, lost
connections), at most `max_retries` times per model. The wait is exponential with "equal jitter"
(half fixed, half random, so a crowd of clients spreads out), capped at `max_delay_s`. A server's
Retry-After wins over the backoff and is honoured in full (plus up to 10% jitter, never less);
one longer than `max_retry_after_s` is not waited out: the call fails over to the next model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from runtime.models.errors import ModelError


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    max_retry_after_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry counts and delays must not be negative")

    def delay_s(self, retry: int, error: ModelError, rng: random.Random) -> float | None:
        """Seconds to wait before retry number `retry` (1 = the first repeat), or None: give up."""
        if not error.transient or retry > self.max_retries:
            return None
        if error.retry_after_s is not None and error.retry_after_s >= 0:
            if error.retry_after_s > self.max_retry_after_s:
                return None
            return error.retry_after_s * (1 + 0.1 * rng.random())
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0 ** (retry - 1))
        return ceiling / 2 + rng.uniform(0, ceiling / 2)
