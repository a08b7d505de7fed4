#!/usr/bin/env bash
# Do the simulator's checks catch a missing barrier in urpe's own kernels? Removes each
# __syncthreads() of ops/*.cu and ops/*.cuh in turn (in a copy of the tracked tree, never in this
# one), rebuilds the simulator's parity suite there and runs it twice: checked (every check, the
# `make test` schedules reverse,random:1+switch) and unchecked (forward only, URPE_SIM_CHECKS=none).
# Prints one Markdown table row per barrier: the parity cases run, the two exit statuses and the
# checked run's first report. About a minute per barrier on 2 cores.
#   bench/sim_barrier_mutations.sh >> bench/results/sim_checks_DATE.md
set -uo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git ls-files -z | tar --null -cf - -T - | tar -xf - -C "$work"
cd "$work"
cmake -S . -B build -DURPE_CUDA=OFF -DURPE_MPI=OFF -DURPE_CUDA_SIM_SUITES=kernels \
  $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
if ! cmake --build build -j2 --target test_cuda_sim_parity >build.log 2>&1; then
  echo "bench/sim_barrier_mutations.sh: the unmodified tree does not build (see $work/build.log)" >&2
  exit 2
fi
echo "| removed barrier | parity cases | checked | unchecked | the checked run's first report |"
echo "|---|---|---|---|---|"
grep -n "__syncthreads();" ops/*.cu ops/*.cuh | grep -v ":[[:space:]]*//" | cut -d: -f1,2 | while IFS=: read -r file line; do
  cp "$file" "$file.orig"
  sed -i "${line}s|__syncthreads();|/* removed */|" "$file"
  # The fused attention's barriers: its parity case; the shared block reduction: the whole suite.
  case "$file" in
    *flash*) filter='--test-case=parity: fused URPE*'; cases="fused attention" ;;
    *) filter='--test-case=parity:*'; cases="all" ;;
  esac
  if cmake --build build -j2 --target test_cuda_sim_parity >build.log 2>&1; then
    (cd build && URPE_SIM_SCHEDULES=reverse,random:1+switch URPE_SIM_CHECKS=all \
       ./test_cuda_sim_parity "$filter" >../checked.log 2>&1)
    checked=$?
    (cd build && URPE_SIM_SCHEDULES=forward URPE_SIM_CHECKS=none \
       ./test_cuda_sim_parity "$filter" >../unchecked.log 2>&1)
    unchecked=$?
    report=$(grep -m1 "^cuda_sim: " checked.log | sed 's/^cuda_sim: //; s/|/\\|/g')
    verdict() { [ "$1" -eq 0 ] && echo "passed" || echo "**failed** ($1)"; }
    echo "| \`$file:$line\` | $cases | $(verdict $checked) | $(verdict $unchecked) | ${report:-none} |"
  else
    echo "| \`$file:$line\` | - | build failed | - | - |"
  fi
  mv "$file.orig" "$file"
done
