"""Typed stubs of the native module (crates/python/src/lib.rs)."""

from typing import List, Optional, Sequence, Tuple

__version__: str

class BadInput(ValueError):
    """The input is wrong (the command line exits 2 on it)."""

class RunError(RuntimeError):
    """A run failed (the command line exits 1 on it)."""

def run(
    workload: str,
    config: Sequence[Tuple[str, str]],
    text: Optional[str] = None,
    repeat: int = 1,
    timeout: float = 120.0,
) -> str: ...
def compare(
    workload: str,
    configs: Sequence[Sequence[Tuple[str, str]]],
    text: Optional[str] = None,
    repeat: int = 1,
    timeout: float = 120.0,
) -> str: ...
def config_keys() -> List[str]: ...
def sweep_tasks(path: str) -> Tuple[str, List[str]]: ...
def sweep_run(task: str) -> str: ...
def sweep_failed(task: str, message: str, attempts: int) -> str: ...
def sweep_table(name: str, outcomes: Sequence[str]) -> str: ...
def sweep_local(path: str, jobs: int) -> str: ...
