#!/usr/bin/env bash
# CTest `walkthrough_other_blas_core`: docs/run_walkthrough.sh --quick once more, on another
# machine as far as one machine can pretend to be one: OpenBLAS made to run another kernel family
# than the one it runs here (OPENBLAS_CORETYPE) and another OpenMP thread count. The page's
# shown outputs were written on one machine; a line that prints a fact of the machine without
# the comparison masking it (docs/walkthrough_compare.awk) fails here, not on a user's machine
# (docs/testing.md#the-walkthrough).
#
#   tests/walkthrough_other_core.sh BUILD OUT
#
# Exits 77 (CTest: skipped) where nothing can be varied: no OpenBLAS, an OpenBLAS built for one
# CPU only (it ignores OPENBLAS_CORETYPE), or a CPU that is not x86.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?usage: walkthrough_other_core.sh BUILD OUT}
OUT=${2:?usage: walkthrough_other_core.sh BUILD OUT}
[ -x "$BUILD/urpe" ] || { echo "walkthrough_other_core.sh: no $BUILD/urpe; build it first" >&2; exit 2; }

# The kernel family urpe runs with this environment: OpenBLAS names it on stderr when it loads
# (OPENBLAS_VERBOSE=2; the last line counts, since urpe may re-execute itself with a better one).
core_of() { { OPENBLAS_VERBOSE=2 "$@" "$BUILD/urpe" help 2>&1 >/dev/null || true; } | sed -n 's/^Core: //p' | tail -1; }
current=$(core_of env)
if [ -z "$current" ]; then
  echo "walkthrough_other_core.sh: skipped: OpenBLAS names no kernel family here (no OpenBLAS, or one built for one CPU)"
  exit 77
fi
case "$(uname -m)" in
  x86_64|i?86) ;;
  *) echo "walkthrough_other_core.sh: skipped: not an x86 CPU (OpenBLAS runs $current)"; exit 77 ;;
esac

# Another family this CPU can run, the issue's Zen first: family and the CPU flag it needs.
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
other=""
for candidate in Zen:avx2 Haswell:avx2 SkylakeX:avx512f Sandybridge:avx Prescott:pni; do
  family=${candidate%%:*} flag=${candidate#*:}
  if [ "$family" != "$current" ] && [ "${flags#* $flag }" != "$flags" ]; then other=$family; break; fi
done
if [ -z "$other" ] || [ "$(core_of env OPENBLAS_CORETYPE="$other")" != "$other" ]; then
  echo "walkthrough_other_core.sh: skipped: OpenBLAS runs $current here and cannot be made to run another family (OPENBLAS_CORETYPE=${other:-none} was ignored)"
  exit 77
fi
# Another thread count: 1, or 2 where the suite runs with 1 (on one CPU urpe would clamp 2 to 1).
threads=${OMP_NUM_THREADS:-$(nproc)}
if [ "$threads" != 1 ]; then threads=1; elif [ "$(nproc)" -gt 1 ]; then threads=2; fi

echo "walkthrough_other_core.sh: OpenBLAS runs $current here; this run: OPENBLAS_CORETYPE=$other OMP_NUM_THREADS=$threads"
export OPENBLAS_CORETYPE=$other OMP_NUM_THREADS=$threads
bash "$ROOT/docs/run_walkthrough.sh" --quick --build "$BUILD" --out "$OUT"
