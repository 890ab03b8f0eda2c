import os
from pathlib import Path

import pytest
from hypothesis import settings

# The same examples on every run: CI must not pass or fail by the draw of the day.
settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The project's benchmark data: $GMMFAST_SHARED_DATA, else ../shared/data next to the
    repository, else the workplace's /work/shared/data."""
    env = os.environ.get("GMMFAST_SHARED_DATA")
    if env:
        return Path(env)
    for path in (ROOT.parent / "shared" / "data", Path("/work/shared/data")):
        if (path / "sipu").is_dir():
            return path
    return ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "sipu").is_dir():
        pytest.skip(f"benchmark data not found at {path} (set GMMFAST_SHARED_DATA)")
    return path
