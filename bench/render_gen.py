#!/usr/bin/env python3
"""Writes a synthetic nesting result with N patterns (default 500) for the
render benchmark: trees of 2-12 nodes, fixed seed, so every run is the same."""
import json, random, sys

def node(rng, depth, names):
    n = {"node": rng.choice(names),
         "latency_s": {"mean": rng.uniform(0.001, 0.5)},
         "call_delay_s": {"mean": rng.uniform(0.0, 0.05)},
         "children": []}
    if depth < 3:
        for _ in range(rng.randint(0, 3 - depth)):
            n["children"].append(node(rng, depth + 1, names))
    return n

def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rng = random.Random(42)
    names = ["WS%d" % i for i in range(1, 6)] + ["AP%d" % i for i in range(1, 6)] + \
            ["DB", "AUTH", "CACHE", "DNS"]
    patterns = []
    for i in range(count):
        root = node(rng, 0, names)
        root["caller"] = "client"
        c = rng.randint(1, 5000)
        patterns.append({"rank": i + 1, "signature": "client->pattern%d" % (i + 1),
                         "count": c, "total_latency_s": c * root["latency_s"]["mean"],
                         "root": root})
    json.dump({"tool": "bbprof nest", "version": "0.1.0", "patterns": patterns},
              sys.stdout)

if __name__ == "__main__":
    main()
