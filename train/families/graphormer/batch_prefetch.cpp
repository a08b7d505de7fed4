// The next training batches collated on background threads (batch_prefetch.h).
#include "train/families/graphormer/batch_prefetch.h"

#include <utility>

namespace urpe {

GraphBatchPrefetch::GraphBatchPrefetch(const data::MoleculeDataset& dataset, const data::CollateOptions& options)
    : dataset_(dataset), options_(options) {}

GraphBatchPrefetch::~GraphBatchPrefetch() {
  for (Pending& p : pending_) p.batch.wait();  // an error there belonged to a batch nobody asked for
}

data::GraphBatch GraphBatchPrefetch::take(const std::vector<int64_t>& rows) {
  ++takes_;
  if (!pending_.empty() && pending_.front().rows == rows) {
    ++hits_;
    const size_t lead = static_cast<size_t>(takes_ - pending_.front().started_after);
    if (hits_by_lead_.size() <= lead) hits_by_lead_.resize(lead + 1, 0);
    ++hits_by_lead_[lead];
    std::future<data::GraphBatch> batch = std::move(pending_.front().batch);
    pending_.pop_front();
    return batch.get();
  }
  ++misses_;
  return data::collate_graphs(dataset_, rows, options_);
}

void GraphBatchPrefetch::prefetch_ahead(const std::vector<std::vector<int64_t>>& upcoming) {
  size_t keep = 0;
  while (keep < pending_.size() && keep < upcoming.size() && pending_[keep].rows == upcoming[keep]) ++keep;
  while (pending_.size() > keep) {  // dropped: std::future's destructor would wait as well
    pending_.back().batch.wait();
    pending_.pop_back();
  }
  for (size_t k = keep; k < upcoming.size(); ++k) {
    Pending p;
    p.rows = upcoming[k];
    p.started_after = takes_;
    p.batch = std::async(std::launch::async,
                         [this, rows = upcoming[k]] { return data::collate_graphs(dataset_, rows, options_); });
    pending_.push_back(std::move(p));
    ++started_;
  }
}

std::vector<BatchPosition> positions_ahead(const BatchPosition& now, int64_t batches_per_epoch, int64_t count) {
  std::vector<BatchPosition> ahead;
  BatchPosition p = now;
  while (static_cast<int64_t>(ahead.size()) < count) {
    if (!p.micro.last()) {
      p.micro.index += 1;
    } else if (p.in_epoch + 1 < batches_per_epoch) {
      p.in_epoch += 1;
      p.micro.index = 0;
    } else {
      break;  // the epoch's end
    }
    ahead.push_back(p);
  }
  return ahead;
}

}  // namespace urpe
