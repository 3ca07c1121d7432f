#!/usr/bin/env python3
"""Free-form traces for bench/convolve_bench.sh: an email-like relay chain
spread over a long duration (Table 1's email headers: 81,044 messages over
5.1e6 s) or a dense day of traffic (DAYS of them: the same traffic for
longer, to show what grows with the duration).
Usage: convolve_gen.py email OUT | convolve_gen.py day OUT [DAYS]."""
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

def write(f, events):
    for t, a, b in events:
        f.write("%.6f\tMSG\t%s\t%s\t-\n" % (t, a, b))


with open(out, "w") as f:
    f.write("#bbprof-trace 1\n")
    if kind == "day":
        # Days of traffic at ~25 requests/s: web -> app (+2 ms) -> db (+1 ms).
        # Written an hour at a time (every event left is later than t - 1),
        # so that several days fit in the generator's memory; one day is the
        # same file as when it was sorted whole.
        days = int(sys.argv[3]) if len(sys.argv) > 3 else 1
        t, end, flush = 0.0, 86400.0 * days, 3600.0
        while t < end:
            t += random.expovariate(25.0)
            ev.append((t, "lb", "web"))
            ev.append((t + 0.002 + random.gauss(0, 0.0001), "web", "app"))
            ev.append((t + 0.003 + random.gauss(0, 0.0001), "app", "db"))
            if t > flush:
                ev.sort()
                done = [e for e in ev if e[0] < t - 1]
                ev = [e for e in ev if e[0] >= t - 1]
                write(f, done)
                flush += 3600.0
    ev.sort()
    write(f, ev)
