#!/usr/bin/env python3
"""Where an msync(MS_SYNC)'s time goes, from `perf script` text of the events
scripts/trace-msync.sh records (read on stdin).

Per ext4_sync_file_enter .. exit of a `ptlab` thread (Linux: mm/msync.c ->
vfs_fsync_range -> ext4_sync_file): its span, the block write requests
issued while it ran (count, KiB) and the time from the first issue to the
last completion, whether a jbd2 commit ran inside it and how long, and the
thread's waits on writeback (writeback:folio_wait_writeback). Then the
medians over the run.
"""

import re
import statistics
import sys

from perf_events import events



def main():
    open_sync = {}  # tid -> record
    done = []
    issued = {}  # sector -> ts
    commit_start = None
    active = []  # records open now
    for comm, tid, ev, rest, ts in events(sys.stdin):
        if ev == "ext4:ext4_sync_file_enter" and comm.startswith("ptlab"):
            r = {"start": ts, "reqs": 0, "kib": 0, "first": None, "last": None, "commit": 0, "waits": 0}
            open_sync[tid] = r
            active.append(r)
        elif ev == "ext4:ext4_sync_file_exit" and tid in open_sync:
            r = open_sync.pop(tid)
            r["end"] = ts
            active.remove(r)
            done.append(r)
        elif ev == "block:block_rq_issue":
            b = re.search(r"^\S+ (\S+) (\d+) \(\) (\d+) \+ (\d+)", rest)
            if b and "W" in b[1] and int(b[4]) > 0:
                issued[int(b[3])] = ts
                for r in active:
                    r["reqs"] += 1
                    r["kib"] += int(b[2]) // 1024
                    r["first"] = r["first"] or ts
        elif ev == "block:block_rq_complete":
            b = re.search(r"^\S+ (\S+) \(\) (\d+) \+ (\d+)", rest)
            if b and int(b[2]) in issued:
                issued.pop(int(b[2]))
                for r in active:
                    r["last"] = ts
        elif ev == "jbd2:jbd2_start_commit":
            commit_start = ts
        elif ev == "jbd2:jbd2_end_commit" and commit_start is not None:
            for r in active:
                r["commit"] += ts - commit_start
            commit_start = None
        elif ev == "writeback:folio_wait_writeback" and tid in open_sync:
            open_sync[tid]["waits"] += 1
    if not done:
        print("no msync seen")
        return
    span = [(r["end"] - r["start"]) / 1e3 for r in done]
    io = [((r["last"] or r["start"]) - (r["first"] or r["start"])) / 1e3 for r in done]
    kib = [r["kib"] for r in done]
    reqs = [r["reqs"] for r in done]
    commits = [r["commit"] / 1e3 for r in done]
    waits = [r["waits"] for r in done]
    med = statistics.median
    print(f"msyncs: {len(done)}; span median {med(span):.0f} us (min {min(span):.0f}, max {max(span):.0f})")
    print(f"  block writes per msync: median {med(reqs)} requests, {med(kib)} KiB; first issue to last completion median {med(io):.0f} us")
    print(f"  jbd2 commit inside: {sum(1 for c in commits if c > 0)} of {len(done)}, median {med(commits):.0f} us")
    print(f"  folio_wait_writeback per msync: median {med(waits)}")


if __name__ == "__main__":
    main()
