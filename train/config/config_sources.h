// Where every value of a resolved run config comes from, so that a reader can check a preset
// against the paper's Appendix C key by key (`urpe train|repro|profile ... --dry-run`, and the
// table at the end of a repro's results.md; docs/reproduce.md#every-value-and-its-source).
//
// A value has one of these sources, named at the start of its text:
//   paper C.3.1: …      the paper's text (section, table)
//   script FILE: …      an official script or code file, where the paper is silent (or defers to it)
//   urpe: …             the preset's own choice, with the reason
//   default: …          the key's default (no preset line, file or --set gave it), with the reason
//   --set k=v (yours)   the user's --set;  config FILE:LINE (yours): a line of the user's --config file
//   repro …: …          set per run by the command itself (the grid's pe, seed, …)
// A preset's sources are the comments on its lines ("lr = 7e-5  # paper C.1: peak learning rate"),
// so a value and its source are written once, side by side (train/config/paper_presets.cpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "base/io/config.h"

namespace urpe {

struct ValueSource {
  std::string key, value, source;
};

// What a command sets itself through --set-style assignments, key → why (the keys a repro grid
// varies per run, the window `urpe profile` cuts). Any other --set is the user's.
using CommandSets = std::map<std::string, std::string>;

// Every key of `config` (schema order) with its value and source. `preset` names the preset the
// config was resolved from ("" for none).
std::vector<ValueSource> config_sources(const Config& config, const std::string& preset,
                                        const CommandSets& command_sets = {});

// The comment on `key`'s line of the preset's text ("" when the preset does not set the key, or
// sets it without a comment).
std::string preset_line_source(const std::string& preset, const std::string& key);
// Why `key` of the model family `family` has its default value ("" when no reason is recorded:
// tests/test_paper_presets.cpp requires one for every key of every family).
std::string default_source(const std::string& family, const std::string& key);
// The source kinds a preset line's comment may start with: "paper ", "script ", "urpe: ".
bool is_cited_source(const std::string& source);

// The table for a terminal: "  key = value   source" per key, columns aligned.
std::string sources_text(const std::vector<ValueSource>& sources, const std::string& indent = "  ");
// The same as a markdown table (| key | value | source |).
std::string sources_markdown(const std::vector<ValueSource>& sources);
// The entries of `run` whose value or source differs from `first`'s, as "key = value (source)"
// joined by "; " ("" when none): a grid's later runs printed against its first.
std::string sources_difference(const std::vector<ValueSource>& first, const std::vector<ValueSource>& run);

}  // namespace urpe
