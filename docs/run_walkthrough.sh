#!/usr/bin/env bash
# docs/walkthrough.md as a tested path. Runs every command of the page's ```console blocks, in
# order, from the repository root into its own output folder; checks that each output has the
# shape of the block shown under its command (the same lines once every number and the machine's
# own facts are masked and spaces are collapsed, docs/walkthrough_compare.awk; a line "…" in a
# block stands for lines left out, so the block is an excerpt whose pieces must appear in that
# order); then checks the claims the page's text makes,
# on the numbers this run produced. Blocks fenced ```sh are shown, not run (the Nsight step needs a GPU).
#
#   docs/run_walkthrough.sh [--quick] [--write] [--build DIR] [--out DIR]
#
#   --quick  the short form (CTest's walkthrough_quick, so CI): fewer training steps and timing
#            repeats. Outputs keep their shape, so the same check applies; the claims that need
#            the full training are skipped, and the summary says how many.
#   --write  after a full run, put its outputs into the page (an excerpt keeps its selection of
#            lines; a block that is not an excerpt takes the whole new output, even where its
#            shape changed) and copy the pictures the page shows into docs/images/.
#   --build  the build directory with urpe, test_urpe_attention and test_cuda_sim_parity
#            (default: build; `make walkthrough` builds them)
#   --out    where the runs go (default: runs/walkthrough, the paths the page shows)
#
# Needs bash and a POSIX awk; exits 1 naming the step and the first line that differs.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DOC=docs/walkthrough.md
BUILD=build
OUT=runs/walkthrough
QUICK=0
WRITE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --write) WRITE=1 ;;
    --build) BUILD=${2:?--build needs a directory}; shift ;;
    --out) OUT=${2:?--out needs a directory}; shift ;;
    --help|-h) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_walkthrough.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$QUICK" = 1 ] && [ "$WRITE" = 1 ]; then
  echo "run_walkthrough.sh: --write needs the full run (the page shows its numbers), not --quick" >&2
  exit 2
