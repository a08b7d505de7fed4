#!/usr/bin/env bash
# The CPU training step against PyTorch eager (README "Benchmarks"): `urpe bench step` with
# materialized and fused attention beside `tools/torch_reference.py --bench`, the same model and
# batch (n = 128, d = 128, 4 heads, 2 layers, d_ff 512, batch 32, URPE), 2 threads each. On a
# shared machine the load drifts, so the three runs of a round go back to back and the rounds
# alternate; each run prints the median of its timed steps, and the script prints every round's
# ratios and the median ratio over the rounds, with the load before each round.
# BASELINE=DIR adds a column for another build's binary (DIR/urpe, materialized), e.g. the commit
# before a change, timed in the same rounds.
#   [BASELINE=DIR] bench/cpu_step_vs_torch.sh [BUILD_DIR (default build)] [ROUNDS (default 5)] [STEPS (default 20)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-5}
STEPS=${3:-20}
PYTHON=${PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d /tmp/urpe_cpu_step.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

step_ms() { grep -o 'median [0-9.]* ms' | awk '{ print $2 }'; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), urpe $(git rev-parse --short HEAD), $(nproc) cores"
"$BUILD/urpe" bench step --device cpu --repeats 1 2>&1 | head -n 1 | sed 's/^/# /'
"$PYTHON" tools/torch_reference.py --bench --steps 1 2>&1 | head -n 1 | sed 's/^/# /'
BASELINE=${BASELINE:-}
[ -n "$BASELINE" ] && "$BASELINE/urpe" bench step --device cpu --repeats 1 2>&1 | head -n 1 | sed "s|^|# baseline $BASELINE: |"
echo "| round | load before | urpe materialized | urpe fused | PyTorch | materialized / PyTorch | fused / PyTorch |${BASELINE:+ baseline | baseline / PyTorch |}"
echo "|---|---|---|---|---|---|---|${BASELINE:+---|---|}"
for round in $(seq 1 "$ROUNDS"); do
  load=$(awk '{ print $1 }' /proc/loadavg)
  m=$("$BUILD/urpe" bench step --device cpu --repeats "$STEPS" 2>&1 | step_ms)
  f=$("$BUILD/urpe" bench step --device cpu --repeats "$STEPS" --attention fused 2>&1 | step_ms)
  t=$("$PYTHON" tools/torch_reference.py --bench --steps "$STEPS" 2>&1 | step_ms)
  base=0
  [ -n "$BASELINE" ] && base=$("$BASELINE/urpe" bench step --device cpu --repeats "$STEPS" 2>&1 | step_ms)
  echo "$round $load $m $f $t $base" >>"$WORK/all"
  awk -v with_base="$BASELINE" '{ printf "| %s | %s | %.2f ms | %.2f ms | %.2f ms | %.2f | %.2f |", $1, $2, $3, $4, $5, $3 / $5, $4 / $5
         if (with_base != "") printf " %.2f ms | %.2f |", $6, $6 / $5
         printf "\n" }' <<<"$round $load $m $f $t $base"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| median | | $(awk '{ print $3 }' "$WORK/all" | median) ms | $(awk '{ print $4 }' "$WORK/all" | median) ms |\
 $(awk '{ print $5 }' "$WORK/all" | median) ms | **$(awk '{ printf "%.2f\n", $3 / $5 }' "$WORK/all" | median)** |\
 **$(awk '{ printf "%.2f\n", $4 / $5 }' "$WORK/all" | median)** |\
${BASELINE:+ $(awk '{ print $6 }' "$WORK/all" | median) ms | **$(awk '{ printf "%.2f\n", $6 / $5 }' "$WORK/all" | median)** |}"
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
