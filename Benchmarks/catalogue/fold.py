#!/usr/bin/env python3
"""Folds `perf script -F comm,ip,sym` output into a flame summary.

    perf script -i perf.data -F comm,ip,sym | python3 Benchmarks/catalogue/fold.py [--folded OUT] [--comm PREFIX] [--under SYMBOL] [--top N]

Prints: the share of samples per thread name, the top self symbols, and the top inclusive frames (each frame
counted once per sample). With --comm PREFIX, only the samples of threads so named. With --under SYMBOL, the closest Swift/named callers of the frames named SYMBOL (where the
samples under it come from). --folded writes flamegraph.pl's folded stacks (root first).
"""
import collections
import subprocess
import sys


def demangle(names):
    try:
        out = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(names),
                             capture_output=True, text=True, timeout=60).stdout.splitlines()
        if len(out) == len(names):
            return dict(zip(names, out))
    except Exception:
        pass
    return {n: n for n in names}


def samples(lines):
    comm, stack = None, []
    for line in lines:
        if not line.strip():
            if comm is not None:
                yield comm, stack
            comm, stack = None, []
            continue
        if not line.startswith((" ", "\t")):
            comm = line.split()[0] if line.split() else "?"
            stack = []
            continue
        parts = line.strip().split(None, 1)
        sym = parts[1] if len(parts) > 1 else parts[0]
        if sym.startswith("[unknown]"):
            sym = "[unknown]"
        stack.append(sym.split("+0x")[0])
    if comm is not None:
        yield comm, stack


def main():
    args = sys.argv[1:]
    folded_out = args[args.index("--folded") + 1] if "--folded" in args else None
    under = args[args.index("--under") + 1] if "--under" in args else None
    only = args[args.index("--comm") + 1] if "--comm" in args else None
    top = int(args[args.index("--top") + 1]) if "--top" in args else 60
    all_samples = [x for x in samples(sys.stdin) if only is None or x[0].startswith(only)]
    n = len(all_samples)
    names = sorted({s for _, st in all_samples for s in st})
    d = demangle(names)
    comm = collections.Counter(c if not c.startswith("pl") else "server (pl…)" for c, _ in all_samples)
    self_ = collections.Counter(d.get(st[0], st[0]) if st else "?" for _, st in all_samples)
    incl = collections.Counter()
    callers = collections.Counter()
    for _, st in all_samples:
        for s in set(d.get(x, x) for x in st):
            incl[s] += 1
        if under:
            named = [d.get(x, x) for x in st]
            for i, s in enumerate(named):
                if under in s:
                    up = next((x for x in named[i + 1:] if x != "[unknown]" and not x.startswith("0x")
                               and under not in x), "?")
                    callers[up] += 1
                    break
    print(f"samples: {n}")
    print("\n-- threads")
    for c, k in comm.most_common(8):
        print(f"{100 * k / n:6.2f}%  {c}")
    print("\n-- self (top 25)")
    for s, k in self_.most_common(25):
        print(f"{100 * k / n:6.2f}%  {s[:150]}")
    print(f"\n-- inclusive (top {top}, named frames)")
    shown = 0
    for s, k in incl.most_common():
        if s == "[unknown]" or s.startswith("0x"):
            continue
        print(f"{100 * k / n:6.2f}%  {s[:150]}")
        shown += 1
        if shown == top:
            break
    if under:
        print(f"\n-- callers of {under}")
        for s, k in callers.most_common(20):
            print(f"{100 * k / n:6.2f}%  {s[:170]}")
    if folded_out:
        folded = collections.Counter()
        for c, st in all_samples:
            folded[";".join([c] + [d.get(x, x).replace(";", ",") for x in reversed(st)])] += 1
        with open(folded_out, "w") as f:
            for k, v in folded.items():
                f.write(f"{k} {v}\n")


if __name__ == "__main__":
    main()
