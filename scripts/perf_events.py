"""`perf script`'s default output, one tracepoint event per line, parsed once
for the tracing scripts (trace-file-faults.py, trace-msync.py)."""
import re

LINE = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<ts>\d+\.\d+):\s+(?P<ev>[\w:]+):\s*(?P<rest>.*)$")


def events(lines):
    """Yields (comm, tid, event name, the rest of the line, time in ns) for
    every line that is an event; other lines are skipped."""
    for raw in lines:
        m = LINE.match(raw)
        if m:
            yield m["comm"], int(m["tid"]), m["ev"], m["rest"], int(round(float(m["ts"]) * 1e9))
