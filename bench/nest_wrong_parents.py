#!/usr/bin/env python3
"""Which parent choices of a nest export are wrong, and why.

    bench/nest_wrong_parents.py TRACE EXPORT.otlp.json [UNSKEWED_TRACE]

TRACE is the text trace nest read (a capture with --truth-header, or its
skewed copy), EXPORT the OTLP requests `nest --requests` wrote for it. With
UNSKEWED_TRACE (the capture before `skewer`), times are read from it, so that
"encloses" means what the servers did, not what skewed clocks show.

Prints, as eval's request accuracy counts them (docs/nesting.md):
  - requests and wrong requests (a request is wrong when one of its calls has
    a parent of another request, is in no exported request, or is another
    request's parent). A call under several calls of its own request into
    its caller must be under one that encloses it, where `bbprof eval`
    takes any of them (it has no true times); otherwise the rule is eval's.
    On a capture as taken, and on a skewed copy given with UNSKEWED_TRACE,
    it gave eval's request accuracy on every capture measured (docs/
    benchmarks.md); on a skewed copy without it, "encloses" reads skewed
    clocks and the figure is lower;
  - wrong calls by edge and by kind: no parent, a parent without a pathid,
    another request's call that encloses the child or not, and whether that
    call arrived after the true trigger (the latest-arriving call of the
    child's own request that encloses it) and returns after the true parent;
  - whether the truth nests at all (a call of the child's request into the
    caller enclosing the child);
  - the truth's service order per (child edge, parent edge): the share of
    consecutive children, in call order, whose true triggers arrived in the
    same order, and in return order, whose true parents returned in order
    (1.0: the node serves in arrival order, first in first out).
"""
import collections
import json
import sys


def ns(s):
    a, _, b = s.partition(".")
    return int(a) * 10**9 + int((b + "000000000")[:9])