fi
BUILD=${BUILD%/}
OUT=${OUT%/}
case "$BUILD" in /*) BUILD_PREFIX="$BUILD/" ;; *) BUILD_PREFIX="./$BUILD/" ;; esac
[ -x "$BUILD/urpe" ] || { echo "run_walkthrough.sh: no $BUILD/urpe; build it first (make walkthrough)" >&2; exit 2; }
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/urpe_walkthrough_XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# ---- the page's commands and the outputs it shows ----
# For step k: $WORK/k.cmd (the command as the page shows it, continuation lines included),
# $WORK/k.expected (the lines under it) and $WORK/k.range ("first last" line numbers in the page).
STEPS=$(awk -v work="$WORK" '
  function finish(last) {
    if (n > 0 && !done) { print first, last > (work "/" n ".range"); close(work "/" n ".range"); done = 1 }
  }
  /^```console[ \t]*$/ && !inblock { inblock = 1; next }
  /^```/ && inblock { finish(NR - 1); inblock = 0; next }
  inblock {
    if (cont) {
      printf "\n%s", $0 > (work "/" n ".cmd")
      cont = /\\$/
      if (!cont) first = NR + 1
      next
    }
    if (/^\$ /) {
      finish(NR - 1)
      n++; done = 0
      printf "%s", substr($0, 3) > (work "/" n ".cmd")
      printf "" > (work "/" n ".expected")
      cont = /\\$/
      first = NR + 1
      next
    }
    print > (work "/" n ".expected")
  }
  END { finish(NR); print n }' "$DOC")
[ "$STEPS" -gt 0 ] || { echo "run_walkthrough.sh: $DOC has no \`\`\`console blocks" >&2; exit 1; }

# ---- quick form: the same commands, smaller ----
QUICK_DEMO="--set steps=120 --set eval_every=40 --set warmup=30"
QUICK_DENOMINATOR="--set steps=40 --set eval_every=20 --set warmup=10"
runnable() {  # the page's command as it runs here
  local c=$1
  c=${c//.\/build\//$BUILD_PREFIX}
  c=${c//runs\/walkthrough/$OUT}
  if [ "$QUICK" = 1 ]; then
    case "$c" in
      *"urpe demo"*) c="$c $QUICK_DEMO" ;;
      *"theory denominator"*) c="$c $QUICK_DENOMINATOR" ;;
      *"bench kernels"*) c=${c//--repeats 10/--repeats 2} ;;
    esac
  fi
  printf '%s' "$c"
}

# ---- comparing shapes ----
# docs/walkthrough_compare.awk prints nothing when `actual` has the shape of `expected`, else the
# first difference; with -v write=FILE it also writes the block the page should show: the actual
# output, or for an excerpt the actual lines of each piece. Numbers and the machine's own facts
# (CPU model, caches, BLAS build, GPU name) are masked there.
COMPARE="$ROOT/docs/walkthrough_compare.awk"

# ---- run the steps ----
status=0
skipped=0
gpu_steps=$(awk '/^```sh[ \t]*$/{n++} END{print n+0}' "$DOC")
start_all=$(date +%s)
for k in $(seq 1 "$STEPS"); do
  cmd=$(cat "$WORK/$k.cmd")
  shown_cmd=${cmd%%$'\n'*}  # its first line (not `| head -1`: under pipefail, a SIGPIPE race)
  run=$(runnable "$cmd")
  # The CUDA simulator's suite is missing where it is not built (URPE_CUDA_SIM=OFF).
  binary=$(printf '%s' "$run" | awk '{print $1}')
  if [ "${binary#*/}" != "$binary" ] && [ ! -x "$binary" ]; then
    echo "[$k/$STEPS] skipped, $binary is not built: \$ $shown_cmd"
    skipped=$((skipped + 1))
    continue
  fi
  t0=$(date +%s)
  # A pipeline's status is its last command's (step 1 ends in `head`, which closes the pipe).
  if ! bash -c "$run" > "$WORK/$k.out" 2> "$WORK/$k.err"; then
    echo "[$k/$STEPS] FAILED: \$ $run" >&2
    tail -20 "$WORK/$k.err" >&2
    status=1
    continue
  fi
  t1=$(date +%s)
  # Paths as the page shows them.
  out_text=$(cat "$WORK/$k.out")
  out_text=${out_text//"$OUT"/runs/walkthrough}
  out_text=${out_text//"$BUILD_PREFIX"/./build/}
  printf '%s\n' "$out_text" > "$WORK/$k.out"
  cp "$WORK/$k.out" "$OUT/step$k.txt"
  if [ "$WRITE" = 1 ]; then
    diff=$(awk -v expected="$WORK/$k.expected" -v write="$WORK/$k.new" -f "$COMPARE" "$WORK/$k.out" || true)
  else
    diff=$(awk -v expected="$WORK/$k.expected" -f "$COMPARE" "$WORK/$k.out" || true)
  fi
  if [ -n "$diff" ] && [ "$WRITE" = 1 ] && ! grep -q '^[[:space:]]*…[[:space:]]*$' "$WORK/$k.expected"; then
    echo "[$k/$STEPS] new shape, written to the page ($((t1 - t0)) s): \$ $shown_cmd"
    printf '%s\n' "$diff" | sed 's/^/    /'
  elif [ -n "$diff" ]; then
    echo "[$k/$STEPS] output differs from the page ($((t1 - t0)) s): \$ $shown_cmd" >&2
    printf '%s\n' "$diff" | sed 's/^/    /' >&2
    echo "    (the whole output: $OUT/step$k.txt)" >&2
    status=1
  else
    echo "[$k/$STEPS] ok ($((t1 - t0)) s): \$ $shown_cmd"
  fi
done
end_all=$(date +%s)
echo "steps: $((end_all - start_all)) s; $skipped skipped; $gpu_steps block(s) shown but not run (they need a GPU)"

# ---- the claims of the text, on this run's numbers ----
# Each check names the step and the sentence it holds the page to. `output_of PATTERN` is the
# output of the first command containing PATTERN.
output_of() {
  local k
  for k in $(seq 1 "$STEPS"); do
    if grep -qF -- "$1" "$WORK/$k.cmd" && [ -f "$WORK/$k.out" ]; then cat "$WORK/$k.out"; return 0; fi
  done
  return 1
}
claims=0
skipped_claims=0
claim() {  # claim FULL_ONLY "what the page says" COMMAND...: the command must succeed
  local full_only=$1 text=$2
  shift 2
  if [ "$full_only" = full ] && [ "$QUICK" = 1 ]; then skipped_claims=$((skipped_claims + 1)); return 0; fi
  if "$@"; then
    claims=$((claims + 1))
  else
    echo "claim does not hold: $text" >&2
    status=1
  fi
}
. "$ROOT/docs/walkthrough_claims.sh"
echo "claims: $claims hold$([ "$skipped_claims" -gt 0 ] && echo ", $skipped_claims need the full run (skipped in --quick)")"

# ---- the page itself, from a full run ----
if [ "$WRITE" = 1 ]; then
  if [ "$status" != 0 ]; then
    echo "run_walkthrough.sh: not writing $DOC: a step failed or a claim does not hold (above)" >&2
    exit 1
  fi
  # Replace each block's lines (bottom up, so earlier line numbers stay valid).
  cp "$DOC" "$WORK/page"
  for k in $(seq "$STEPS" -1 1); do
    [ -f "$WORK/$k.new" ] || continue
    read -r first last < "$WORK/$k.range"
    awk -v first="$first" -v last="$last" -v block="$WORK/$k.new" '
      NR == first { while ((getline line < block) > 0) print line }
      NR >= first && NR <= last { next }
      { print }
      END { if (first > NR) while ((getline line < block) > 0) print line }' "$WORK/page" > "$WORK/page.next"
    mv "$WORK/page.next" "$WORK/page"
  done
  cp "$WORK/page" "$DOC.tmp" && mv "$DOC.tmp" "$DOC"
  # The pictures the page (and the README's quick start) shows, from this run.
  copy_picture() { cp "$1" "docs/images/$2.tmp" && mv "docs/images/$2.tmp" "docs/images/$2"; }
  copy_picture "$OUT/demo/plots/summary.png" demo_summary.png
  copy_picture "$OUT/demo/plots/accuracy.png" demo_accuracy.png
  copy_picture "$OUT/demo/plots/curves_pi.png" demo_curves_pi.png
  copy_picture "$OUT/demo/plots/urpe_c_pi.png" demo_urpe_c_pi.png
  copy_picture "$OUT/trained/plots/probe_spread.png" theory_probe_demo.png
  copy_picture "$OUT/plots/probe_spread.png" theory_probe_untrained.png
  copy_picture "$OUT/plots/construction.png" theory_construction.png
  copy_picture "$OUT/trained/plots/rowsums_head2.png" theory_rowsums_head2.png
  copy_picture "$OUT/trained/plots/rowsums_head3.png" theory_rowsums_head3.png
  copy_picture "$OUT/denominator/plots/denominator_loss.png" theory_denominator_loss.png
  copy_picture "$OUT/trained/plots/c_window.png" theory_c_window.png
  copy_picture "$OUT/analyze/plots/urpe_heads_pi-V100-urpe-s1_block2.png" walkthrough_urpe_heads_block2.png
  echo "wrote $DOC and its pictures in docs/images/"
fi
if [ "$status" = 0 ] && [ "$WRITE" = 0 ]; then echo "walkthrough: every step ran, its output has the page's shape, and the page's claims hold"; fi
exit "$status"
