#!/usr/bin/env python3
"""Per-node error of nest's clock offsets on a trace `bbprof skewer` skewed.

    bench/clock_errors.py SKEWED_TRACE RESULT.json

SKEWED_TRACE is a trace with skewer's `#meta skewer ... offset ... drift ...`
line (the true offsets and drifts it applied); RESULT.json is what `bbprof
nest --json` wrote for it (its params.clock_offsets). Prints each node's error
in microseconds at the middle of the trace, and the largest. Offsets only
matter as differences, so the estimate is aligned on the truth by the median
difference over the nodes. Used for the clock errors of docs/benchmarks.md,
"Real stack accuracy" (with bench/real_stack_accuracy.sh's captures).
"""
import json
import re
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    trace, result = sys.argv[1], sys.argv[2]
    meta = None
    first = last = None
    with open(trace) as f:
        for line in f:
            if line.startswith('#meta skewer'):
                meta = line
            elif not line.startswith('#'):
                t = float(line.split('\t', 1)[0])
                if first is None:
                    first = t
                last = t
    if meta is None or first is None:
        print('%s: no skewer line or no records' % trace, file=sys.stderr)
        return 1
    ref = float(re.search(r'reference=([0-9.]+)', meta).group(1))
    offsets = meta.split(' offset ')[1].split(' drift ')
    off = {k: float(v) for k, v in re.findall(r'(\w+)=([+-][0-9.]+)', offsets[0])}
    drift = {k: float(v) for k, v in re.findall(r'(\w+)=([+-][0-9.]+)', offsets[1])}
    with open(result) as f:
        r = json.load(f)
    mid = (first + last) / 2
    est = {c['node']: c['offset_s'] for c in r['params'].get('clock_offsets', [])}
    nodes = sorted(set(off) | set(est))

    def truth(n):
        # maketrace and the real stack name the load generator "client";
        # nest folds external clients into "clients".
        src = 'client' if n == 'clients' and 'clients' not in off else n
        return off.get(src, 0.0) + drift.get(src, 0.0) * 1e-6 * (mid - ref)

    diffs = sorted(truth(n) - est.get(n, 0.0) for n in nodes)
    c = diffs[len(diffs) // 2]
    errs = {n: (est.get(n, 0.0) - (truth(n) - c)) * 1e6 for n in nodes}
    print(' '.join('%s=%+.0f' % (n, e) for n, e in errs.items()),
          ' max|err|=%.0fus' % max(abs(e) for e in errs.values()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
