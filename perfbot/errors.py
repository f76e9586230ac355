"""The exception tree of perfbot.

    PerfbotError
    └── ReportError                 a report file could not be used
        ├── ParseError              the file is in a known format but broken (path, format, reason)
        └── UnknownFormat           no parser recognised the file (path)

Messages are sentences that name the input and, where there is one, the next step.
They never carry a token, a signed URL or a stack trace.
"""

from __future__ import annotations


class PerfbotError(Exception):
    """Root of every error perfbot raises on purpose."""


class ReportError(PerfbotError, ValueError):
    """A report file could not be turned into measurements."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class ParseError(ReportError):
    """The file looked like ``format`` but could not be read as such."""

    def __init__(self, path: str, format: str, reason: str) -> None:
        self.format = format
        super().__init__(path, f"could not read as {format}: {reason}")


class UnknownFormat(ReportError):
    """No registered format recognised the file's content."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "not a supported report format (run `perfbot formats` to list them)")
