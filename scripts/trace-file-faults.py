#!/usr/bin/env python3
"""Where a file fault's time goes, from `perf script` text of the events
that scripts/trace-file-faults.sh records (read on stdin).

For every thread named `ptlab` (the kernel backend's workload threads) and
every page fault it takes on a file (an exceptions:page_fault_user followed
by a filemap:mm_filemap_fault on the same thread), prints:
  - the fault's span: from the exception to the thread's next system call
    (the mark after the touch reads the counters by one), so it includes
    the retry's mapping and anything up to that call;
  - its parts: on CPU before the first sleep (the read-ahead's folios
    allocated, added to the page cache, the reads submitted), asleep in D
    state until woken (waiting for the device: folio_lock / folio_wait_bit),
    woken but not yet running (the run queue), on CPU after;
  - the folios it added to the page cache, by order (mm_filemap_add_to_page_cache);
  - the block requests it issued, each with its size and issue-to-complete
    time (block:block_rq_issue/complete, matched by sector).
Then one line per other fault kind seen (count and median span), so that a
COW out of a PMD-mapped folio or a fault-around fault shows beside.

Times are the host's, taken while the host did what it did: on a busy host
the run-queue part grows, the device part does not (much).
"""

import re
import statistics
import sys

from perf_events import events
from collections import defaultdict



def us(ns):
    return f"{ns / 1000:.1f} us"


class Fault:
    def __init__(self, tid, ts, addr, err):
        self.tid, self.start, self.addr, self.err = tid, ts, addr, err
        self.file = False
        self.end = None
        self.sleeps = []  # (switch out, woken, switched in)
        self.folios = defaultdict(int)
        self.reqs = []  # sectors of the requests it issued

    def kind(self):
        write = bool(int(self.err, 16) & 2)
        if not self.file:
            return "anon/other " + ("write" if write else "read")
        return "file " + ("write" if write else "read") + (" (slept)" if self.sleeps else "")


def main():
    faults = []
    cur = {}  # tid -> open Fault
    asleep = {}  # tid -> [out, woken]
    issued = {}  # sector -> (ts, bytes, fault)
    done = []  # (fault, bytes, latency)
    for comm, tid, ev, rest, ts in events(sys.stdin):
        mine = comm.startswith("ptlab")
        if ev == "exceptions:page_fault_user" and mine:
            a = re.search(r"address=(\S+) ip=\S+ error_code=(\S+)", rest)
            f = cur.get(tid)
            if f is not None and f.end is None:
                f.end = ts  # the next exception ends the last one
            f = Fault(tid, ts, a[1], a[2])
            cur[tid] = f
            faults.append(f)
        elif ev == "filemap:mm_filemap_fault" and mine and tid in cur:
            cur[tid].file = True
        elif ev == "filemap:mm_filemap_add_to_page_cache" and mine and tid in cur:
            o = re.search(r"order=(\d+)", rest)
            cur[tid].folios[int(o[1])] += 1
        elif ev == "block:block_rq_issue":
            r = re.search(r"^\S+ (\S+) (\d+) \(\) (\d+) \+ (\d+)", rest)
            if r and int(r[4]) > 0:
                f = cur.get(tid) if mine else None
                if f is not None and f.end is None:
                    f.reqs.append(int(r[3]))
                issued[int(r[3])] = (ts, int(r[2]), f if f is not None and f.end is None else None)
        elif ev == "block:block_rq_complete":
            r = re.search(r"^\S+ \S+ \(\) (\d+) \+ (\d+)", rest)
            if r and int(r[1]) in issued:
                t0, size, f = issued.pop(int(r[1]))
                if f is not None:
                    done.append((f, size, ts - t0))
        elif ev == "sched:sched_switch":
            p = re.search(r"prev_comm=(.+?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.+?) next_pid=(\d+)", rest)
            prev, state, nxt = int(p[2]), p[3], int(p[5])
            if p[1].startswith("ptlab") and state.startswith("D"):
                f = cur.get(prev)
                if f is not None and f.end is None:
                    asleep[prev] = [ts, None, f]
            if nxt in asleep:
                out, woken, f = asleep.pop(nxt)
                f.sleeps.append((out, woken if woken is not None else ts, ts))
        elif ev in ("sched:sched_wakeup", "sched:sched_waking"):
            w = re.search(r"pid=(\d+)", rest)
            if w and int(w[1]) in asleep and asleep[int(w[1])][1] is None:
                asleep[int(w[1])][1] = ts
        elif ev == "raw_syscalls:sys_enter" and mine:
            f = cur.get(tid)
            if f is not None and f.end is None:
                f.end = ts
    by_kind = defaultdict(list)
    for f in faults:
        if f.end is None:
            continue
        span = f.end - f.start
        by_kind[f.kind()].append(span)
        if not f.sleeps and not f.reqs and not f.folios:
            continue
        slept = sum(w - o for o, w, _ in f.sleeps)
        queued = sum(i - w for _, w, i in f.sleeps)
        before = (f.sleeps[0][0] if f.sleeps else f.end) - f.start
        after = span - before - slept - queued
        folios = ", ".join(f"{n} x order {o}" for o, n in sorted(f.folios.items())) or "none"
        print(f"fault tid {f.tid} at {f.addr} ({f.kind()}): {us(span)} = {us(before)} on CPU before sleeping"
              f" + {us(slept)} asleep (D) + {us(queued)} woken, waiting for a CPU + {us(after)} on CPU after")
        print(f"  folios added to the page cache: {folios}")
        for g, size, lat in done:
            if g is f:
                print(f"  block request {size // 1024} KiB: issue to complete {us(lat)}")
    print("fault kinds (span: exception to the thread's next exception or system call):")
    for k, v in sorted(by_kind.items()):
        print(f"  {k}: {len(v)} faults, median {us(statistics.median(v))}, max {us(max(v))}")


if __name__ == "__main__":
    main()
