#!/usr/bin/env python3
"""A synthetic ChampSim trace on stdout, for the importer's tests and
benchmarks (no real trace can be fetched here).

    python3 scripts/champsim-gen.py --records 33554432 | xz -1 > big.champsimtrace.xz

Records are ChampSim's `input_instr` (64 bytes: ip, is_branch,
branch_taken, 2 destination and 4 source register bytes, 2 destination and
4 source addresses, little-endian) or, with --cloudsuite, `cloudsuite_instr`
(96 bytes: the same fields with 4 destinations, 6 bytes of padding after
the registers, an asid pair and 6 bytes of padding at the end). The
program they describe, in a loop: a sequential walk over an array (a load
every instruction of four), a random update of a table (GUPS: a load and a
store), stack pushes and pops, and instructions with no memory operand.
The loop's code is 16 KiB (four pages) unless --code-pages spreads it: then
each block of eight instructions (the last one a branch) lies on the next
of that many pages, round robin, so the instruction TLB misses once the
pages outnumber its entries. Deterministic for a given --seed.
"""

import argparse
import random
import struct
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, required=True, help="instructions to write")
    p.add_argument("--cloudsuite", action="store_true", help="96-byte cloudsuite_instr records")
    p.add_argument("--table-mib", type=int, default=1024, help="the random-update table (MiB)")
    p.add_argument("--code-pages", type=int, default=0,
                   help="spread the code over this many pages, a block of 8 instructions each (0: 16 KiB of code)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()

    rng = random.Random(a.seed)
    if a.cloudsuite:
        # ip, branch, taken, 4 dst regs, 4 src regs, pad 6, 4 dst, 4 src, asid 2, pad 6
        rec = struct.Struct("<QBB4s4s6x4Q4Q2s6x")

        def pack(ip, br, dst, src):
            d = (dst + [0, 0, 0, 0])[:4]
            s = (src + [0, 0, 0, 0])[:4]
            return rec.pack(ip, br, br, b"\x01\x00\x00\x00", b"\x02\x03\x00\x00", *d, *s, b"\xff\xff")
    else:
        rec = struct.Struct("<QBB2s4s2Q4Q")

        def pack(ip, br, dst, src):
            d = (dst + [0, 0])[:2]
            s = (src + [0, 0, 0, 0])[:4]
            return rec.pack(ip, br, br, b"\x01\x00", b"\x02\x03\x00\x00", *d, *s)

    array = 0x0000_5555_5560_0000
    array_len = 64 << 20
    table = 0x0000_7F00_0000_0000
    table_len = a.table_mib << 20
    stack = 0x0000_7FFF_FFF0_0000
    code = 0x0000_5555_5555_4000

    out = sys.stdout.buffer
    buf = []
    pos = 0
    sp = stack
    n = 0
    while n < a.records:
        if a.code_pages:
            # Block b on page b mod P, at the block's 32 bytes within it.
            b = n // 8
            ip = code + 4096 * (b % a.code_pages) + 32 * (b // a.code_pages % 128) + 4 * (n % 8)
        else:
            ip = code + 4 * (n % 4096)
        k = n % 8
        if k in (0, 4):
            recd = pack(ip, 0, [], [array + pos])
            pos = (pos + 64) % array_len
        elif k == 2:
            slot = table + (rng.getrandbits(40) % table_len & ~7)
            recd = pack(ip, 0, [slot], [slot])
        elif k == 5:
            sp -= 8
            recd = pack(ip, 0, [sp], [])
        elif k == 6:
            recd = pack(ip, 0, [], [sp])
            sp += 8
        elif k == 7:
            recd = pack(ip, 1, [], [])
        else:
            recd = pack(ip, 0, [], [])
        buf.append(recd)
        n += 1
        if len(buf) == 65536:
            out.write(b"".join(buf))
            buf.clear()
    out.write(b"".join(buf))


if __name__ == "__main__":
    main()
