import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The project's benchmark data: $GMMFAST_SHARED_DATA or ../shared/data next to the repo."""
    env = os.environ.get("GMMFAST_SHARED_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "sipu").is_dir():
        pytest.skip(f"benchmark data not found at {path} (set GMMFAST_SHARED_DATA)")
    return path
