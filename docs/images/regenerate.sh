#!/usr/bin/env bash
# Redraws every picture under docs/images/ from this checkout, each from the command whose output
# the README or a docs/ page describes next to it. The walkthrough's pictures (demo_*, theory_*)
# come from docs/run_walkthrough.sh --write, which this runs first unless --skip-walkthrough.
# The other runs go to runs/images/ and are trained once: a second call reuses them and only
# measures and draws again (the analyses, `urpe plot`), a few minutes. The first call takes about
# an hour on 2 cores, most of it the two synthetic grids.
#
#   docs/images/regenerate.sh [--skip-walkthrough] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=build
WALK=1
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-walkthrough) WALK=0 ;;
    --build) BUILD=${2:?--build needs a directory}; shift ;;
    *) echo "regenerate.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
URPE=./$BUILD/urpe
OUT=runs/images
mkdir -p "$OUT"

if [ "$WALK" = 1 ]; then docs/run_walkthrough.sh --write --build "$BUILD"; fi
[ -d runs/walkthrough/demo/runs ] || { echo "regenerate.sh: run docs/run_walkthrough.sh first (its demo is analysed here)" >&2; exit 1; }

# trained DIR COMMAND...: runs the training COMMAND unless DIR already holds its results.
trained() {
  local dir=$1
  shift
  if [ -f "$dir/results.json" ]; then
    echo "reusing $dir"
  else
    echo "\$ $*"
    "$@"
  fi
}
run() { echo "\$ $*"; "$@" > /dev/null; }
picture() {  # picture FROM NAME: copy into docs/images atomically
  cp "$1" "docs/images/$2.tmp" && mv "docs/images/$2.tmp" "docs/images/$2"
  echo "docs/images/$2 <- $1"
}

# docs/theory.md#where-position-lives-urpe-analyze: the demo's encoders analysed.
run "$URPE" analyze --compare runs/walkthrough/demo --save-hidden --out "$OUT/analyze" --overwrite
picture "$OUT/analyze/plots/attention_terms_pi-V100-urpe-s1_block2.png" analyze_demo_attention_terms_urpe.png
picture "$OUT/analyze/plots/gram_pi-V100-urpe-s1.png" analyze_demo_gram_urpe.png
picture "$OUT/analyze/plots/compare_pos_share.png" analyze_demo_pos_share.png
picture "$OUT/analyze/plots/spiral12_pi-V100-urpe-s1.png" analyze_demo_spiral_urpe.png
picture "$OUT/analyze/plots/urpe_rowsums_pi-V100-urpe-s1.png" analyze_demo_urpe_rowsums.png

# docs/theory.md#where-position-lives-urpe-analyze, Transformer-XL: txl-tiny, 300 steps, baseline and URPE.
trained "$OUT/txl-rpe" "$URPE" train --preset txl-tiny --set pe=rpe --set steps=300 --out "$OUT/txl-rpe" --quiet
trained "$OUT/txl-urpe" "$URPE" train --preset txl-tiny --set pe=urpe --set steps=300 --out "$OUT/txl-urpe" --quiet
run "$URPE" analyze --compare "$OUT/txl-rpe" "$OUT/txl-urpe" --contexts 512 --out "$OUT/analyze-txl" --overwrite
picture "$OUT/analyze-txl/plots/gram_txl-urpe.png" analyze_txl_gram_urpe.png

# docs/theory.md#which-encodings-can-tell-positions-apart
trained "$OUT/encodings" "$URPE" repro synthetic --scale tiny --seeds 2 --tasks pi \
  --pes none,ape,sinusoidal,rpe,alibi,rope,shaw,urpe,rope+urpe,alibi+urpe --out "$OUT/encodings"
run "$URPE" plot --run "$OUT/encodings"
picture "$OUT/encodings/plots/accuracy.png" encodings_accuracy.png

# docs/reproduce.md#synthetic-tasks-at-tiny-scale-on-a-cpu: the learned C on ETP.
trained "$OUT/synthetic" "$URPE" repro synthetic --scale tiny --seeds 2 --out "$OUT/synthetic"
run "$URPE" plot --run "$OUT/synthetic"
picture "$OUT/synthetic/plots/urpe_c_etp.png" repro_urpe_c_etp.png

# docs/reproduce.md#graphormer-at-tiny-scale-on-a-cpu: C against distance, the URPE run of the first seed.
trained "$OUT/molecules" "$URPE" repro molecules --scale tiny --seeds 2 --out "$OUT/molecules"
urpe_run=$(ls -d "$OUT"/molecules/runs/*urpe*s1 | head -1)
run "$URPE" plot --run "$urpe_run"
picture "$urpe_run/plots/urpe_c.png" molecules_urpe_c.png

# docs/profiling.md#plotsrooflinepng-how-to-read-the-roofline: the bench step's roofline, under
# ceilings measured just before (kept beside the run, not in the machine's shared cache).
URPE_PEAKS_CACHE="$OUT/peaks.json" run "$URPE" bench peaks
URPE_PEAKS_CACHE="$OUT/peaks.json" run "$URPE" profile --preset pi-tiny --set seq_len=128 --set d_model=128 \
  --set d_ff=512 --set batch=32 --set init_std=0.02 --steps 2:11 --out "$OUT/profile_bench" --overwrite
picture "$OUT/profile_bench/plots/roofline.png" profile_roofline_encoder_cpu.png

# Every picture here is shown somewhere.
missing=0
for f in docs/images/*.png; do
  if ! grep -rqF "images/$(basename "$f")" README.md docs/*.md; then
    echo "regenerate.sh: docs/images/$(basename "$f") is shown nowhere" >&2
    missing=1
  fi
done
exit "$missing"
