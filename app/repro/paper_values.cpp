// The paper-beside-ours section of the repro results (see paper_values.h).
#include "app/repro/paper_values.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace urpe {

const char* const kPaperSource =
    "Paper: Luo et al., \"Your Transformer May Not be as Powerful as You Expect\" (NeurIPS 2022); values as "
    "printed in its tables and Appendix C (docs/reproduce.md lists them all).";

namespace {

std::string number(const std::optional<double>& v, int decimals, double scale) {
  if (!v) return "–";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, *v * scale);
  return text;
}

std::string change(const std::optional<double>& base, const std::optional<double>& urpe) {
  if (!base || !urpe || *base == 0) return "–";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100.0 * (*urpe - *base) / *base);
  return text;
}

}  // namespace

double milliseconds_from_log2(double log2_ms) { return std::exp2(log2_ms); }

const PaperValues::DepthRow* paper_table4_row(long layers) {
  for (const PaperValues::DepthRow& row : PaperValues::table4)
    if (row.layers == layers) return &row;
  return nullptr;
}

const PaperValues::Table5Row* paper_table5_row(long seq_len) {
  for (const PaperValues::Table5Row& row : PaperValues::table5)
    if (row.seq_len == seq_len) return &row;
  return nullptr;
}

std::string paper_comparison_markdown(const std::vector<PaperComparison>& rows, const std::string& baseline_name,
                                      const std::string& measured_on) {
  std::ostringstream md;
  md << "\n## The paper beside ours\n\n"
     << kPaperSource << "\nOurs: " << measured_on << "\n"
     << "Change = (URPE − " << baseline_name << ") / " << baseline_name << ", computed from the values shown.\n\n"
     << "| quantity | paper: " << baseline_name << " → URPE | paper change | ours: " << baseline_name
     << " → URPE | our change |\n|---|---|---|---|---|\n";
  for (const PaperComparison& r : rows) {
    md << "| " << r.quantity << " | ";
    if (r.paper_base && r.paper_urpe)
      md << number(r.paper_base, r.paper_decimals < 0 ? r.decimals : r.paper_decimals, r.scale) << " → "
         << number(r.paper_urpe, r.paper_decimals < 0 ? r.decimals : r.paper_decimals, r.scale)
         << (r.paper_note.empty() ? "" : " (" + r.paper_note + ")");
    else
      md << (r.paper_note.empty() ? "not available" : r.paper_note);
    md << " | " << (r.relative_change ? change(r.paper_base, r.paper_urpe) : "–") << " | ";
    if (r.ours_base && r.ours_urpe)
      md << number(r.ours_base, r.decimals, r.scale) << " → " << number(r.ours_urpe, r.decimals, r.scale);
    else
      md << "not measured";
    md << " | " << (r.relative_change ? change(r.ours_base, r.ours_urpe) : "–") << " |\n";
  }
  return md.str();
}

}  // namespace urpe
