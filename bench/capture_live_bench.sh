#!/bin/sh
# Live capture on loopback: for rising packet rates, `bbprof
# capture -i lo` and `tcpdump -i lo -w /dev/null` run side by side on the
# same traffic (bench/udp_blast: DNS-like query/response pairs between two
# loopback addresses), each with its default kernel buffer, and each reports
# how many packets the kernel dropped for it. The highest rate without drops
# is what each sustains on this machine, next to the other in the same run.
# Needs root (live capture). The sender and both capturers share the
# machine's cores, so absolute rates are low on a 2-core machine: the
# comparison is the claim.
#
#   bench/capture_live_bench.sh [SECONDS] [RATES...]
#
# Defaults: 3 seconds per rate; 25000 50000 100000 200000 400000 packets/s.
# Each capturer runs with its default kernel buffer (bbprof 32 MiB, tcpdump
# 2 MiB); TCPDUMP_BUFFER=KIB gives tcpdump -B KIB for an equal-buffer run.
# Uses $BBPROF or build/release/cli/bbprof.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
blast=$(dirname "$bbprof")/../bench/udp_blast
seconds=${1:-3}
[ $# -gt 0 ] && shift
rates=${*:-25000 50000 100000 200000 400000}
if [ "$(id -u)" -ne 0 ]; then
  echo "capture_live_bench: needs root (live capture on lo)" >&2
  exit 1
fi
command -v tcpdump >/dev/null || { echo "capture_live_bench: tcpdump not installed" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/capture-live.XXXXXX")
bb_pid="" td_pid=""
cleanup() {
  [ -n "$bb_pid" ] && kill "$bb_pid" 2>/dev/null || true
  [ -n "$td_pid" ] && kill "$td_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
filter="udp and net 127.0.30.0/24"

wait_for() {  # wait_for FILE TEXT: until a capturer says it is listening
  i=0
  while ! grep -q "$2" "$1" 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "capture_live_bench: no '$2' in $1" >&2; cat "$1" >&2; exit 1; }
    sleep 0.1
  done
}

printf '%10s %10s | %-28s | %-28s\n' "rate pkt/s" "sent" "bbprof capture: got / drops" "tcpdump -w /dev/null: got / drops"
for rate in $rates; do
  "$bbprof" capture -i lo -o "$work/live.bbt" $filter 2>"$work/bb.err" &
  bb_pid=$!
  tcpdump -i lo -n ${TCPDUMP_BUFFER:+-B "$TCPDUMP_BUFFER"} -w /dev/null $filter 2>"$work/td.err" &
  td_pid=$!
  wait_for "$work/bb.err" "listening on"
  wait_for "$work/td.err" "listening on"
  sent=$("$blast" 127.0.30.1 127.0.30.2 53 "$rate" "$seconds")
  sleep 0.5
  kill -INT "$bb_pid" "$td_pid"
  wait "$bb_pid" || true
  wait "$td_pid" || true
  bb_pid="" td_pid=""
  bb_got=$(awk '$1 == "packets" {print $2}' "$work/bb.err")
  bb_drop=$(awk '$1 == "kernel_drops" {print $2}' "$work/bb.err")
  td_got=$(awk '/packets captured/ {print $1}' "$work/td.err")
  td_drop=$(awk '/dropped by kernel/ {print $1}' "$work/td.err")
  printf '%10s %10s | %12s / %-13s | %12s / %-13s\n' "$rate" "$sent" \
    "${bb_got:-?}" "${bb_drop:-?}" "${td_got:-?}" "${td_drop:-?}"
done
