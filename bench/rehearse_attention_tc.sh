#!/usr/bin/env bash
# Rehearses `bench/gpu_session.sh attention_tc` without a GPU, so the one device call cannot fail on
# a typo: the same step, every command with the same options, on the CUDA simulator build
# (urpe-cudasim, the test_cuda_sim_* suites) with tiny shapes (ATTENTION_TC_SMOKE=1), PyTorch's
# command lines checked by `bench/torch_attention.py --dry-run`, and stand-ins for compute-sanitizer
# and ncu that accept exactly the options the step uses and run the program they were given.
#   bench/rehearse_attention_tc.sh [BUILD_DIR]     (default build; logs in ./gpu_logs_rehearsal)
# Needs `make build` (or the targets urpe-cudasim, test_cuda_sim_flash_tensor_core,
# test_cuda_sim_parity). Exit status: the number of steps that failed.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
STANDINS=$(mktemp -d)
trap 'rm -rf "$STANDINS"' EXIT

cat >"$STANDINS/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
# Stand-in: the options bench/gpu_session.sh passes, then the program, run as is.
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) case "$2" in memcheck|racecheck|initcheck|synccheck) shift 2 ;; *) echo "compute-sanitizer stand-in: bad --tool $2" >&2; exit 2 ;; esac ;;
    --error-exitcode) [[ "$2" =~ ^[0-9]+$ ]] || { echo "bad --error-exitcode $2" >&2; exit 2; }; shift 2 ;;
    --report-api-errors) shift 2 ;;
    -*) echo "compute-sanitizer stand-in: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
echo "compute-sanitizer stand-in: running $*"
"$@"; rc=$?
echo "========= ERROR SUMMARY: 0 errors (stand-in: nothing was checked)"
exit $rc
EOF

cat >"$STANDINS/ncu" <<'EOF'
#!/usr/bin/env bash
# Stand-in: the options bench/gpu_session.sh passes; --import needs the report; else the program runs.
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --clock-control|--set|--launch-count|--launch-skip|--page|--metrics|--print-summary) shift 2 ;;
    -k) [[ "$2" == regex:* ]] || { echo "ncu stand-in: -k expects regex:NAME, got $2" >&2; exit 2; }; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -f) shift ;;
    --import) [ -f "$2" ] || { echo "ncu stand-in: no report $2" >&2; exit 2; }; echo "report $2 (stand-in)"; exit 0 ;;
    -*) echo "ncu stand-in: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -n "$out" ] || { echo "ncu stand-in: no -o" >&2; exit 2; }
"$@"; rc=$?
: >"$out.ncu-rep"
exit $rc
EOF
chmod +x "$STANDINS/compute-sanitizer" "$STANDINS/ncu"

export PATH="$STANDINS:$PATH" ATTENTION_TC_SMOKE=1 BUILD="$BUILD_DIR" OUT=${OUT:-gpu_logs_rehearsal}
export URPE_BIN="./$BUILD_DIR/urpe-cudasim" TC_SUITE="./$BUILD_DIR/test_cuda_sim_flash_tensor_core"
export PARITY_SUITE="./$BUILD_DIR/test_cuda_sim_parity"
for f in "$URPE_BIN" "$TC_SUITE" "$PARITY_SUITE"; do
  [ -x "$f" ] || { echo "rehearse_attention_tc: $f is missing (make build)" >&2; exit 2; }
done
bench/gpu_session.sh attention_tc | tee "$STANDINS/steps.txt"
failed=$(grep -c '^== .*: exit [1-9]' "$STANDINS/steps.txt")
missed=$(grep -c 'MISMATCH' "$STANDINS/steps.txt")
echo "rehearse_attention_tc: $((failed + missed)) step(s) failed"
exit $((failed + missed))
