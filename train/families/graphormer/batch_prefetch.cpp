// The next training batch collated on a second thread (batch_prefetch.h).
#include "train/families/graphormer/batch_prefetch.h"

#include <utility>

namespace urpe {

GraphBatchPrefetch::GraphBatchPrefetch(const data::MoleculeDataset& dataset, const data::CollateOptions& options)
    : dataset_(dataset), options_(options) {}

GraphBatchPrefetch::~GraphBatchPrefetch() {
  if (pending_.valid()) pending_.wait();  // an error there belonged to a batch nobody asked for
}

data::GraphBatch GraphBatchPrefetch::take(const std::vector<int64_t>& rows) {
  if (pending_.valid() && pending_rows_ == rows) {
    ++hits_;
    pending_rows_.clear();
    return pending_.get();
  }
  ++misses_;
  return data::collate_graphs(dataset_, rows, options_);
}

void GraphBatchPrefetch::prefetch(std::vector<int64_t> rows) {
  if (pending_.valid()) pending_.wait();  // dropped: std::future's destructor would wait as well
  pending_rows_ = std::move(rows);
  pending_ = std::async(std::launch::async,
                        [this, rows = pending_rows_] { return data::collate_graphs(dataset_, rows, options_); });
}

}  // namespace urpe
