#!/usr/bin/env bash
# Accuracy of 'bbprof skewer --estimate': maketrace writes the
# per-host views of a sample (each host's own capture: what it sent stamped at
# send time, what it received at send time + a Gaussian network delay, by
# default 200us +- 50us, min 20us), skewer gives every host's clock a random
# offset in [-100, 100] ms (and with DRIFT=D a random drift in [-D, D] ppm),
# --estimate infers the clocks back, and this prints per node the error of the
# estimated offset against the truth (relative to the estimate's reference
# node), plus nest's accuracy on the views merged raw, merged with the
# estimated offsets removed, and merged from the unskewed views. Not a test.
# Usage: bench/skewer_estimate.sh [BBPROF] [WORKDIR]
#   env: SAMPLE (default multitier-normal), SEEDS (default "1 2 3"), DRIFT (ppm, default 0)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build/release/cli/bbprof}
W=${2:-$(mktemp -d)}
SAMPLE=${SAMPLE:-multitier-normal}
SEEDS=${SEEDS:-1 2 3}
DRIFT=${DRIFT:-0}
START=1000000000  # maketrace traces start at this epoch second

. bench/lib/nest_eval.sh
nest_fn() { nest_eval_fn "$B" "$1" "$1"; }  # nest_fn TRACE

echo "sample $SAMPLE, offsets uniform in [-100, 100] ms, drifts uniform in [-$DRIFT, $DRIFT] ppm"
echo
echo "| seed | node | matched msgs | true offset (ms, vs ref) | estimated (ms) | error (us) | +- reported (us) | drift err (ppm) |"
echo "|---|---|---|---|---|---|---|---|"
summary=""
for seed in $SEEDS; do
  d="$W/seed$seed"
  rm -rf "$d"; mkdir -p "$d/skewed"
  "$B" maketrace "samples/$SAMPLE.conf" -o "$d/t.bbt" --seed "$seed" --per-host-views "$d/views" -q
  python3 - "$seed" "$DRIFT" "$d" > "$d/truth" <<'PY'
import os, random, sys
seed, drift, d = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
rng = random.Random(1000 + seed)
for f in sorted(os.listdir(d + "/views")):
    host = f.rsplit(".", 1)[0]
    print(host, "%.6f" % rng.uniform(-0.1, 0.1), "%.3f" % (rng.uniform(-drift, drift) if drift else 0))
PY
  while read -r host off dr; do
    extra=()
    [ "$DRIFT" != 0 ] && extra=(--drift "$host=$dr" --drift-reference "$START")
    "$B" skewer "$d/views/$host.bbt" --stamp host --offset "$host=$off" "${extra[@]}" -o "$d/skewed/$host.bbt" -q
  done < "$d/truth"
  "$B" skewer --estimate "$d"/skewed/*.bbt -o "$d/est.offsets" -q > "$d/est.txt"
  python3 - "$seed" "$d/truth" "$d/est.offsets" "$d/est.txt" "$START" <<'PY'
import sys
seed, truth_f, est_f, txt_f, start = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
truth = {}
for l in open(truth_f):
    h, o, dr = l.split(); truth[h] = (float(o), float(dr))
est, ref_t = {}, None
for l in open(est_f):
    if l.startswith("#reference="): ref_t = float(l.split("=")[1])
    if not l.strip() or l.startswith("#"): continue
    w = l.split("#")[0].split()
    est[w[0]] = (float(w[1]), float(w[2]) if len(w) > 2 else 0.0)
matched, ref = {}, None
for l in open(txt_f):
    if l.startswith("pairs"): break
    w = l.split()
    if l.startswith("reference node"): ref = w[2].rstrip(";")
    if len(w) >= 6 and w[0] in truth: matched[w[0]] = w[4]
worst = 0
for h in sorted(truth):
    o, dr = truth[h]; ro, rdr = truth[ref]
    true_rel = (o - ro) + (dr - rdr) * 1e-6 * (ref_t - start)
    if h not in est:
        print(f"| {seed} | {h} | {matched.get(h,'?')} | {1e3*true_rel:+.3f} | unestimated | - | - | - |"); continue
    e, edr = est[h]
    err = (e - true_rel) * 1e6
    worst = max(worst, abs(err))
    unc = "-"
    for l in open(est_f):
        if l.startswith(h + "\t") and "+-" in l: unc = "%.0f" % (float(l.split("+-")[1].split()[0]) * 1e6)
    print(f"| {seed} | {h}{' (ref)' if h == ref else ''} | {matched.get(h,'?')} | {1e3*true_rel:+.3f} | {1e3*e:+.3f} | {err:+.1f} | {unc} | {edr - (dr - rdr):+.3f} |")
print(f"worst {worst:.1f}", file=sys.stderr)
PY
  "$B" merge "$d"/skewed/*.bbt -o "$d/raw.bbt" -q
  "$B" merge "$d"/skewed/*.bbt --offsets "$d/est.offsets" -o "$d/fixed.bbt" -q
  "$B" merge "$d"/views/*.bbt -o "$d/true.bbt" -q
  summary="$summary| $seed | $(nest_fn "$d/raw.bbt") | $(nest_fn "$d/fixed.bbt") | $(nest_fn "$d/true.bbt") |
"
done
echo
echo "nest on the merged views: false-negative instances (messages on correct paths)"
echo
echo "| seed | merged skewed | merged, estimated skew removed | merged unskewed views |"
echo "|---|---|---|---|"
printf '%s' "$summary"
