"""ptlab from Python: the model of page tables, MMU and Linux mm.

Quick start::

    import ptlab
    ptlab.Machine(geometry="x86-64-5l").run("gups").frame()

- :class:`Machine`: a configuration (the keys of ``ptlab run --config``);
  :meth:`Machine.run` runs a built-in workload, a workload file, workload
  TOML text or a trace; :func:`compare` runs one workload under several.
- :class:`Result`: ``document`` is the JSON of ``ptlab run --json`` /
  ``ptlab compare --json``; ``frame()`` is a pandas DataFrame with one row per
  configuration, mark and run.
- :func:`sweep`: a sweep file (docs/sweep.md) on Ray (local by default, a
  cluster with ``ray_address``) or on local threads; the table of
  ``ptlab sweep``.
- :class:`BadInput` (the command line exits 2) and :class:`RunError` (exit 1)
  carry the command line's messages.
"""

from ._native import BadInput, RunError, __version__
from ._machine import Machine, Result, compare, config_keys
from ._sweep import SweepResult, read_table, sweep

__all__ = [
    "BadInput",
    "Machine",
    "Result",
    "RunError",
    "SweepResult",
    "__version__",
    "compare",
    "config_keys",
    "read_table",
    "sweep",
]
