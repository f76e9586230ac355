"""What every ``perfbot`` command shares: its exit statuses and the usage error."""

from __future__ import annotations

from perfbot.errors import PerfbotError

EXIT_OK, EXIT_REGRESSED, EXIT_USAGE = 0, 1, 2
EXIT_FAILED = 1  # perfbot comment: GitHub refused or failed


class UsageError(PerfbotError):
    """A command line that cannot be carried out; the message is shown as is."""
