#!/usr/bin/env python3
"""Splits the samples of one thread name into buckets by the first frame (from the leaf) that names one of them.

    perf script -i perf.data -F comm,ip,sym | python3 Benchmarks/catalogue/buckets.py COMM_PREFIX PATTERN...

Each sample goes to the first PATTERN (substring of a demangled frame) found walking from the root down, so an
outer activity (e.g. "startCellServer") takes what runs under it; "other" is the rest.
"""
import collections
import subprocess
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from fold import demangle, samples  # noqa: E402

comm, patterns = sys.argv[1], sys.argv[2:]
all_samples = [s for c, s in samples(sys.stdin) if c.startswith(comm)]
d = demangle(sorted({x for s in all_samples for x in s}))
counts = collections.Counter()
for st in all_samples:
    names = [d.get(x, x) for x in reversed(st)]
    hit = next((p for n in names for p in patterns if p in n), "other")
    counts[hit] += 1
n = len(all_samples)
print(f"{n} samples of {comm}*")
for p, k in counts.most_common():
    print(f"{100 * k / n:6.2f}%  {p}")
