#!/bin/sh
# The default tolerance (docs/convolution.md "How v is chosen"): every
# multi-tier sample at 1 ms and 10 ms quanta, and a spread-delay chain (two
# sources into a 10 s +- 0.2 s queue, 0.1 s quanta), each with --tolerance
# quantum (the paper's v), the default per-spike choice and --tolerance auto.
# Prints per trace the number of paths, the cross paths (a path that leaves
# by another web server than it came in by: false) with their messages, and
# the messages on full paths (through DB back to the client).
# Needs a release build. Usage: bench/convolve_tolerance.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BBPROF:-${1:-$root/build/release}/cli/bbprof}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
summary() {
  python3 - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
paths = [(p['nodes'], p['count']) for p in j['paths']]
def cross(n):
    return any(x.startswith('WS') and x != n[1] for x in n)
cr = [c for n, c in paths if cross(n)]
full = sum(c for n, c in paths if not cross(n) and 'DB' in n and n[-1] == 'client')
print('%-28s %-8s %3d paths, %2d cross (%6d messages), full paths %6d messages' %
      (sys.argv[2], sys.argv[3], len(paths), len(cr), sum(cr), full))
PY
}
for conf in "$root"/samples/multitier-*.conf; do
  name=$(basename "$conf" .conf)
  "$bin" maketrace "$conf" -o "$work/$name.bbt" --quiet
  for mu in 0.001 0.01; do
    for mode in quantum default auto; do
      tol="--tolerance $mode"
      [ "$mode" = default ] && tol=""
      # shellcheck disable=SC2086
      "$bin" convolve "$work/$name.bbt" --quantum $mu $tol -q --json "$work/r.json" >/dev/null
      summary "$work/r.json" "$name $mu" "$mode"
    done
  done
done
python3 - "$work/chain.trace" <<'PY'
import random, sys
random.seed(1)
msgs, T = [], 7200.0
for src in ('s1', 's2'):
    t = 0.0
    while True:
        t += random.expovariate(0.1)
        if t > T:
            break
        msgs.append((t, src, 'q'))
        t2 = t + 0.005 + abs(random.gauss(0, 0.001))
        msgs.append((t2, 'q', 'out'))
        t3 = t2 + max(0, random.gauss(10.0, 0.2))
        msgs.append((t3 + max(0, random.gauss(0.005, 0.002)), 'out', 'sink'))
for i in range(int(T * 0.05)):
    msgs.append((random.uniform(0, T), random.choice(['q', 'out']), 'noise'))
msgs.sort()
with open(sys.argv[1], 'w') as f:
    f.write('#bbprof-trace 1\n')
    for t, a, b in msgs:
        f.write('%.9f\tMSG\t%s\t%s\t-\n' % (t + 1e9, a, b))
print('chain: %d instances from s1, %d from s2' %
      (sum(1 for m in msgs if m[1] == 's1'), sum(1 for m in msgs if m[1] == 's2')))
PY
for mode in quantum default auto; do
  tol="--tolerance $mode"
  [ "$mode" = default ] && tol=""
  # shellcheck disable=SC2086
  "$bin" convolve "$work/chain.trace" --quantum 0.1 --max-delay 60 $tol -q \
    --json "$work/c.json" >/dev/null
  python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
print('chain', sys.argv[2], ', '.join('%s %d' % ('->'.join(p['nodes']), p['count']) for p in j['paths']))" \
    "$work/c.json" "$mode"
done
