// The models the theory commands look inside (`urpe theory probe|rowsums`): a trained run's
// checkpoint, every run of a repro directory, or a freshly initialised model from a preset. One
// place decides what a run directory must hold and which families a command reads, so every
// command gives the same one-line errors: a missing directory, a missing checkpoint, a family the
// command cannot read (e.g. a Graphormer run given to the probe). Models are built on the CPU,
// whatever device they trained on: the analyses are small.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "models/encoder.h"
#include "models/token_model.h"
#include "base/io/config.h"

namespace urpe {

struct AnalysisModel {
  std::string name;    // the run directory's name, or "pi-tiny (untrained, pe = rpe)"
  std::string source;  // the run directory, or "preset pi-tiny"
  std::string family;  // the run's model family (a family with an analysed_model: encoder, txl)
  std::string pe;      // none|ape|rpe|urpe; Transformer-XL: rpe (the baseline) or urpe
  int64_t step = 0;    // the checkpoint's training steps (0: untrained)
  std::unique_ptr<Config> config;
  // The family's token model (models/token_model.h; train/families/model_family.h, AnalysedModel).
  std::unique_ptr<TokenModel> model;
  int64_t positions = 0;  // one input window: encoder seq_len, Transformer-XL tgt_len

  int64_t seq_len() const { return positions; }
  int64_t vocab() const { return model->vocab(); }  // input token ids are in [0, vocab)
  // The encoder, for the analyses of the encoder's own attention (the logit split, the row sums);
  // nullptr for another family.
  const TransformerEncoder* encoder() const { return dynamic_cast<const TransformerEncoder*>(model.get()); }
};

// Reads `dir`/model.safetensors into the model its config describes. `command` names the caller
// in errors ("urpe theory probe"); `families` lists the model families it accepts.
AnalysisModel load_run_model(const std::string& dir, const std::string& command,
                             const std::vector<std::string>& families);

// A freshly initialised model (seed from the config) of a preset with --set overrides.
AnalysisModel fresh_model(const std::string& preset, const std::vector<std::string>& overrides,
                          const std::string& command, const std::vector<std::string>& families);

// The run directories under a repro directory's runs/ (sorted by name), each holding a
// model.safetensors. Errors name the directory when there are none.
std::vector<std::string> repro_run_dirs(const std::string& dir, const std::string& command);

}  // namespace urpe
