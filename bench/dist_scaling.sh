#!/usr/bin/env bash
# Data-parallel scaling on the CPU (docs/distributed.md#measured): training
# tokens/s of `urpe train` on the bench config (n = 128, d = 128, 4 heads, 2 layers, d_ff 512,
# batch 32, URPE; 20 steps, one evaluation at the end, which metrics.csv's train row excludes)
# with 1 process, 2 MPI ranks, and 2 ranks with shard_optimizer = true, one OpenMP thread per
# process. On a shared machine the load drifts, so the three runs of a round go back to back and
# the rounds alternate; the medians over the rounds, and the per-round ratios, are printed. CPU
# time (user + sys of every process, from /usr/bin/time) is printed beside the wall-clock figures.
#   bench/dist_scaling.sh [BUILD_DIR (default build)] [ROUNDS (default 4)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-4}
WORK=$(mktemp -d /tmp/urpe_dist_scaling.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
S="--preset pi-small --set seq_len=128 --set vocab=100 --set d_model=128 --set heads=4 --set layers=2 \
   --set d_ff=512 --set batch=32 --set pe=urpe --set steps=20 --set warmup=2 --set eval_every=20 \
   --set valid_size=64 --set dropout=0 --quiet"
MPI="mpirun --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1"

run() {  # run NAME COMMAND...: prints "NAME tokens/s cpu_s valid_loss"
  local name=$1 out=$WORK/$1_$round
  shift
  /usr/bin/time -f "%U %S" -o "$WORK/time" env OMP_NUM_THREADS=1 "$@" $S --out "$out" >/dev/null
  local tokens loss cpu
  tokens=$(awk -F, '$2 == "train" { print $6 }' "$out/metrics.csv" | tail -n 1)
  loss=$(awk -F, '$2 == "valid" { print $3 }' "$out/metrics.csv" | tail -n 1)
  cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$WORK/time")
  echo "$name $tokens $cpu $loss"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD), $(nproc) cores"
echo "# round ranks tokens/s cpu_s valid_loss (uptime before the round)"
for round in $(seq 1 "$ROUNDS"); do
  echo "# round $round: $(uptime | sed 's/.*load/load/')"
  { run 1_rank "$BUILD/urpe" train
    run 2_ranks $MPI "$BUILD/urpe" train
    run 2_ranks_sharded $MPI "$BUILD/urpe" train --set shard_optimizer=true
  } | sed "s/^/$round /" | tee -a "$WORK/all"
done
echo "# medians over $ROUNDS rounds: name tokens/s cpu_s"
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for name in 1_rank 2_ranks 2_ranks_sharded; do
  echo "$name $(awk -v n="$name" '$2 == n { print $3 }' "$WORK/all" | median) \
$(awk -v n="$name" '$2 == n { print $4 }' "$WORK/all" | median)"
done
echo "# per-round speed-up of 2 ranks over 1 (tokens/s ratio)"
awk '$2 == "1_rank" { one[$1] = $3 } $2 == "2_ranks" { two[$1] = $3 } $2 == "2_ranks_sharded" { sh[$1] = $3 }
     END { for (r in one) printf "round %s: %.2fx, sharded %.2fx\n", r, two[r] / one[r], sh[r] / one[r] }' "$WORK/all" | sort