def read_trace(path):
    """Calls in trace order, each with its return's time. On a skewed copy a
    return can come before its call in the file (the callee's clock runs
    ahead): it waits for its call, as nest's pairing lets it."""
    calls, pending, early = [], {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            f_ = line.rstrip("\n").split("\t")
            t, kind, src, dst, cid = ns(f_[0]), f_[1], f_[2], f_[3], f_[4]
            pid = f_[5] if len(f_) > 5 else "-"
            op = f_[6] if len(f_) > 6 else ""
            if kind == "CALL":
                c = dict(caller=src, callee=dst, callid=cid, start=t, end=None, pid=pid,
                         op=op, i=len(calls))
                calls.append(c)
                q = early.get((src, dst, cid))
                if q:
                    c["end"] = q.popleft()
                else:
                    pending.setdefault((src, dst, cid), collections.deque()).append(c)
            elif kind == "RET":
                q = pending.get((dst, src, cid))
                if q:
                    q.popleft()["end"] = t
                else:
                    early.setdefault((dst, src, cid), collections.deque()).append(t)
    return calls


def same_calls_unskewed(calls, path):
    """The calls of `path` in the order of `calls` (matched by caller,
    callee, callid and occurrence: skewer moves times, not calls)."""
    occ = collections.defaultdict(list)
    for c in read_trace(path):
        occ[(c["caller"], c["callee"], c["callid"])].append(c)
    seen = collections.Counter()
    out = []
    for c in calls:
        k = (c["caller"], c["callee"], c["callid"])
        out.append(occ[k][seen[k]])
        seen[k] += 1
    return out


def exported_parents(calls, path):
    """call index -> the exported parent's call index (None: a root)."""
    by_key = {(c["callee"], c["callid"], c["start"]): c for c in calls}
    spans, parent_span = {}, {}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            for rs in json.loads(line)["resourceSpans"]:
                callee = [a["value"]["stringValue"] for a in rs["resource"]["attributes"]
                          if a["key"] == "service.name"][0]
                for ss in rs["scopeSpans"]:
                    for sp in ss["spans"]:
                        at = {a["key"]: list(a["value"].values())[0] for a in sp["attributes"]}
                        c = by_key.get((callee, at["bbprof.callid"],
                                        int(sp["startTimeUnixNano"])))
                        if c is None:
                            continue
                        spans[(sp["traceId"], sp["spanId"])] = c["i"]
                        parent_span[c["i"]] = (sp["traceId"], sp.get("parentSpanId"))
    return {i: (spans.get(p) if p[1] else None) for i, p in parent_span.items()}


def encloses(p, c):
    return p["start"] <= c["start"] and p["end"] is not None and p["end"] >= c["end"]


def edge_name(c):
    route = c["op"].split("/")[1] if "/" in c["op"] else c["op"]
    return "%s->%s %s" % (c["caller"], c["callee"], route)


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    calls = read_trace(sys.argv[1])
    plain = same_calls_unskewed(calls, sys.argv[3]) if len(sys.argv) == 4 else calls
    par = exported_parents(calls, sys.argv[2])
    into = collections.defaultdict(list)  # (node, pathid) -> calls into it
    for c in calls:
        if c["pid"] != "-":
            into[(c["callee"], c["pid"])].append(c["i"])
    stats = collections.Counter()
    requests, wrong = set(), set()
    order = collections.defaultdict(list)
    for c in calls:
        if c["pid"] == "-" or c["end"] is None:
            continue
        requests.add(c["pid"])
        p = plain[c["i"]]
        own = into.get((c["caller"], c["pid"]), [])
        enc = [j for j in own if encloses(plain[j], p)]
        edge = edge_name(c)
        stats[("calls", edge)] += 1
        if own and not enc:
            stats[("truth does not nest", edge)] += 1
        if enc:
            trigger = plain[max(enc, key=lambda j: plain[j]["start"])]
            first_ret = min(plain[j]["end"] for j in enc)
            order[(c["caller"] + "->" + c["callee"],
                   trigger["caller"] + "->" + trigger["callee"])].append(
                       (p["start"], p["end"], trigger["start"], first_ret))
        if c["i"] not in par:  # in no exported request: lost
            stats[("not exported", edge)] += 1
            wrong.add(c["pid"])
            continue
        chosen = par[c["i"]]
        if (chosen is None) if not own else (chosen in (enc or own)):
            continue
        wrong.add(c["pid"])
        if chosen is None:
            kind = "no parent"
        elif calls[chosen]["pid"] == "-":
            kind = "a parent without pathid"
        else:
            wrong.add(calls[chosen]["pid"])
            q = plain[chosen]
            kind = "another request's %s->%s, %s" % (
                q["caller"], q["callee"], "enclosing" if encloses(q, p) else "not enclosing")
            if enc:
                kind += ", arrived %s the true trigger, returns %s the true parent" % (
                    "after" if q["start"] > trigger["start"] else "before",
                    "after" if q["end"] is not None and q["end"] > trigger["end"] else "before")
        stats[("wrong", edge, kind)] += 1
    print("requests %d, wrong %d: request accuracy %.1f%%" % (
        len(requests), len(wrong), 100 * (1 - len(wrong) / max(1, len(requests)))))
    for k in sorted(stats, key=str):
        print("  %s: %d" % (" | ".join(k), stats[k]))
    print("truth's service order (consecutive children whose parents keep their order):")
    for k, v in sorted(order.items()):
        v.sort()
        by_call = sum(1 for a, b in zip(v, v[1:]) if a[2] <= b[2]) / max(1, len(v) - 1)
        w = sorted(v, key=lambda x: x[1])
        by_ret = sum(1 for a, b in zip(w, w[1:]) if a[3] <= b[3]) / max(1, len(w) - 1)
        print("  %s under %s: %d children, by call %.3f, by return %.3f" % (
            k[0], k[1], len(v), by_call, by_ret))
    return 0


if __name__ == "__main__":
    sys.exit(main())
