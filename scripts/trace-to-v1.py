#!/usr/bin/env python3
"""Writes a version-2 ptlab trace's version-1 form, for a ptlab older than
the trace index (the benchmark scripts give it to an old binary): the same
chunks, version 1 at byte 8, the index block before the end marker cut out,
the end marker's index length 0.

    scripts/trace-to-v1.py IN.ptl OUT.ptl
"""
import struct
import sys

b = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<I", b, len(b) - 4)[0]
end = len(b) - 20
out = bytearray(b[:end - n] + b[end:])
out[8:10] = struct.pack("<H", 1)
out[-4:] = b"\0\0\0\0"
open(sys.argv[2], "wb").write(out)
