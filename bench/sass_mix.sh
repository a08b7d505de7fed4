#!/usr/bin/env bash
# The static instruction mix of the tensor-core fused attention kernels (issue 35), without a GPU:
# why — the H200 record of 2026-11-26 ran them 5–15× below the issue-rate prediction, and the SASS
# showed integer index work and branches (IMAD, ISETP, BRA, a 64-bit division subroutine) far
# outnumbering the mma instructions. This script makes that count repeatable, so a change to the
# kernels' index arithmetic can be judged before a GPU is lent.
#
# It compiles ops/urpe_flash_tc_forward_cuda.cu and ops/urpe_flash_tc_backward_cuda.cu for sm_90
# with the real-CUDA build's device flags (CMakeLists.txt: -O3, --expt-relaxed-constexpr,
# -std=c++17; -lineinfo does not change the code), disassembles the cubins with cuobjdump -sass and
# prints, per kernel (forward, dQ, dK/dV at kDim 32 / 64 / 128): the count of each opcode class
# below, `int` (every integer ALU instruction: IMAD IADD3 VIADD LEA LOP3 SHF ISETP SEL IABS PRMT
# I2F/F2I and their uniform U… forms), the total (NOPs excluded), and ptxas -v's registers, stack
# frame and spill bytes. Static counts are instructions in the binary, not instructions executed;
# the inner loops are unrolled, so they track the per-tile work closely.
#
# Since 2026-11-27 each kernel holds two copies of its per-cell code: the interior fast path and
# the edge path (ops/urpe_flash_tc_tiles.cuh, tile_is_interior). The first table counts the
# kernels as built; the second compiles them again with URPE_TC_SASS_INTERIOR_ONLY (every tile
# down the fast path, the edge path compiled out: for counting only, its results are wrong on
# edge tiles), which is the code a long sequence's tiles run. The third (since 2026-11-28) is the
# tile loop of that fast path alone (tile_loop below): the place where a per-cell change shows.
#
#   bench/sass_mix.sh [--keep DIR]      (DIR keeps the cubins, .sass and ptxas logs)
# Needs nvcc and cuobjdump: $CUOBJDUMP, else cuobjdump on PATH or in nvcc's folder, else Triton's
# copy at /tmp/trx/triton/backends/nvidia/bin/cuobjdump (get it with `pip download --no-deps triton`
# and unzip triton/backends/nvidia/bin/cuobjdump), or the PyPI wheels: `pip install
# nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm` into a venv and put its nvidia/cu13/bin on PATH
# (cuobjdump -sass calls nvdisasm). Takes about 2 min on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
KEEP=""
if [ "${1:-}" = "--keep" ]; then KEEP=${2:?--keep needs a folder}; fi
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "sass_mix.sh: no nvcc (set NVCC)" >&2; exit 1; }
CUOBJDUMP=${CUOBJDUMP:-}
for c in "$(command -v cuobjdump || true)" "$(dirname "$NVCC")/cuobjdump" /tmp/trx/triton/backends/nvidia/bin/cuobjdump; do
  [ -z "$CUOBJDUMP" ] && [ -n "$c" ] && [ -x "$c" ] && CUOBJDUMP=$c
done
[ -n "$CUOBJDUMP" ] || { echo "sass_mix.sh: no cuobjdump (set CUOBJDUMP; see the header of this script)" >&2; exit 1; }
WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK"
[ -n "$KEEP" ] || trap 'rm -rf "$WORK"' EXIT

FLAGS=(-cubin -arch=sm_90 -O3 -DNDEBUG --expt-relaxed-constexpr -std=c++17 -DURPE_WITH_CUDA=1 -I. -Ithird_party -Xptxas -v)
# Variant "" is the kernels as built; "_interior" the fast path alone.
declare -A SOURCE=([forward]=ops/urpe_flash_tc_forward_cuda.cu [backward]=ops/urpe_flash_tc_backward_cuda.cu
                   [rows2]=ops/urpe_flash_tc_forward_rows2_cuda.cu)
PARTS="forward backward"
[ -f "${SOURCE[rows2]}" ] && PARTS="$PARTS rows2"
pids=()
for part in $PARTS; do
  "$NVCC" "${FLAGS[@]}" -o "$WORK/$part.cubin" "${SOURCE[$part]}" 2>"$WORK/$part.ptxas" &
  pids+=($!)
  if grep -q URPE_TC_SASS_INTERIOR_ONLY ops/urpe_flash_tc_tiles.cuh 2>/dev/null; then
    "$NVCC" "${FLAGS[@]}" -DURPE_TC_SASS_INTERIOR_ONLY -o "$WORK/${part}_interior.cubin" \
      "${SOURCE[$part]}" 2>"$WORK/${part}_interior.ptxas" &
    pids+=($!)
  fi
