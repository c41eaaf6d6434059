"""Shared fixtures: the command line of this tree, and Ray started once."""

import json
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def cli():
    """Runs ``ptlab ARGS``; returns (exit status, stdout, stderr)."""
    exe = os.environ.get("PTLAB_BIN") or os.path.join(
        os.path.dirname(__file__), "..", "..", "target", "debug", "ptlab"
    )
    assert os.path.exists(exe), f"{exe}: build it (cargo build --bin ptlab) or set PTLAB_BIN"

    def run(*args, cwd=None):
        p = subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd)
        return p.returncode, p.stdout, p.stderr

    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    def run(*args):
        rc, out, err = cli(*args)
        assert rc == 0, err
        return json.loads(out)

    return run


@pytest.fixture(scope="session")
def ray_local():
    """Ray on this machine (ray.init() with no address), once per session."""
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(include_dashboard=False, logging_level="warning")
    yield ray
    ray.shutdown()
