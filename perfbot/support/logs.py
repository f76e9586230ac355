"""Structured logs: one JSON object per line, keyed by delivery id."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

# Loggers of the HTTP stack print full URLs at INFO, and an artifact's storage URL is a
# short-lived credential: they only ever speak at WARNING and above.
QUIET_LOGGERS = ("httpx", "httpcore", "hishel", "githubkit", "aiohttp")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        # would_write: a write a dry run did not send (perfbot.github.dryrun).
        for key in ("delivery", "event", "job", "attempt", "would_write"):
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
