#!/usr/bin/env python3
"""A valgrind lackey trace (stdin) as ChampSim input_instr records (stdout),
so that ChampSim and `ptlab import lackey` read the same program.

    valgrind --tool=lackey --trace-mem=yes --log-file=prog.lackey prog ...
    python3 scripts/lackey-to-champsim.py < prog.lackey | xz -1 > prog.champsimtrace.xz

Each `I  addr,size` line starts a record (64 bytes, little-endian: ip,
is_branch 0, branch_taken 0, no registers, 2 destination and 4 source
addresses; docs/trace.md and crates/import/src/champsim.rs give the layout).
Its ` L` lines are source addresses, ` S` lines destination addresses, an
` M` line (modify) both, in the order lackey gave them. A record holds four
loads and two stores: an instruction with more (rare: lackey splits string
instructions into one `I` per iteration) keeps its first ones, and the
accesses left out are counted on stderr, as are data lines before the first
`I` (valgrind's start-up). Lines of valgrind's own (`==PID==`, `--PID--`)
and empty lines are passed over; anything else stops the script with its
line number.
"""

import struct
import sys

REC = struct.Struct("<QBB2s4s2Q4Q")
NO_REGS = (b"\0\0", b"\0\0\0\0")


def main():
    out = sys.stdout.buffer
    buf = []
    ip = None
    loads, stores = [], []
    records = dropped = before = 0

    def flush():
        nonlocal records, dropped
        if ip is None:
            return
        dropped += max(0, len(loads) - 4) + max(0, len(stores) - 2)
        d = (stores[:2] + [0, 0])[:2]
        s = (loads[:4] + [0, 0, 0, 0])[:4]
        buf.append(REC.pack(ip, 0, 0, *NO_REGS, *d, *s))
        records += 1
        if len(buf) == 65536:
            out.write(b"".join(buf))
            buf.clear()

    for n, line in enumerate(sys.stdin.buffer, 1):
        if line.startswith(b"I "):
            flush()
            ip = int(line[2:].split(b",")[0], 16)
            loads, stores = [], []
            continue
        if line[:3] in (b" L ", b" S ", b" M "):
            addr = int(line[3:].split(b",")[0], 16)
            if ip is None:
                before += 1
                continue
            kind = line[1:2]
            if kind in (b"L", b"M"):
                loads.append(addr)
            if kind in (b"S", b"M"):
                stores.append(addr)
            continue
        if not line.strip() or line.startswith(b"==") or line.startswith(b"--"):
            continue
        sys.exit(f"stdin:{n}: not a lackey line: {line[:60]!r}")
    flush()
    out.write(b"".join(buf))
    print(f"{records} records; {dropped} accesses past a record's 4 loads and 2 stores "
          f"left out; {before} data lines before the first instruction left out",
          file=sys.stderr)


if __name__ == "__main__":
    main()
