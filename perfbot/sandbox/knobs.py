"""Failure knobs: requests made to fail, hang, wait for the test, or misbehave at random."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from http import HTTPStatus

from starlette.responses import Response

from perfbot.sandbox.building import FakeBuilding
from perfbot.sandbox.common import CHAOS_KINDS, DOCS, SECONDARY_LIMIT_MESSAGE, ChaosKind
from perfbot.sandbox.models import Chaos, Hold, Knob
from perfbot.sandbox.plumbing import error_json


class FakeKnobs(FakeBuilding):
    def fail_next(self, count: int = 1, status: int = 502, path_contains: str = "") -> None:
        """Answer the next ``count`` matching requests with ``status``.

        An empty ``path_contains`` matches perfbot's API calls (not token creation, not the
        storage); name "access_tokens" or "/blobs/" to aim at those.
        """
        knob = Knob(kind="fail", remaining=count, path_contains=path_contains, status=status)
        self._knobs.append(knob)

    def secondary_rate_limit_next(
        self, count: int = 1, retry_after: int = 1, path_contains: str = ""
    ) -> None:
        """403 with ``retry-after`` and GitHub's secondary-limit message, ``count`` times."""
        knob = Knob(
            kind="secondary", remaining=count, path_contains=path_contains, retry_after=retry_after
        )
        self._knobs.append(knob)

    def primary_rate_limit_next(
        self, count: int = 1, reset_in: int = 30, path_contains: str = ""
    ) -> None:
        """403 as GitHub answers an installation whose hourly requests are spent, ``count``
        times: no ``retry-after``, ``x-ratelimit-remaining: 0`` and the window's reset
        ``reset_in`` seconds ahead (each reset sent is kept in ``primary_resets``)."""
        knob = Knob(kind="primary", remaining=count, path_contains=path_contains, seconds=reset_in)
        self._knobs.append(knob)

    def hang_next(self, count: int, seconds: float, path_contains: str = "") -> None:
        """Sleep ``seconds`` before answering the next ``count`` matching requests."""
        self._knobs.append(
            Knob(kind="hang", remaining=count, path_contains=path_contains, seconds=seconds)
        )

    def hold_next(
        self,
        path_contains: str,
        count: int = 1,
        *,
        method: str | None = None,
        timeout: float = 30.0,
    ) -> Hold:
        """Hold the next ``count`` requests whose path contains ``path_contains`` (the API or
        the storage, "/blobs/" for an artifact download) until ``release()``."""
        hold = Hold(path_contains=path_contains, remaining=count, method=method, timeout=timeout)
        self._holds.append(hold)
        return hold

    def chaos(
        self,
        rate: float = 0.2,
        *,
        seed: int = 0,
        kinds: Sequence[ChaosKind] = CHAOS_KINDS,
        slow_seconds: float = 1.0,
        hang_seconds: float = 20.0,
    ) -> None:
        """From now on a fraction ``rate`` of API requests misbehave, each in one of ``kinds``:

        * ``5xx``: 500, 502, 503 or 504, and nothing is carried out;
        * ``secondary_rate_limit``: 403 or 429 with ``retry-after: 1`` and GitHub's message;
        * ``slow``: answered normally after ``slow_seconds``;
        * ``timeout``: answered 504 after ``hang_seconds`` (set it beyond the client's
          timeout), and not carried out.

        Every API request counts, the token exchange included; the artifact storage and the
        webhooks a test sends are never touched. Deterministic: ``seed`` fixes the sequence of
        draws, one sequence per API request in the order they arrive. ``rate=0`` (or
        ``calm()``) stops it. ``chaos_injected`` counts what was done.
        """
        if not 0 <= rate <= 1 or not kinds or any(k not in CHAOS_KINDS for k in kinds):
            raise ValueError(f"chaos needs a rate in [0, 1] and kinds among {CHAOS_KINDS}")
        self._chaos = Chaos(
            rate=rate,
            kinds=tuple(kinds),
            rng=random.Random(seed),
            slow_seconds=slow_seconds,
            hang_seconds=hang_seconds,
        )
        self.chaos_injected.clear()

    def calm(self) -> None:
        """Stop ``chaos()``: every later request is answered normally."""
        self._chaos = None

    async def _chaotic_answer(self, path: str) -> Response | None:
        chaos = self._chaos
        if chaos is None or chaos.rng.random() >= chaos.rate:
            return None
        kind = chaos.rng.choice(chaos.kinds)
        self.chaos_injected[kind] += 1
        if kind == "slow":
            await asyncio.sleep(chaos.slow_seconds)
            return None
        if kind == "timeout":
            await asyncio.sleep(chaos.hang_seconds)
            return error_json(504, "Gateway Timeout (chaos: the request was not carried out)")
        if kind == "secondary_rate_limit":
            return error_json(
                chaos.rng.choice((403, 429)),
                SECONDARY_LIMIT_MESSAGE,
                headers={"retry-after": "1", "x-ratelimit-remaining": "4990"},
                documentation_url=f"{DOCS}/overview/rate-limits-for-the-rest-api"
                "#about-secondary-rate-limits",
            )
        status = chaos.rng.choice((500, 502, 503, 504))
        return error_json(status, f"{HTTPStatus(status).phrase} (chaos)")

    def _take_knob(self, kind: str, path: str) -> Knob | None:
        for knob in self._knobs:
            if knob.kind == kind and knob.remaining > 0 and knob.matches(path):
                knob.remaining -= 1
                return knob
        return None

    async def _delay(self, path: str, *, api: bool, method: str = "GET") -> None:
        if api and self.latency > 0:
            await asyncio.sleep(self.latency)
        if (hang := self._take_knob("hang", path)) is not None:
            await asyncio.sleep(hang.seconds)
        for hold in self._holds:
            if hold.remaining > 0 and hold.path_contains in path and hold.method in (None, method):
                hold.remaining -= 1
                await hold.wait()
                break

    def _injected_failure(self, path: str) -> Response | None:
        if (knob := self._take_knob("secondary", path)) is not None:
            return error_json(
                403,
                SECONDARY_LIMIT_MESSAGE,
                headers={"retry-after": str(knob.retry_after), "x-ratelimit-remaining": "4990"},
                documentation_url=f"{DOCS}/overview/rate-limits-for-the-rest-api"
                "#about-secondary-rate-limits",
            )
        if (knob := self._take_knob("primary", path)) is not None:
            reset = int(self.now().timestamp() + knob.seconds)
            self.primary_resets.append(reset)
            return error_json(
                403,
                "API rate limit exceeded for installation. If you reach out to GitHub Support"
                " for help, please include the request ID.",
                headers={
                    "x-ratelimit-limit": str(self.rate_limit),
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-used": str(self.rate_limit),
                    "x-ratelimit-reset": str(reset),
                    "x-ratelimit-resource": "core",
                },
                documentation_url=f"{DOCS}/overview/rate-limits-for-the-rest-api"
                "#about-primary-rate-limits",
            )
        if (knob := self._take_knob("fail", path)) is not None:
            phrase = HTTPStatus(knob.status).phrase
            return error_json(knob.status, f"{phrase} (injected by the fake)")
        return None
