#!/usr/bin/env bash
# What the per-op profiler costs (docs/profiling.md#what-it-costs). Off: `urpe bench step` of a
# build with the profiler's hooks against a build of the commit before them, both in every round,
# their order alternating from round to round (A B, then B A) so that a drift in the shared
# machine's load hits both alike; each run prints the median of STEPS timed steps. On: in the same
# rounds, the mean step that `urpe profile` measures on the same configuration (the trainer's step:
# the bench step plus drawing the batch), recorded steps 2..6.
#   bench/profile_overhead.sh BASELINE_BUILD_DIR [BUILD_DIR (default build)] [ROUNDS (default 10)] [STEPS (default 20)]
set -euo pipefail
cd "$(dirname "$0")/.."
BASELINE=${1:?usage: bench/profile_overhead.sh BASELINE_BUILD_DIR [BUILD_DIR] [ROUNDS] [STEPS]}
BUILD=${2:-build}
ROUNDS=${3:-10}
STEPS=${4:-20}
WORK=$(mktemp -d /tmp/urpe_profile_overhead.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export URPE_PEAKS_CACHE=${URPE_PEAKS_CACHE:-$WORK/peaks.json}  # the profile needs peaks, not good ones

step_ms() { grep -o 'median [0-9.]* ms' | awk '{ print $2 }'; }
base() { "$BASELINE/urpe" bench step --device cpu --repeats "$STEPS" 2>&1 | step_ms; }
hooks() { "$BUILD/urpe" bench step --device cpu --repeats "$STEPS" 2>&1 | step_ms; }
profiled() {
  "$BUILD/urpe" profile --preset pi-tiny --set seq_len=128 --set d_model=128 --set d_ff=512 --set batch=32 \
    --set init_std=0.02 --steps 2:6 --quiet --overwrite --out "$WORK/profile" >/dev/null 2>&1
  grep -o 'measured step (mean; median [0-9.]*) | [0-9.]*' "$WORK/profile/profile.md" | awk '{ print $NF }'
}

[ -f "$URPE_PEAKS_CACHE" ] || "$BUILD/urpe" bench peaks --sizes smoke >/dev/null
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores; hooks: $BUILD ($(git rev-parse --short HEAD)), baseline: $BASELINE"
"$BUILD/urpe" bench step --device cpu --repeats 1 2>&1 | head -n 1 | sed 's/^/# /'
echo "| round | load before | baseline (no hooks) | hooks, profiling off | off / baseline | profiling on (urpe profile) |"
echo "|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  load=$(awk '{ print $1 }' /proc/loadavg)
  if [ $((round % 2)) -eq 1 ]; then b=$(base); h=$(hooks); else h=$(hooks); b=$(base); fi
  p=$(profiled)
  echo "$round $load $b $h $p" >>"$WORK/all"
  awk '{ printf "| %s | %s | %.2f ms | %.2f ms | %.3f | %.2f ms |\n", $1, $2, $3, $4, $4 / $3, $5 }' <<<"$round $load $b $h $p"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| median | | $(awk '{ print $3 }' "$WORK/all" | median) ms | $(awk '{ print $4 }' "$WORK/all" | median) ms |\
 **$(awk '{ printf "%.3f\n", $4 / $3 }' "$WORK/all" | median)** | $(awk '{ print $5 }' "$WORK/all" | median) ms |"
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
