import os
import pathlib
import shutil

import pytest

SOURCE = pathlib.Path(os.environ.get("PIPEPLAN_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("PIPEPLAN_BUILD_DIR", SOURCE / "build"))


@pytest.fixture(scope="session")
def source():
    return SOURCE


@pytest.fixture(scope="session")
def build():
    return BUILD


@pytest.fixture(scope="session")
def cli():
    """The pipeplan binary built beside the module: the truth the module must equal."""
    binary = BUILD / "cli" / "pipeplan"
    if not binary.exists():
        binary = shutil.which("pipeplan")
    assert binary, "no pipeplan binary: build the project first"
    return str(binary)
