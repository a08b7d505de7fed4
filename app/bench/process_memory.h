// What the benchmarks report about the machine and the process besides wall time: the process's
// resident set (now and its high-water mark, with a way to start a new high-water window), the
// load averages (the machine is shared, so every measurement says how busy it was), the CPU
// time used and the CPU model. Linux /proc; elsewhere the readers return "unknown" / −1.
#pragma once
#include <string>

#include "tensor/device.h"

namespace urpe {

double resident_bytes();       // VmRSS, −1 when unknown
double peak_resident_bytes();  // VmHWM, −1 when unknown
// Starts a new VmHWM window (writing 5 to /proc/self/clear_refs); false where not allowed, in
// which case peak_resident_bytes() is the peak since the process started.
bool reset_peak_resident();
std::string load_averages();   // "1.23 0.98 0.75" (1, 5, 15 minutes) or "unknown"
// CPU seconds (user + system, all threads) this process has used: beside wall time it shows how
// much of a slow run was waiting for a core on a shared machine.
double process_cpu_seconds();
std::string cpu_model_name();  // /proc/cpuinfo's model name or "unknown CPU"
// What a results file names as the machine: the GPU's name for a CUDA device, else the CPU model
// and the OpenMP thread count ("AMD EPYC, 2 threads").
std::string machine_description(const Device& device);

}  // namespace urpe
