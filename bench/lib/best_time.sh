# Sourced by bench scripts. best_time CMD...: the best of 3 wall-clock runs
# of CMD, in seconds (the machine is shared: the best run is the least
# disturbed one).
now() { date +%s.%N; }
best_time() {
  b=""
  for _ in 1 2 3; do
    t0=$(now); "$@"; t1=$(now)
    t=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
  done
  echo "$b"
}
