// A recording as a Chrome trace-event file (trace.json), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open. One process; one track (thread) per phase — forward, backward,
// optimizer, communication — holding each recorded step and, nested in it, the model scopes
// (encoder.layer0 → encoder.layer0.attention, named as the NVTX ranges Nsight shows) and the ops,
// as begin/end ("B"/"E") pairs. An op's arguments are its scope, device, FLOPs and bytes. On a GPU run
// every op also appears on a "cuda stream" track as a complete ("X") event at its stream time.
// Timestamps are microseconds on the host's steady clock from the recording's start.
#pragma once
#include <string>

#include "base/profile/op_recorder.h"

namespace urpe::profile {

std::string chrome_trace_json(const Recording& recording);
void write_chrome_trace(const std::string& path, const Recording& recording);  // atomically

}  // namespace urpe::profile
