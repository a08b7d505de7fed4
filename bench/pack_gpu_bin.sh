#!/usr/bin/env bash
# Builds the CUDA binaries a GPU call needs here, on the development machine, and packs them as
# gpu_bin.tgz to carry (the device tool's `carry`), so the call spends no device time compiling
# (bench/cuda_notes.md: its paragraph on carried binaries). The GPU machine has CUDA's libraries but not
# this machine's NCCL or MPI, so those are configured off; a library that would not resolve there
# fails the check below rather than the call.
#
#   bench/pack_gpu_bin.sh [BUILD_DIR]     (default build-gpu; writes gpu_bin/ and gpu_bin.tgz)
#
# On the device: tar xzf gpu_bin.tgz; BUILD=gpu_bin bench/gpu_session.sh carried ...
# What a call carries and the repository's tree travel together, 64 MiB at most: since the tree
# reached ~17 MB the whole archive (~52 MB) no longer fits, so carry the unpacked binaries the
# call needs instead (carry ["gpu_bin/urpe", "gpu_bin/test_cuda_parity"]: ~35 MB), each call its
# own: a call's unpacked files are not there for the next (bench/cuda_notes.md, "Device calls:
# three ways to lose one").
# Both outputs are local files: list them in .git/info/exclude (done here) so they never land.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
TARGETS=(urpe test_cuda_flash_tensor_core test_cuda_parity test_cuda_syncs test_cuda_graphs)
command -v nvcc >/dev/null || { echo "pack_gpu_bin.sh: nvcc is not on PATH" >&2; exit 2; }

cmake -S . -B "$BUILD" -DURPE_CUDA=ON -DURPE_CUDA_SIM=OFF -DURPE_MPI=OFF -DURPE_NATIVE=OFF \
  -DURPE_NCCL=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target "${TARGETS[@]}"

rm -rf gpu_bin && mkdir gpu_bin
for t in "${TARGETS[@]}"; do cp "$BUILD/$t" gpu_bin/; done
strip gpu_bin/*
# Libraries the GPU machine lacks at this machine's paths (NCCL, MPI) must not be linked.
if ldd gpu_bin/* | grep -E 'nccl|libmpi'; then
  echo "pack_gpu_bin.sh: a binary links NCCL or MPI (above); reconfigure $BUILD" >&2
  exit 1
fi
tar czf gpu_bin.tgz gpu_bin
for path in /gpu_bin/ /gpu_bin.tgz; do
  grep -qxF "$path" .git/info/exclude 2>/dev/null || echo "$path" >> .git/info/exclude
done
du -h gpu_bin/* | sed 's/^/  /'
echo "gpu_bin.tgz: $(du -h gpu_bin.tgz | cut -f1) ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', uncommitted changes'))"
# Whether each call's carry fits (bench/cuda_notes.md, "A GPU session: the exact calls"): the
# device tool copies the tree (tracked files and untracked ones git does not ignore) plus the
# carried paths, 64 MiB in all; a call over it is refused or loses its binaries.
tree_bytes=$({ git ls-files -z; git ls-files -z --others --exclude-standard; } |
  xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
for carry in "urpe test_cuda_flash_tensor_core" "urpe test_cuda_graphs" "urpe test_cuda_parity"; do
  bytes=$tree_bytes
  for b in $carry; do bytes=$((bytes + $(stat -L -c %s "gpu_bin/$b"))); done
  verdict="fits"
  [ "$bytes" -le $((64 * 1024 * 1024)) ] || verdict="DOES NOT FIT in 64 MiB"
  echo "carry gpu_bin/{${carry// /,}} + the tree ($((tree_bytes / 1048576)) MiB): $((bytes / 1048576)) MiB, $verdict"
done
