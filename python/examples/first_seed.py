"""The first seed's question for a traced program: what do the page tables of
one real program cost under four geometries (x86-64 4-level, 5-level,
RISC-V Sv39 with a 64 KiB software page, x86-64 4-level with THP always)?

Records a program with ``ptlab record`` (or, where recording is not
possible, uses the built-in workload ``gups``), replays it on the model under
each geometry through the Python package, and writes a notebook with the
table and plots (table memory, table pages per level, walk references per
TLB miss, predicted time) to OUT (default ``target/first-seed``, ignored by
git; nothing this script writes belongs in the repository)::

    target/pyenv/bin/python python/examples/first_seed.py [--out DIR] [--ptlab PATH] [-- CMD ...]
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import shutil
import subprocess
import sys

import ptlab

GEOMETRIES = {
    "x86-64-4l": ptlab.Machine(geometry="x86-64-4l", thp="never"),
    "x86-64-5l": ptlab.Machine(geometry="x86-64-5l", thp="never"),
    "riscv-sv39-64k": ptlab.Machine(geometry="riscv-sv39-64k", thp="never"),
    "x86-64-4l THP always": ptlab.Machine(geometry="x86-64-4l", thp="always"),
}

DEFAULT_PROGRAM = [sys.executable, "-c", "d = {i: str(i) * 8 for i in range(300000)}; print(len(d))"]


def record(ptlab_bin: str, out_dir: str, command: list) -> tuple:
    """The trace of ``command``, or the built-in ``gups`` if recording fails."""
    trace = os.path.join(out_dir, "program.ptl")
    try:
        p = subprocess.run(
            [ptlab_bin, "record", "-o", trace, "--", *command],
            capture_output=True, text=True, timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"ptlab record could not run ({e}); using the built-in workload gups", file=sys.stderr)
        return "gups", "the built-in workload gups (recording unavailable)"
    if p.returncode != 0:
        print(f"ptlab record failed: {p.stderr.strip()}; using the built-in workload gups", file=sys.stderr)
        return "gups", "the built-in workload gups (recording unavailable)"
    print(p.stderr.strip(), file=sys.stderr)
    return trace, "a recording of `" + " ".join(command) + "`"


def figure_png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join("target", "first-seed"))
    ap.add_argument("--ptlab", default=shutil.which("ptlab") or os.path.join("target", "debug", "ptlab"))
    ap.add_argument("command", nargs="*", help="the program to record (after --)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    workload, what = record(args.ptlab, args.out, args.command or DEFAULT_PROGRAM)

    try:
        result = ptlab.compare(workload, list(GEOMETRIES.values()))
    except ptlab.RunError as e:
        # A recording made without tracepoint access has no fault kinds; its
        # replay can fault where the program did not (docs/trace.md).
        print(f"the trace does not replay ({e}); using the built-in workload gups", file=sys.stderr)
        workload, what = "gups", f"the built-in workload gups (the recording did not replay: {e})"
        result = ptlab.compare(workload, list(GEOMETRIES.values()))
    df = result.frame()
    df["geometry"] = df["config"].map({m: name for name, m in zip(GEOMETRIES, df["config"].unique())})
    end = df.groupby("geometry", sort=False).last()
    levels = [c for c in df.columns if c.startswith("pt_pages.")]
    # Table pages at their peak over the marks (a workload may unmap before
    # its last mark).
    peak = df.groupby("geometry", sort=False)[[*levels, "vmpte_kb"]].max()
    end[levels] = peak[levels]
    end["table_kib"] = peak["vmpte_kb"]
    end["refs_per_walk"] = end["walk_refs"] / end["walks"].where(end["walks"] > 0)
    summary = end[["table_kib", *levels, "tlb_misses", "walks", "walk_refs", "refs_per_walk", "predicted_ns"]]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = []
    fig, ax = plt.subplots(figsize=(6, 3))
    summary["table_kib"].plot.bar(ax=ax, title="page-table memory at its peak (VmPTE, KiB)")
    figs.append(figure_png(fig))
    fig, ax = plt.subplots(figsize=(6, 3))
    summary[levels].fillna(0).plot.bar(ax=ax, stacked=True, title="table pages per level")
    figs.append(figure_png(fig))
    fig, ax = plt.subplots(1, 2, figsize=(9, 3))
    summary["refs_per_walk"].plot.bar(ax=ax[0], title="memory references per walk")
    (summary["predicted_ns"] / 1e6).plot.bar(ax=ax[1], title="predicted time (ms, the model's)")
    figs.append(figure_png(fig))

    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    nb = new_notebook()
    nb.cells.append(new_markdown_cell(
        f"# Page tables of one program under four geometries\n\nWorkload: {what}, replayed on "
        "the ptlab model. Predicted times are the modeled system's (cost file), not measured."))
    nb.cells.append(new_code_cell(
        "import ptlab\nresult = ptlab.compare(WORKLOAD, MACHINES)\nresult.frame()",
        outputs=[new_output("execute_result", {"text/plain": summary.to_string(),
                                               "text/html": summary.to_html()}, execution_count=1)],
        execution_count=1))
    for i, png in enumerate(figs):
        nb.cells.append(new_code_cell(f"# plot {i + 1}", outputs=[new_output("display_data", {"image/png": png})]))
    path = os.path.join(args.out, "first_seed.ipynb")
    nbformat.write(nb, path)
    print(summary.to_string())
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
