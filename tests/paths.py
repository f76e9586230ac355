"""Where the tests find the real fixtures: ``../shared/fixtures`` beside the checkout."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


def shared(relative: str) -> Path:
    """A file under ``../shared/fixtures``; the tests read it in place, never copy it."""
    path = SHARED_FIXTURES / relative
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the tests need ../shared beside the checkout")
    return path
