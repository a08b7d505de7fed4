// The next training batch's collation on a second host thread while the current step runs.
//
// Collating a batch (data/molecule_collate.cpp: one BFS per atom, every pair's hops) is host work
// at the start of every step, before its first op: on a GPU the device waits for it (about 4 ms a
// step at the ZINC preset's 256 molecules on the 2-core development machine,
// bench/results/graphormer_host_cpu_2026-11-27.md). The rows of the next
// step are known in advance (the epoch's shuffled order), so the trainer asks for them to be
// collated in the background and takes the result at the next step, by then ready.
//
// Nothing depends on the guess: take(rows) returns the background batch only when it was
// collated from exactly these rows, and collates them now otherwise (the first step, the first of
// an epoch, a resumed run), so every step sees the batch collate_graphs(rows) gives either way.
// The background thread only reads the dataset (const) and writes its own CPU tensors; the
// uploads to the device stay on the training thread.
#pragma once
#include <cstdint>
#include <future>
#include <vector>

#include "data/molecule_dataset.h"

namespace urpe {

class GraphBatchPrefetch {
 public:
  // `dataset` must outlive this object (a pending collation reads it).
  GraphBatchPrefetch(const data::MoleculeDataset& dataset, const data::CollateOptions& options);
  ~GraphBatchPrefetch();  // waits for a pending collation
  GraphBatchPrefetch(const GraphBatchPrefetch&) = delete;
  GraphBatchPrefetch& operator=(const GraphBatchPrefetch&) = delete;

  // collate_graphs(dataset, rows, options): the background batch when it is of these rows (its
  // errors are thrown here), else collated on this thread.
  data::GraphBatch take(const std::vector<int64_t>& rows);
  // Starts collating `rows` on a second thread; a batch started before and not taken is dropped
  // (a take() of other rows leaves it waiting for its own).
  void prefetch(std::vector<int64_t> rows);

  int64_t hits() const { return hits_; }      // take() calls served by the background batch
  int64_t misses() const { return misses_; }  // take() calls collated on the calling thread

 private:
  const data::MoleculeDataset& dataset_;
  const data::CollateOptions options_;
  std::vector<int64_t> pending_rows_;
  std::future<data::GraphBatch> pending_;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace urpe