done
for p in "${pids[@]}"; do wait "$p" || { cat "$WORK"/*.ptxas >&2; exit 1; }; done

# One line per kernel: short name, then the counts. Names: forward<64> (TF32 tiles),
# forward<64,bf16> (BF16 tiles from f32 tensors), forward<64,bf16,bf16io> (BF16 tiles reading and
# writing bf16 tensors), dq<64>, dkdv<64>, …; a +pipe suffix: the forward's pipelined variant
# (cp.async staging, --tc-pipeline on); forward_rows2<64,bf16…>: two 16-row blocks per warp
# (--tc-rows 2; its instructions cover 32 rows where the others' cover 16).
short() {
  c++filt | sed -E 's/.*urpe_flash_tc_forward_rows2_kernel<(float|__nv_bfloat16), (true|false)>.*/forward_rows2<64, true, \1, \2>/' |
    sed -E 's/.*urpe_flash_tc_(backward_)?([a-z_]+)_kernel<([0-9]+)(, (true|false))?(, ([_a-z0-9]+))?(, (true|false))?>.*/\2<\3\4\6\8>/' |
    sed -E -e 's/, (float|__nv_bfloat16), true>/, \1>+pipe/' -e 's/, (float|__nv_bfloat16), false>/, \1>/' |
    sed -e 's/, false, float>/>/' -e 's/, true, float>/,bf16>/' -e 's/, true, __nv_bfloat16>/,bf16,bf16io>/' \
      -e 's/, false>/>/' -e 's/, true>/,bf16>/'
}
table() {  # table VARIANT: the counts of $WORK/{forward,backward}VARIANT.cubin
  local variant=$1
  for part in $PARTS; do
    "$CUOBJDUMP" -sass "$WORK/$part$variant.cubin" >"$WORK/$part$variant.sass"
    awk '
      /Function :/ { name = $3; names[name] = 1 }
      /^ +\/\*[0-9a-f]+\*\/ / {
        line = $0; sub(/^ +\/\*[0-9a-f]+\*\/ +/, "", line); split(line, tok, /[ ;]+/)
        op = tok[1]; if (op ~ /^@/) op = tok[2]
        split(op, piece, "."); base = piece[1]
        if (base == "NOP") next
        count[name, base]++; total[name]++
        if (base ~ /^U?(IMAD|IADD3|VIADD|LEA|LOP3|SHF|ISETP|SEL|IABS|PRMT|I2F|I2FP|F2I|IMNMX|VIMNMX|FLO|POPC|BMSK)$/) ints[name]++
      }
      END {
        for (n in names) {
          printf "%s", n
          split("HMMA IMAD ISETP BRA LDS LDG CALL LDL STL", cls, " ")
          for (k = 1; k <= 9; ++k) printf " %d", count[n, cls[k]] + 0
          printf " %d %d\n", ints[n] + 0, total[n] + 0
        }
      }' "$WORK/$part$variant.sass"
  done >"$WORK/counts$variant.txt"
  # ptxas -v: "Compiling entry function 'NAME'", then "N bytes stack frame, S bytes spill stores,
  # L bytes spill loads", then "Used R registers".
  awk '
    /Compiling entry function/ { match($0, /'\''[^'\'']+'\''/); name = substr($0, RSTART + 1, RLENGTH - 2) }
    /bytes stack frame/ { stack[name] = $1; spill[name] = $5 "/" $9 }
    /Used [0-9]+ registers/ { for (k = 1; k <= NF; ++k) if ($k == "Used") regs[name] = $(k + 1); print name, regs[name], stack[name], spill[name] }
  ' $(for part in $PARTS; do echo "$WORK/$part$variant.ptxas"; done) >"$WORK/ptxas$variant.txt"
  printf '%-34s %6s %6s %6s %5s %5s %5s %5s %4s %4s %6s %6s %5s %6s %9s\n' \
    kernel HMMA IMAD ISETP BRA LDS LDG CALL LDL STL int total regs stack spill_st/ld
  join <(sort "$WORK/counts$variant.txt") <(sort "$WORK/ptxas$variant.txt") | while read -r mangled rest; do
    echo "$(echo "$mangled" | short) $rest"
  done | grep -E '^(forward|forward_rows2|dq|dkdv)<' | sort -t'<' -k1,1 -k2,2n |
    awk '{ printf "%-34s %6d %6d %6d %5d %5d %5d %5d %4d %4d %6d %6d %5d %6d %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 }'
}

