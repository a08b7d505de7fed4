#!/usr/bin/env bash
# Runs every CUDA simulator suite (test_cuda_sim_*, the two-rank NCCL entry included) with the
# simulator's racecheck, memcheck and initcheck on, each launch under SCHEDULES (compared bit for
# bit), and prints a Markdown record: the suites' results, then per kernel of ops/ and tensor/ how
# many launches were checked, with how many blocks and shared / global accesses, and which
# kernels no suite launched. docs/cuda.md explains the checks; bench/results/ keeps the records.
#   bench/sim_checks.sh [BUILD] > bench/results/sim_checks_DATE.md
# SCHEDULES (default forward,reverse,random:1+switch) is passed as URPE_SIM_SCHEDULES.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SCHEDULES=${SCHEDULES:-forward,reverse,random:1+switch}
for suite in test_cuda_sim_parity test_cuda_sim_training test_cuda_sim_bench test_cuda_sim_nccl; do
  if [ ! -x "$BUILD/$suite" ]; then
    echo "bench/sim_checks.sh: $BUILD/$suite is missing; build it first (make build)" >&2
    exit 2
  fi
done
summary=$(mktemp -d)
trap 'rm -rf "$summary"' EXIT

echo "# CUDA simulator checks: $(date +%Y-%m-%d)"
echo
echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); schedules \`$SCHEDULES\`;"
echo "checks racecheck, memcheck, initcheck (\`bench/sim_checks.sh\`, docs/cuda.md)."
echo
echo "| suite | result | seconds |"
echo "|---|---|---|"
status=0
run_suite() {  # name, then the command
  local name=$1
  shift
  local start end code
  start=$(date +%s.%N)
  (cd "$BUILD" && URPE_SIM_SUMMARY=$summary URPE_SIM_SCHEDULES=$SCHEDULES URPE_SIM_CHECKS=all \
     "$@" >"$summary/$name.log" 2>&1)
  code=$?
  end=$(date +%s.%N)
  local result="passed"
  [ $code -eq 77 ] && result="skipped"
  [ $code -ne 0 ] && [ $code -ne 77 ] && result="**failed** (exit $code)" && status=1
  printf '| %s | %s | %.0f |\n' "$name" "$result" "$(echo "$end - $start" | bc)"
}
run_suite test_cuda_sim_parity ./test_cuda_sim_parity
run_suite test_cuda_sim_training ./test_cuda_sim_training
run_suite test_cuda_sim_bench ./test_cuda_sim_bench
run_suite test_cuda_sim_nccl ./test_cuda_sim_nccl "--test-case-exclude=two ranks*"
run_suite test_cuda_sim_nccl_two_ranks ./test_cuda_sim_nccl "--test-case=two ranks*"
echo
# What the checks reported (a launch failure names the check), from the suites' output.
found=$(grep -h "^cuda_sim: .*\(racecheck\|memcheck\|initcheck\|schedules give\|schedules write\)" \
          "$summary"/*.log 2>/dev/null | sort | uniq -c)
if [ -z "$found" ]; then
  echo "**Found: nothing.** No racecheck, memcheck or initcheck report, and every launch wrote the"
  echo "same bits under every schedule."
else
  echo "**Found:**"
  echo
  echo '```'
  echo "$found"
  echo '```'
fi
echo
# Sum the per-process TSVs (the suites and every urpe-cudasim they started) per kernel.
grep -ho "__global__ void [A-Za-z_0-9]*" ops/*.cu tensor/*.cu | awk '{print $3}' | sort -u \
  >"$summary/defined.txt"
cat "$summary"/cuda_sim_*.tsv 2>/dev/null | grep -v "^#" | awk -F'\t' '
  $2 == "launches" { next }
  { launches[$1] += $2; replayed[$1] += $3; blocks[$1] += $4; shared[$1] += $5; global[$1] += $6;
    failures[$1] += $7 }
  END { for (k in launches) printf "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", k, launches[k], replayed[k],
        blocks[k], shared[k], global[k], failures[k] }' | sort >"$summary/launched.tsv"
awk -F'\t' '{ l += $2; r += $3 } END { printf "%d launches checked (%d of them run under every schedule and compared), ", l, r }' \
  "$summary/launched.tsv"
echo "$(wc -l <"$summary/launched.tsv") kernels."
echo
echo "| kernel | launches | compared | blocks | shared accesses | global accesses | failures |"
echo "|---|---|---|---|---|---|---|"
awk -F'\t' '{ printf "| `%s` | %d | %d | %d | %d | %d | %d |\n", $1, $2, $3, $4, $5, $6, $7 }' \
  "$summary/launched.tsv"
echo
never=$(while read -r k; do
  grep -q "^$k\(<[^	]*>\)\?	" "$summary/launched.tsv" || echo "$k"
done <"$summary/defined.txt")
if [ -n "$never" ]; then
  echo "Kernels defined in ops/ and tensor/ that no launch above names:"
  echo "$never" | sed 's/^/- `/; s/$/`/'
fi
exit $status
