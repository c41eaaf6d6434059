#!/usr/bin/env python3
"""The inputs of the real-program benchmarks, one definition for all of them.

    scripts/bench-inputs.py DIR native|traced
    scripts/bench-inputs.py DIR lines N

Writes into DIR:
- lines.txt: random lines (a 16-digit hex key, then 0-40 'x'), seed 1, so
  every benchmark sorts the same file;
- dict.py: a Python program building a dict of int -> str and printing its
  size;
- zip.in: the first bytes of lines.txt, for gzip.
Sizes: `native` runs a second or more natively here (2,000,000 lines, 3 M
entries, 100 MB: bench-record*.sh); `traced` is small enough to run under
QEMU with the plugin (200,000 lines, 500 k entries, 10 MB: bench-trace.sh,
bench-replay*.sh); `lines N` writes lines.txt only, of N lines.
"""
import random
import sys

SCALES = {"native": (2_000_000, 3_000_000, 100_000_000), "traced": (200_000, 500_000, 10_000_000)}


def lines(path, n):
    random.seed(1)
    with open(path, "w") as f:
        for _ in range(n):
            f.write("%016x %s\n" % (random.getrandbits(64), "x" * random.randint(0, 40)))


def main(argv):
    if len(argv) == 4 and argv[2] == "lines":
        lines(f"{argv[1]}/lines.txt", int(argv[3]))
        return 0
    if len(argv) != 3 or argv[2] not in SCALES:
        print("usage:\n" + "\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
        return 2
    d = argv[1]
    n_lines, entries, zip_bytes = SCALES[argv[2]]
    lines(f"{d}/lines.txt", n_lines)
    with open(f"{d}/dict.py", "w") as f:
        f.write(f"d = {{i: str(i) for i in range({entries:_})}}\nprint(len(d))\n")
    with open(f"{d}/lines.txt", "rb") as src, open(f"{d}/zip.in", "wb") as dst:
        dst.write(src.read(zip_bytes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
