"""CPU per REST call: each hot call of a workflow_run update, sent by the App's own adapter.

The calls of an event (list the run's artifacts, read the PR, download the artifact and
its redirect to storage, create and edit the comment, create and complete the check run,
read the configuration) are made one after another, ``--calls`` times each, by a
``GitHubApp`` in this process against the fake GitHub in a process of its own over
loopback sockets (bench/fakeserver.py); what is measured is this process's CPU time per
call (the adapter, its HTTP client and the event loop), not the fake's. Nothing is paced
(no ``Pacer``): GitHub's pace is the service bench's concern.

The PR, its run and its artifact are the fake's first delivery's. The PR, read again, is
a conditional read (answered 304 after the first time); the repository has no
configuration file (answered 404, as in bench/service.py).

Run: .venv/bin/python bench/calls.py [--calls N]; against an older commit:
bench/against.py REV -- bench/calls.py (perfbot is imported from the checkout the script
is in, so that each run measures its own tree).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# After PYTHONPATH, which bench/against.py points at the tree it measures.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from fakeprocess import fake_github

from perfbot.github.app import GitHubApp

APP_ID = 4242  # the fake's
MAX_BYTES = 50 * 1024 * 1024


async def measure(api_url: str, private_key: str, event: dict[str, Any], calls: int) -> None:
    run = event["workflow_run"]
    owner, repo = event["repository"]["full_name"].split("/")
    number, head = run["pull_requests"][0]["number"], run["head_sha"]
    app = GitHubApp(APP_ID, private_key, api_url)
    try:
        async with app.installation(event["installation"]["id"]) as gh:
            artifacts = await gh.list_run_artifacts(owner, repo, run["id"])
            artifact = artifacts[0].id
            comment = (await gh.create_comment(owner, repo, number, "first")).id
            check = None

            async def check_run() -> int:
                return await gh.upsert_check_run(
                    owner,
                    repo,
                    check_run_id=check,
                    name="perfbot",
                    head_sha=head,
                    conclusion="success",
                    title="no change",
                    summary="x" * 2_000,
                )

            check = await check_run()
            body = "y" * 6_000
            each: dict[str, Callable[[], Awaitable[object]]] = {
                "list run artifacts": lambda: gh.list_run_artifacts(owner, repo, run["id"]),
                "get pull (conditional)": lambda: gh.get_pull(owner, repo, number),
                "download artifact (+ storage)": lambda: gh.download_artifact(
                    owner, repo, artifact, MAX_BYTES
                ),
                "create comment": lambda: gh.create_comment(owner, repo, number, body),
                "edit comment": lambda: gh.update_comment(owner, repo, comment, body),
                "complete check run": check_run,
                "config contents (none: 404)": lambda: gh.get_file(
                    owner, repo, ".github/perfbot.yml"
                ),
            }
            for send in each.values():  # warm: connections, the token, validators
                for _ in range(5):
                    await send()
            total_cpu, total_calls = 0.0, 0
            for name, send in each.items():
                start = time.process_time()
                for _ in range(calls):
                    await send()
                cpu = time.process_time() - start
                total_cpu, total_calls = total_cpu + cpu, total_calls + calls
                print(f"  {name}: {cpu / calls * 1e6:.0f} us of CPU a call")
            print(
                f"all: {total_cpu / total_calls * 1e6:.0f} us of CPU a call ({total_calls} calls)"
            )
    finally:
        await app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="of each kind (default 300)")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as scratch,
        fake_github(1, 0.0, Path(scratch)) as setup,
    ):
        event = json.loads(setup.deliveries[0][0])
        asyncio.run(measure(setup.api_url, setup.private_key, event, args.calls))


if __name__ == "__main__":
    main()