# tile_loop VARIANT: per kernel, the tile loop's body: of the backward branches (a BRA whose target
# is at or before it), the smallest address range that holds an HMMA. Static counts: the body
# still holds the loaders' two ways of reading a tile (whole, or row by row at the sequence's end)
# and the staging's bounds, of which a tile runs one, so the totals overstate what a warp issues
# per tile (forward<64,bf16,bf16io> before 2026-11-28: 1853 here, 1318 executed per warp and tile
# by ncu on the H100, 2026-11-27); a change to code every tile runs, such as the per-cell
# exponential, changes both by the same amount. Columns: HMMA, MUFU, LDS, FP32 (FFMA FMUL FADD
# FMNMX FSETP FSEL), int (as above), total (NOPs excluded).
tile_loop() {
  local variant=$1
  printf '%-34s %6s %6s %6s %6s %6s %6s\n' kernel HMMA MUFU LDS FP32 int total
  for part in $PARTS; do
    awk '
      function hex(text,   k, v) {  # mawk has no strtonum
        v = 0; text = tolower(text); sub(/^0x/, "", text)
        for (k = 1; k <= length(text); ++k) v = 16 * v + index("0123456789abcdef", substr(text, k, 1)) - 1
        return v
      }
      function flush(   k, a, b, j, best, bsize, size) {
        if (name == "") return
        best = 0; bsize = 1e9
        for (k = 1; k <= n; ++k) {
          if (target[k] == "" || target[k] > addr[k]) continue
          for (a = 1; a <= n && addr[a] < target[k]; ++a) {}
          size = k - a + 1
          if (size >= bsize) continue
          for (j = a; j <= k; ++j) if (op[j] == "HMMA") { best = a; bsize = size; bend = k; break }
        }
        if (best > 0) {
          split("", c)
          for (j = best; j <= bend; ++j) {
            if (op[j] == "NOP") continue
            c["total"]++
            if (op[j] == "HMMA" || op[j] == "MUFU" || op[j] == "LDS") c[op[j]]++
            if (op[j] ~ /^(FFMA|FMUL|FADD|FMNMX|FSETP|FSEL)$/) c["fp"]++
            if (op[j] ~ /^U?(IMAD|IADD3|VIADD|LEA|LOP3|SHF|ISETP|SEL|IABS|PRMT|I2F|I2FP|F2I|IMNMX|VIMNMX|FLO|POPC|BMSK)$/) c["int"]++
          }
          printf "%s %d %d %d %d %d %d\n", name, c["HMMA"], c["MUFU"], c["LDS"], c["fp"], c["int"], c["total"]
        }
      }
      /Function :/ { flush(); name = $3; n = 0 }
      /^ +\/\*[0-9a-f]+\*\/ / {
        line = $0; match(line, /\/\*[0-9a-f]+\*\//); here = hex(substr(line, RSTART + 2, RLENGTH - 4))
        sub(/^ +\/\*[0-9a-f]+\*\/ +/, "", line); split(line, tok, /[ ;]+/)
        o = tok[1]; if (o ~ /^@/) o = tok[2]
        split(o, piece, "."); ++n; op[n] = piece[1]; addr[n] = here; target[n] = ""
        if (piece[1] == "BRA" && match(line, /0x[0-9a-f]+/)) target[n] = hex(substr(line, RSTART, RLENGTH))
      }
      END { flush() }' "$WORK/$part$variant.sass"
  done | while read -r mangled rest; do echo "$(echo "$mangled" | short) $rest"; done |
    grep -E '^(forward|forward_rows2|dq|dkdv)<' | sort -t'<' -k1,1 -k2,2n |
    awk '{ printf "%-34s %6d %6d %6d %6d %6d %6d\n", $1, $2, $3, $4, $5, $6, $7 }'
}

echo "== the kernels as built (sm_90, $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet -- ops 2>/dev/null || echo ', ops/ modified'))"
table ""
if [ -f "$WORK/forward_interior.cubin" ]; then
  echo
  echo "== the interior fast path alone (URPE_TC_SASS_INTERIOR_ONLY: the edge path compiled out)"
  table _interior
  echo
  echo "== one interior tile: the smallest loop that holds an HMMA (the tile loop), its instructions"
  tile_loop _interior
fi
