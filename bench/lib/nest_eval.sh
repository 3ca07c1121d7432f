# Sourced by bench scripts. nest_eval_fn B TRACE OUTBASE NEST_FLAGS...: runs
# `nest` and `eval` on TRACE and prints "FN% (messages on correct paths %)":
# the false-negative path-instance rate, and the share of ALL the trace's
# messages that nest ascribed to a correct path (eval's truth covers only the
# pairable messages, so under skew or loss the FN rate alone flatters).
nest_eval_fn() {
  local b=$1 trace=$2 out=$3
  shift 3
  "$b" nest "$trace" --json "$out.json" --requests "$out.otlp.json" -q "$@" > /dev/null
  "$b" eval "$out.json" --truth "$trace" --json "$out.eval.json" -q > /dev/null
  python3 -c 'import json,sys
e = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
print("%.2f%% (%.1f%%)" % (100*e["instances"]["false_negative_rate"], 100*e["messages"]["correct"]/r["input"]["messages"]))' \
    "$out.eval.json" "$out.json"
}
