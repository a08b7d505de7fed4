// plots/roofline.png: every op of a profile as a point — arithmetic intensity (FLOPs per byte,
// x) against the FLOP/s it achieved (y), both log scales — under the machine's measured roofline
// min(compute ceiling, bandwidth × intensity). A point's distance below the line is how far the
// op is from what the machine can do for its FLOPs and bytes; left of the ridge (where the two
// ceilings meet) an op is memory-bound, right of it compute-bound. Disc area follows the op's
// share of the step; the largest ops are labelled. Ops without FLOPs (copies, views) and
// communication have no point.
#pragma once
#include <string>

#include "base/plot/canvas.h"
#include "base/profile/key_averages.h"

namespace urpe::profile {

// Needs the summary's peaks (an error naming `path` otherwise).
void roofline_plot(const std::string& path, const ProfileSummary& summary);
plot::Canvas render_roofline(const ProfileSummary& summary);

}  // namespace urpe::profile
