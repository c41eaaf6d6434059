#!/usr/bin/env python3
"""ChampSim's TLB misses beside ptlab's, per level, from the two runs'
outputs (docs/trace.md, "A side by side with ChampSim").

    bin/champsim --warmup-instructions W --simulation-instructions N T > cs.txt
    ptlab replay T.ptl --tlb icelake --prefault --warmup W --limit N --json > ptlab.json
    python3 scripts/champsim-side-by-side.py cs.txt ptlab.json

ChampSim's lines `cpu0->cpu0_DTLB TOTAL ACCESS: a HIT: h MISS: m
MSHR_MERGE: g` (its statistics of the simulated window) against the
counters of ptlab's `end` mark (counted from the window's start): DTLB
misses are `tlb_l1_misses`, ITLB misses `itlb_misses`, STLB misses
`tlb_misses + itlb_l2_misses` (the STLB is shared by both sides). The
difference is ptlab's against ChampSim's, in % of ChampSim's. ChampSim's
MISS counts requests merged into a miss already in flight (MSHR_MERGE),
which an untimed model has not: the last three columns give them, the
misses less them and ptlab's difference from that. The
STLB's accesses are the first-level misses of both sides that left their
level (a merged miss does not): ChampSim prints them as the STLB's ACCESS,
ptlab's are its second-level hits and misses.
"""

import json
import re
import sys

LINE = re.compile(
    r"cpu0->cpu0_(DTLB|ITLB|STLB) TOTAL\s+ACCESS:\s+(\d+)\s+HIT:\s+(\d+)\s+MISS:\s+(\d+)\s+MSHR_MERGE:\s+(\d+)"
)


def champsim(path):
    """Per level: (accesses, misses, merged misses) of ChampSim's window."""
    out = {}
    in_window = False
    with open(path) as f:
        for line in f:
            if line.startswith("=== Simulation ==="):
                in_window = True
            m = LINE.match(line.strip())
            if in_window and m and m.group(1) not in out:
                out[m.group(1)] = tuple(int(m.group(i)) for i in (2, 4, 5))
    missing = {"DTLB", "ITLB", "STLB"} - set(out)
    if missing:
        sys.exit(f"{path}: no TOTAL line of {', '.join(sorted(missing))} after '=== Simulation ==='")
    return out


def ptlab(path):
    """Per level: (translations, misses) of the replay's window."""
    with open(path) as f:
        doc = json.load(f)
    end = [m for m in doc["marks"] if m["name"] == "end"]
    if not end:
        sys.exit(f"{path}: no `end` mark")
    c = end[0]["counters"]

    def g(k):
        return int(c.get(k, 0))

    return {
        "DTLB": (g("tlb_l1_hits") + g("tlb_l1_misses"), g("tlb_l1_misses")),
        "ITLB": (g("itlb_hits") + g("itlb_misses"), g("itlb_misses")),
        "STLB": (g("tlb_l2_hits") + g("tlb_l2_misses") + g("itlb_l2_hits") + g("itlb_l2_misses"),
                 g("tlb_misses") + g("itlb_l2_misses")),
        "faults": (g("minor_faults"), 0),
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().split("\n\n")[1])
    cs, pt = champsim(sys.argv[1]), ptlab(sys.argv[2])
    print("| figure | ChampSim | ptlab | difference | ChampSim's MSHR_MERGE | ChampSim less merged | difference |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")

    def pct(theirs, mine):
        if theirs == 0:
            return "n/a" if mine == 0 else "inf"
        return f"{100.0 * (mine - theirs) / theirs:+.2f}%"

    def row(name, theirs, merge, mine):
        rest = f"| {merge:,} | {theirs - merge:,} | {pct(theirs - merge, mine)} |" if merge is not None else "| - | - | - |"
        print(f"| {name} | {theirs:,} | {mine:,} | {pct(theirs, mine)} {rest}")

    for level in ("DTLB", "ITLB"):
        _, miss, merge = cs[level]
        row(f"{level} misses", miss, merge, pt[level][1])
    row("STLB accesses", cs["STLB"][0], None, pt["STLB"][0])
    _, miss, merge = cs["STLB"]
    row("STLB misses", miss, merge, pt["STLB"][1])
    print(f"ptlab minor faults in the window: {pt['faults'][0]:,}")


if __name__ == "__main__":
    main()
