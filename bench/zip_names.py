"""Benchmark of reading zips whose member names are built to be slow to check.

A member name can hold up to 64 KiB, so tens of thousands of components; the collision
check (case and Unicode variants of every prefix) must stay linear in the names' length.
A first version joined every prefix anew and took about 240 s on the first case below.

Cases: 20 members of 30,002 ASCII components (``a/a/…``); 20 of 20,002 non-ASCII ones
(``é/é/…``, 3 bytes each); 2,000 members in 1,000 pairs of directories alike up to case.
Before the collision check (issue 11 item 9) the first case took about 0.25 s here.

Run: .venv/bin/python bench/zip_names.py [--repeat N]
"""

from __future__ import annotations

import argparse
import io
import time
import zipfile
from collections.abc import Callable

from perfbot.app.artifacts import read_report_zip


def zip_of(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, b"x")
    return buffer.getvalue()


CASES: dict[str, Callable[[], bytes]] = {
    "20 names of 30,002 ASCII components": lambda: zip_of(
        ["head/" + "a/" * 30_000 + f"f{i}.log" for i in range(20)]
    ),
    "20 names of 20,002 non-ASCII components": lambda: zip_of(
        ["head/" + "\u00e9/" * 20_000 + f"f{i}.log" for i in range(20)]
    ),
    "1,000 directory pairs alike up to case": lambda: zip_of(
        [f"head/{side}{i}/a.log" for i in range(1_000) for side in ("p", "P")]
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for label, build in CASES.items():
        data = build()
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            contents = read_report_zip(data)
            best = min(best, time.perf_counter() - start)
        print(
            f"{label}: {best:.2f} s (best of {args.repeat}), {len(data):,} bytes, "
            f"{len(contents.files)} files read, {len(contents.collisions)} collisions"
        )


if __name__ == "__main__":
    main()
