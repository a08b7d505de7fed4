// Writing and reading `urpe analyze`'s tensor files (see the header for their layout).
#include "app/analysis/analyze_files.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "tensor/error.h"
#include "base/io/safetensors.h"

namespace urpe {

namespace {

Tensor f32(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_vector(std::vector<float>(values.begin(), values.end()), shape);
}

template <typename T>
std::string joined(const std::vector<T>& items, const char* separator) {
  std::ostringstream out;
  for (size_t k = 0; k < items.size(); ++k) out << (k ? separator : "") << items[k];
  return out.str();
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

std::vector<int64_t> analysed_layers(const RunAnalysis& run) {
  std::vector<int64_t> layers;
  for (const LayerAnalysis& a : run.layers) layers.push_back(a.layer);
  return layers;
}

}  // namespace

void save_decomposition(const std::string& path, const RunAnalysis& run) {
  URPE_CHECK(run.parts.size() == run.layers.size(),
             "urpe analyze: no decomposition to write for '" << run.run << "' (read back from analysis.json)");
  std::vector<NamedTensor> tensors;
  for (size_t k = 0; k < run.layers.size(); ++k) {
    const LayerAnalysis& a = run.layers[k];
    const Decomposition& p = run.parts[k];
    const std::string name = "layer" + std::to_string(a.layer);
    tensors.emplace_back(name + ".mu", f32(p.mu, {a.dim}));
    tensors.emplace_back(name + ".pos", f32(p.pos, {a.positions, a.dim}));
    tensors.emplace_back(name + ".ctx", f32(p.ctx, {a.contexts, a.dim}));
  }
  save_safetensors(path, tensors,
                   {{"format", "urpe analyze decomposition"}, {"run", run.run}, {"source", run.source},
                    {"layers", joined(analysed_layers(run), ",")}, {"data", run.data}});
}

void save_hidden_states(const std::string& path, const RunAnalysis& run) {
  URPE_CHECK(run.hidden.size() == run.layers.size(), "urpe analyze: the states of '" << run.run << "' were not kept");
  std::vector<NamedTensor> tensors;
  for (size_t k = 0; k < run.layers.size(); ++k) {
    const HiddenCube& c = run.hidden[k];
    tensors.emplace_back("layer" + std::to_string(run.layers[k].layer), f32(c.h, {c.contexts, c.positions, c.dim}));
  }
  std::map<std::string, std::string> meta = {{"format", "urpe hidden states"},
                                             {"run", run.run},
                                             {"source", run.source},
                                             {"layers", joined(analysed_layers(run), ",")},
                                             {"baseline_seeds", joined(run.baseline_seeds, ",")},
                                             {"data", run.data}};
  if (!run.context_topics.empty()) {
    tensors.emplace_back("topics", Tensor::from_vector(std::vector<int32_t>(run.context_topics.begin(),
                                                                            run.context_topics.end()),
                                                       {static_cast<int64_t>(run.context_topics.size())}));
    meta["topic_names"] = joined(run.topic_names, "|");
  }
  save_safetensors(path, tensors, meta);
}

HiddenStateFile load_hidden_states(const std::string& path) {
  const TensorFile file = load_safetensors(path);
  HiddenStateFile h;
  try {
    for (const std::string& l : split(file.meta("layers"), ',')) h.layers.push_back(std::stoll(l));
    for (const std::string& s : split(file.meta("baseline_seeds"), ',')) h.baseline_seeds.push_back(std::stoull(s));
  } catch (const std::logic_error&) {
    URPE_FAIL(path << ": metadata 'layers' and 'baseline_seeds' must be comma-separated integers");
  }
  URPE_CHECK(!h.layers.empty() && h.layers.size() == h.baseline_seeds.size(),
             path << ": " << h.layers.size() << " layers and " << h.baseline_seeds.size() << " baseline seeds");
  for (int64_t l : h.layers) {
    const Tensor& t = file.at("layer" + std::to_string(l));
    URPE_CHECK(t.shape().size() == 3 && t.dtype() == DType::f32, path << ": layer" << l << " must be float32 (C, T, d)");
    HiddenCube c;
    c.contexts = t.size(0);
    c.positions = t.size(1);
    c.dim = t.size(2);
    const std::vector<float> v = t.to_vector_f32();
    c.h.assign(v.begin(), v.end());
    h.cubes.push_back(std::move(c));
  }
  if (file.contains("topics")) {
    const Tensor& t = file.at("topics");
    URPE_CHECK(t.dtype() == DType::i32 && t.shape().size() == 1 && t.size(0) == h.cubes.front().contexts,
               path << ": topics must be int32 (C,)");
    for (int32_t x : t.to_vector_i32()) h.topics.push_back(x);
  }
  return h;
}

}  // namespace urpe
