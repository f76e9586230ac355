"""Structured logs: one JSON object per line, keyed by delivery id."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

import orjson

# Loggers of the HTTP stack print full URLs at INFO, and an artifact's storage URL is a
# short-lived credential: they only ever speak at WARNING and above.
QUIET_LOGGERS = ("httpx", "httpcore", "hishel", "githubkit")


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        # The time of day to the second, written once a second: the lines of a busy
        # second share it.
        self._second = -1
        self._stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        entry: dict[str, Any] = {
            "time": f"{self._stamp}.{int(record.msecs):03d}Z",
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
        try:
            # orjson: 0.2 µs a line where json took 4.2, a few lines a job.
            return orjson.dumps(entry).decode()
        except TypeError:  # a value orjson refuses (a lone surrogate, a huge int)
            return json.dumps(entry, ensure_ascii=False)


def configure(level: str = "INFO") -> None:
    # A line names neither the caller's file and line nor the thread or process: a record
    # need not look them up (the logging HOWTO's "Optimization").
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
