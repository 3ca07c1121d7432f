#!/usr/bin/env python3
"""Free-form traces for bench/convolve_bench.sh: an email-like relay chain
spread over a long duration (Table 1's email headers: 81,044 messages over
5.1e6 s) or a dense day of traffic.  Usage: convolve_gen.py KIND OUT."""
import random, sys

kind, out = sys.argv[1], sys.argv[2]
random.seed(42)
ev = []
if kind == "email":
    # 81,044 messages: ~20,000 mails A->B(+0..)->C(+10 s)->D(+30 s), plus noise.
    t0, dur = 1.0e9, 5.1e6
    n = 20000
    for _ in range(n):
        t = t0 + random.uniform(0, dur)
        ev.append((t, "A", "B"))
        ev.append((t + 10 + random.gauss(0, 1), "B", "C"))
        ev.append((t + 40 + random.gauss(0, 1), "C", "D"))
        ev.append((t + 40.5 + random.gauss(0, 1), "D", "E"))
    for _ in range(81044 - 4 * n):
        ev.append((t0 + random.uniform(0, dur), "X", random.choice("BCD")))
elif kind == "day":
    # A day of traffic at ~25 requests/s: web -> app (+2 ms) -> db (+1 ms).
    t, end = 0.0, 86400.0
    while t < end:
        t += random.expovariate(25.0)
        ev.append((t, "lb", "web"))
        ev.append((t + 0.002 + random.gauss(0, 0.0001), "web", "app"))
        ev.append((t + 0.003 + random.gauss(0, 0.0001), "app", "db"))
ev.sort()
with open(out, "w") as f:
    f.write("#bbprof-trace 1\n")
    for t, a, b in ev:
        f.write("%.6f\tMSG\t%s\t%s\t-\n" % (t, a, b))
