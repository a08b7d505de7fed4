// What `urpe profile` and `urpe train --trace` do with the per-op recording of their steps: look up
// the machine's peaks (app/bench/peaks.h: the cache, or measured once), then write profile.md,
// trace.json and plots/roofline.png (base/profile/profile_report.h) into one directory and print
// where, with the step's time against its ops.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "tensor/device.h"
#include "app/cli/command_line.h"
#include "base/profile/op_recorder.h"

namespace urpe::cli {

struct TraceOutput {
  std::string dir;      // where the profile goes
  std::string title;    // e.g. "pi-tiny, steps 2..6"
  std::string command;  // the command line, for the report
  bool written = false;  // set once the profile is written
};

// The sink to put in TrainOptions::on_trace: on rank 0 of the run it writes the profile of the
// recording into output->dir (the peaks are looked up now, before training, so a measurement
// never overlaps the recorded steps). `output` must outlive the run.
std::function<void(profile::Recording&&)> trace_sink(const std::shared_ptr<TraceOutput>& output,
                                                     const Device& device, bool quiet);

// "urpe CMD WORDS --option value ..." rebuilt from the parsed arguments, for the report.
std::string command_text(const Args& args);

}  // namespace urpe::cli
