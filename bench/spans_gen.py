#!/usr/bin/env python3
"""spans_gen.py N OUT: a Jaeger JSON file of N requests for the binary trace
size benchmark (bench/trace_ids_bench.sh): each request is the three-tier
trace of tests/spans/testdata/three_tier.jaeger.json under a fresh random
128-bit trace id and 64-bit span ids, as tracers write them, one every
millisecond."""
import copy
import json
import random
import sys


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    here = sys.path[0]
    with open(f"{here}/../tests/spans/testdata/three_tier.jaeger.json") as f:
        template = json.load(f)["data"][0]
    rng = random.Random(1)
    data = []
    for i in range(n):
        t = copy.deepcopy(template)
        trace_id = "%032x" % rng.getrandbits(128)
        span_ids = {s["spanID"]: "%016x" % rng.getrandbits(64) for s in t["spans"]}
        t["traceID"] = trace_id
        for s in t["spans"]:
            s["traceID"] = trace_id
            s["spanID"] = span_ids[s["spanID"]]
            s["startTime"] += i * 1000
            for r in s["references"]:
                r["traceID"] = trace_id
                r["spanID"] = span_ids[r["spanID"]]
        data.append(t)
    with open(out, "w") as f:
        json.dump({"data": data}, f)


if __name__ == "__main__":
    main()
