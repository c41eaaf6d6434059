"""Sweeps: one file of workloads by configuration axes (docs/sweep.md), each
task run on Ray (local by default, a cluster with an address) or on local
threads, gathered into the table ``ptlab sweep`` writes."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Union

from . import _native

PathLike = Union[str, "os.PathLike[str]"]

#: Columns that hold text; every other column is a whole number (or empty).
_TEXT = ("workload", "config", "tlb_used", "mark", "status", "error")


def _text_columns(columns: List[str]) -> List[str]:
    # The axes stand between "tlb_used" and "run" (see the table's layout).
    axes = columns[columns.index("tlb_used") + 1 : columns.index("run")]
    return [c for c in columns if c in _TEXT] + axes


def _typed(df: "Any", columns: List[str]) -> "Any":
    """One set of dtypes whatever the table came from: text as ``str`` with
    ``""`` for empty, numbers as nullable ``Int64``."""
    import pandas as pd

    text = set(_text_columns(columns))
    out = {}
    for c in columns:
        if c in text:
            out[c] = df[c].map(lambda v: "" if v is None or (isinstance(v, float) and v != v) else str(v)).astype(object)
        else:
            out[c] = pd.to_numeric(df[c].replace("", None)).astype("Int64")
    return pd.DataFrame(out, columns=columns)


def _frame(table: Dict[str, Any]) -> "Any":
    import pandas as pd

    df = pd.DataFrame(table["rows"], columns=table["columns"], dtype=object)
    return _typed(df, table["columns"])


def read_table(path: PathLike) -> "Any":
    """A sweep table written by ``ptlab sweep --out`` (.csv or .json) or by
    :meth:`SweepResult.write` (.parquet, .csv, .json), as a DataFrame with
    the dtypes of :attr:`SweepResult.frame`."""
    import pandas as pd

    p = os.fspath(path)
    if p.endswith(".json"):
        with open(p) as f:
            return _frame(json.load(f))
    if p.endswith(".parquet"):
        df = pd.read_parquet(p)
    elif p.endswith(".csv"):
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    else:
        raise _native.BadInput(f"{p}: a sweep table is .csv, .json or .parquet")
    return _typed(df, list(df.columns))


class SweepResult:
    """The table of a sweep: ``document`` (the JSON of ``ptlab sweep
    --json``), ``frame`` (one row per task, run and mark; a failed task keeps
    one row with ``status == "failed"``, its ``attempts`` and ``error``)."""

    def __init__(self, document: Dict[str, Any]) -> None:
        self.document = document
        self.frame = _frame(document)

    @property
    def failed(self) -> "Any":
        """The rows of failed tasks."""
        return self.frame[self.frame["status"] == "failed"]

    def write(self, path: PathLike) -> None:
        """Writes the table as Parquet (pyarrow), CSV or JSON, by extension."""
        p = os.fspath(path)
        if p.endswith(".parquet"):
            self.frame.to_parquet(p, index=False)
        elif p.endswith(".csv"):
            self.frame.to_csv(p, index=False)
        elif p.endswith(".json"):
            with open(p, "w") as f:
                json.dump(self.document, f, indent=2)
                f.write("\n")
        else:
            raise _native.BadInput(f"{p}: write a sweep table as .parquet, .csv or .json")


def _progress(done: int, total: int, started: float, show: bool) -> None:
    if show:
        print(f"\rsweep: {done}/{total} tasks, {time.monotonic() - started:.1f} s", end="", file=sys.stderr, flush=True)


def sweep(
    file: PathLike,
    ray_address: Optional[str] = None,
    *,
    use_ray: bool = True,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    progress: bool = True,
) -> SweepResult:
    """Runs every task of the sweep ``file``, one Ray task each, and gathers
    the table ``ptlab sweep`` makes of the same file.

    ``ray_address``: ``None`` starts (or joins) Ray on this machine
    (``ray.init()``); ``"auto"`` or ``"HOST:PORT"`` joins a cluster started
    with ``ray start --head``. A task that fails is retried once (by the
    same code as ``ptlab sweep``) and kept with its message; a task whose
    worker dies is retried once by Ray and then kept as failed too.
    ``use_ray=False`` runs on ``jobs`` local threads instead. ``out``: also
    write the table (.parquet, .csv or .json). Progress goes to stderr.

    Raises :class:`ptlab.BadInput` for a bad sweep file (``file:line:col``
    and the key, as ``ptlab sweep`` says it).
    """
    path = os.fspath(file)
    name, tasks = _native.sweep_tasks(path)
    started = time.monotonic()
    if not use_ray:
        res = SweepResult(json.loads(_native.sweep_local(path, jobs or os.cpu_count() or 1)))
        _progress(len(tasks), len(tasks), started, progress)
    else:
        import ray

        if not ray.is_initialized():
            ray.init(address=ray_address, include_dashboard=False, logging_level="warning")

        @ray.remote(max_retries=1)
        def run_task(task: str) -> str:
            from ptlab import _native as native

            return native.sweep_run(task)

        pending = {run_task.remote(t): t for t in tasks}
        outcomes: List[str] = []
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=min(len(pending), 16), timeout=1.0)
            for ref in ready:
                task = pending.pop(ref)
                try:
                    outcomes.append(ray.get(ref))
                except Exception as e:  # the worker died twice: keep the task as failed
                    outcomes.append(_native.sweep_failed(task, f"ray: {type(e).__name__}: {e}", 2))
            _progress(len(outcomes), len(tasks), started, progress)
        res = SweepResult(json.loads(_native.sweep_table(name, outcomes)))
    if progress:
        print(f"\nsweep {name}: {len(tasks)} tasks, {len(res.frame)} rows, {res.document['failed']} failed", file=sys.stderr)
    if out is not None:
        res.write(out)
    return res
