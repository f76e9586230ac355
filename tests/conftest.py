"""Fixtures shared by several test modules, and the conformance check of every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from perfbot.sandbox.fakegithub import observing
from tests.conformance import TALLY, ExchangeLog

# The real iperf3 server fixture (`iperf3_server`), for the live and the workflow tests.
pytest_plugins = ["tests.iperf3"]


@pytest.fixture(autouse=True)
def _conforms_to_githubs_description(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every exchange with a fake GitHub during the test matches GitHub's description of
    the API version it was served in (tests/conformance.py); checked once the test ends.
    perfbot's requests all name ``API_VERSION``, or the version of the test's
    ``api_version`` marker."""
    marker = request.node.get_closest_marker("api_version")
    log = ExchangeLog(version=marker.args[0]) if marker else ExchangeLog()
    with observing(log.add):
        yield
    violations = log.violations()
    if violations:
        listed = "\n".join(f"  {v}" for v in violations[:20])
        more = f"\n  … and {len(violations) - 20} more" if len(violations) > 20 else ""
        pytest.fail(
            f"{len(violations)} violation(s) of GitHub's API description:\n{listed}{more}",
            pytrace=False,
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TALLY.exchanges:
        terminalreporter.write_line(
            f"conformance: {TALLY.exchanges} exchanges with the fake GitHub "
            f"({TALLY.distinct} distinct, {TALLY.perfbot_requests} requests by perfbot) "
            f"checked against GitHub's description; {sum(TALLY.violations.values())} "
            f"violation(s) of {len(TALLY.violations)} rule(s), in {TALLY.seconds:.1f} s"
        )
