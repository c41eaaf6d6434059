"""Machines (configurations of the model) and their results."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native

Workload = Union[str, "os.PathLike[str]"]


def config_keys() -> List[str]:
    """The configuration keys, as ``ptlab run --config`` takes them."""
    return list(_native.config_keys())


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


class Machine:
    """A modeled machine: the configuration keys of ``ptlab run --config``.

    Keyword names use ``_`` for ``-`` (``pv_flush="off"``). Values are checked
    when the machine runs, with the command line's messages
    (:class:`ptlab.BadInput`)::

        Machine(geometry="x86-64-5l", tlb="zen4", thp="always", cpus=4,
                locking="split-pmd", reclaim="on", costs="costs/xeon-kvm-2026.toml")
    """

    def __init__(self, **config: Any) -> None:
        self.config: Dict[str, str] = {
            k.replace("_", "-"): _value(v) for k, v in config.items() if v is not None
        }

    def _pairs(self) -> List[Tuple[str, str]]:
        return list(self.config.items())

    def __repr__(self) -> str:
        inner = ", ".join(f"{k.replace('-', '_')}={v!r}" for k, v in self.config.items())
        return f"Machine({inner})"

    def run(
        self,
        workload: Optional[Workload] = None,
        *,
        text: Optional[str] = None,
        repeat: int = 1,
        timeout: float = 120.0,
    ) -> "Result":
        """Runs ``workload`` on this machine: a built-in name, a workload
        file or a trace (from ``ptlab record`` or ``ptlab trace``); or, with
        ``text``, the workload TOML given (``workload`` then names it).

        Raises :class:`ptlab.BadInput` for bad input, :class:`ptlab.RunError`
        for a failed run, with the command line's messages. A workload that
        ``requires`` what the machine lacks (swap, or no swap) is not run:
        ``document`` is then ``{"workload", "skipped": True, "reason"}``, as
        ``ptlab run --json`` prints it.
        """
        name, text = _source(workload, text)
        doc = _native.run(name, self._pairs(), text, repeat, timeout)
        return Result(json.loads(doc))


def _source(workload: Optional[Workload], text: Optional[str]) -> Tuple[str, Optional[str]]:
    if workload is None and text is None:
        raise _native.BadInput("name a workload (a built-in name, a file or a trace) or give its text")
    if workload is None:
        return "<text>", text
    return os.fspath(workload), text


def compare(
    workload: Optional[Workload],
    machines: Sequence[Machine],
    *,
    text: Optional[str] = None,
    repeat: int = 1,
    timeout: float = 120.0,
) -> "Result":
    """Runs one workload on every machine, as ``ptlab compare`` does (the
    runs interleaved when repeated); ``Result.document`` is its JSON."""
    name, text = _source(workload, text)
    doc = _native.compare(name, [m._pairs() for m in machines], text, repeat, timeout)
    return Result(json.loads(doc))


class Result:
    """The result of :meth:`Machine.run` or :func:`compare`.

    ``document`` is exactly the JSON document of ``ptlab run --json`` (or
    ``compare --json``), parsed.
    """

    def __init__(self, document: Dict[str, Any]) -> None:
        self.document: Dict[str, Any] = document

    def configs(self) -> List[Dict[str, Any]]:
        """Each configuration's part of the document (one for ``run``)."""
        return list(self.document["configs"]) if "configs" in self.document else [self.document]

    def counters(self, mark: str, config: int = 0, run: int = 0) -> Dict[str, int]:
        """The counters of ``mark`` in one run of one configuration."""
        for m in self.configs()[config]["marks"]:
            if m["name"] == mark:
                return {k: v[run] for k, v in m["samples"].items()}
        raise KeyError(mark)

    def frame(self) -> "Any":
        """A pandas DataFrame: one row per configuration, mark and run;
        columns ``config``, ``workload``, ``mark``, ``run``, then every
        counter (the modeled system's counters and predicted times, and
        ``model_wall_ns``, ptlab's own time)."""
        import pandas as pd

        rows: List[Dict[str, Any]] = []
        for c in self.configs():
            label = c["config"]["label"]
            for m in c["marks"]:
                runs = max((len(v) for v in m["samples"].values()), default=0)
                for r in range(runs):
                    row: Dict[str, Any] = {
                        "config": label,
                        "workload": c["workload"],
                        "mark": m["name"],
                        "run": r,
                    }
                    row.update({k: v[r] for k, v in m["samples"].items()})
                    rows.append(row)
        df = pd.DataFrame(rows)
        counters = [k for k in df.columns if k not in ("config", "workload", "mark", "run")]
        return df.astype({k: "Int64" for k in counters + ["run"]}) if len(df) else df
