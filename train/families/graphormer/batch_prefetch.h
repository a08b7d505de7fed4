// The next training batches' collation on background host threads while the current step runs.
//
// Collating a batch (data/molecule_collate.cpp: one BFS per atom, every pair's hops, then the
// model's maps and, for a GPU, the packed multi-hop ids) is host work at the start of every step,
// before its first op: a GPU waits for it unless it was done ahead. The rows of the coming steps
// are known in advance (the epoch's shuffled order), so the trainer asks for them to be collated
// in the background and takes each result at its step. It asks for kBatchesAhead batches: on the
// H200 (2026-11-27) one batch ahead was not enough at the ZINC preset, whose GPU work (~21 ms)
// became shorter than one collation on that host (about 30 ms of wall time, inferred from the
// 9.7 ms the step waited at its start; bench/cuda_notes.md "The Graphormer step"). With k batches
// in flight on k threads a batch has k steps to be ready, so the step is max(GPU, collation / k).
//
// Nothing depends on the guess: take(rows) returns a background batch only when it was collated
// from exactly these rows, and collates them now otherwise (the first step of an epoch, a resumed
// run), so every step sees the batch collate_graphs(rows) gives either way. The background
// threads only read the dataset (const) and write their own CPU tensors; the uploads to the
// device stay on the training thread.
#pragma once
#include <cstdint>
#include <deque>
#include <future>
#include <vector>

#include "data/molecule_dataset.h"
#include "train/loop/grad_accumulation.h"

namespace urpe {

// Batches the trainer keeps in flight ahead of the current step (each on its own thread).
constexpr int64_t kBatchesAhead = 2;

class GraphBatchPrefetch {
 public:
  // `dataset` must outlive this object (a pending collation reads it).
  GraphBatchPrefetch(const data::MoleculeDataset& dataset, const data::CollateOptions& options);
  ~GraphBatchPrefetch();  // waits for the pending collations
  GraphBatchPrefetch(const GraphBatchPrefetch&) = delete;
  GraphBatchPrefetch& operator=(const GraphBatchPrefetch&) = delete;

  // collate_graphs(dataset, rows, options): the oldest pending batch when it is of these rows (its
  // errors are thrown here), else collated on this thread (the pending ones keep waiting).
  data::GraphBatch take(const std::vector<int64_t>& rows);
  // The coming steps' rows, in the order they will be taken: pending batches that match a prefix
  // of `upcoming` are kept, the others dropped, and the rest of `upcoming` started, each on its
  // own thread.
  void prefetch_ahead(const std::vector<std::vector<int64_t>>& upcoming);
  // prefetch_ahead({rows}): a pending batch of other rows is dropped.
  void prefetch(std::vector<int64_t> rows) { prefetch_ahead({std::move(rows)}); }

  int64_t hits() const { return hits_; }      // take() calls served by a background batch
  int64_t misses() const { return misses_; }  // take() calls collated on the calling thread
  int64_t started() const { return started_; }  // background collations started
  // hits_by_lead()[k]: hits whose batch was started k take() calls before it was taken (1: by
  // the step before). Deterministic, unlike a wait time: what a test checks to see how far ahead
  // the trainer keeps its batches.
  const std::vector<int64_t>& hits_by_lead() const { return hits_by_lead_; }

 private:
  struct Pending {
    std::vector<int64_t> rows;
    std::future<data::GraphBatch> batch;
    int64_t started_after = 0;  // take() calls made before it was started
  };
  const data::MoleculeDataset& dataset_;
  const data::CollateOptions options_;
  std::deque<Pending> pending_;  // oldest first: the order of the coming take() calls
  int64_t hits_ = 0, misses_ = 0, started_ = 0, takes_ = 0;
  std::vector<int64_t> hits_by_lead_;
};

// Where a micro-batch sits in the epoch: batch `in_epoch` of it, micro-batch `micro` of that.
struct BatchPosition {
  int64_t in_epoch = 0;
  MicroBatch micro;
};
// The `count` micro-batches after `now` in the same epoch (fewer near its end: the next epoch's
// order is drawn when it starts), in order.
std::vector<BatchPosition> positions_ahead(const BatchPosition& now, int64_t batches_per_epoch, int64_t count);

}  // namespace urpe
