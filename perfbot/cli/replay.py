"""``perfbot replay DELIVERY_ID | FILE``: one delivery through the App in a dry run.

The delivery is an id of the App's delivery log (read with the App's JWT, as the
missed-delivery sweep reads it), or a file: a payload with ``--event NAME``, or a
delivery as GitHub's API shows one (``GET /app/hook/deliveries/{id}``: ``event``, and
``request.headers`` and ``request.payload``). The settings are ``perfbot serve``'s, read
the same way (the environment, then ``.env``). The run itself is ``perfbot.app.replay``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from perfbot.cli.usage import EXIT_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from perfbot.app.replay import Recorded

# A delivery is at most 25 MB (GitHub's ceiling): a larger file is not one.
MAX_FILE_BYTES = 25 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        metavar="DELIVERY_ID | FILE",
        help="an id of the App's delivery log (digits), or a JSON file of the delivery",
    )
    parser.add_argument(
        "--event",
        metavar="NAME",
        help="the delivery's event (its X-GitHub-Event), for a file holding a bare payload",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="a SQLite store whose state the run starts from (perfbot serve's database: "
        "replay works on a copy of it); default: a temporary, empty one",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # Here, not at the top: every command builds the parser, which imports this module,
    # and asyncio (with ssl and sockets) costs `perfbot compare` tens of milliseconds.
    import asyncio

    from perfbot.app.replay import Replay, ReplayError, fetch, replay
    from perfbot.app.settings import Settings, SettingsError, load_env_file
    from perfbot.engine.show.terminal import inert_line
    from perfbot.errors import PerfbotError

    source: str = args.source
    is_id = source.isascii() and source.isdigit() and not Path(source).exists()
    recorded = None if is_id else read_file(Path(source), args.event)
    try:
        load_env_file(os.environ)
        settings = Settings.from_env()
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    try:
        if recorded is None:
            recorded = asyncio.run(fetch(settings, int(source), None))
        # Every line may quote the payload (its event, action, repository, delivery id):
        # a recorded delivery is untrusted input, and the terminal must not obey it.
        how = Replay(settings, lambda line: print(inert_line(line), file=out), store_url=args.store)
        asyncio.run(replay(how, recorded))
    except ReplayError as exc:
        raise UsageError(str(exc)) from None
    except PerfbotError as exc:
        print(f"perfbot: delivery {source} could not be read from GitHub: {exc}", file=err)
        return EXIT_FAILED
    except (ValueError, RuntimeError) as exc:  # open_store's refusal of --store
        raise UsageError(f"the store is not usable: {exc}") from None
    return EXIT_OK


def read_file(path: Path, event: str | None) -> Recorded:
    """The delivery a file holds; raises UsageError, in one sentence, for anything else."""
    from perfbot.app.replay import from_body

    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise UsageError(f"{path} is larger than any webhook delivery (25 MB).")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path} is neither a delivery id (digits) nor a file.") from None
    except OSError as exc:
        raise UsageError(f"{path} cannot be read: {exc.strerror}.") from None
    try:
        document: object = json.loads(raw)
    except (ValueError, RecursionError):
        raise UsageError(f"{path} is not JSON.") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path} holds no JSON object (a delivery's payload is one).")
    logged = _logged_request(document)
    if logged is None:
        if not event:
            raise UsageError(
                f"{path} is a bare payload: name its event with --event (the delivery's "
                "X-GitHub-Event, e.g. --event workflow_run)."
            )
        return from_body(event, raw)
    headers, payload = logged
    named = event or _text(document.get("event")) or _header(headers, "x-github-event")
    if not named:
        raise UsageError(f"{path} does not say its event: name it with --event.")
    guid = _text(document.get("guid")) or _header(headers, "x-github-delivery")
    return from_body(named, json.dumps(payload).encode(), guid)


def _logged_request(document: Mapping[str, Any]) -> tuple[Mapping[str, Any], Any] | None:
    """(headers, payload) of a delivery as GitHub's log shows it, or None for a payload."""
    request = document.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("payload"), dict):
        return None
    headers = request.get("headers")
    return (headers if isinstance(headers, dict) else {}), request["payload"]


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return _text(value)
    return None


def _text(value: Any) -> str | None:
    return value.strip()[:100] or None if isinstance(value, str) else None
