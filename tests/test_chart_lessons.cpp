// The project's own charts, each built from real (tiny) inputs the way its command builds it, and
// checked for what it is meant to teach (tests/chart_checks.h): every series visible, the
// reference line drawn (chance on the accuracy and curves charts, Theorem 2's 1e-5 on the probe,
// RPE's row sum 1), legends with the encodings' names rather than run names, titles with the
// number of seeds, every label inside the image; and the one-page summary of a demo grid.
#include <cmath>
#include <string>

#include "chart_checks.h"
#include "cli_util.h"
#include "doctest/doctest.h"
#include "scratch_dir.h"
#include "train/analysis/analysis_model.h"
#include "train/analysis/construction.h"
#include "train/analysis/probe.h"
#include "train/analysis/rowsums.h"
#include "train/analysis/run_summary.h"
#include "train/io/run_dir.h"
#include "train/families/run_plots.h"

using namespace urpe;
using namespace urpe::test;

namespace {

// A demo grid trained for a few steps (three runs of one small layer, seconds in all), shared by
// the cases below.
const std::string& tiny_demo() {
  static const std::string dir = [] {
    const std::string out = join_path(make_scratch_dir("urpe_test_chart_lessons"), "demo");
    const CliResult r = run_urpe("demo --out " + out +
                                 " --set steps=24 --set warmup=6 --set eval_every=8 --set valid_size=32 --set layers=1 --set d_model=32 --set d_ff=64");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output.find("All on one page: " + out + "/plots/summary.png") != std::string::npos);
    return out;
  }();
  return dir;
}

bool any_text_contains(const plot::Canvas& c, const std::string& part) { return has_text(c, part); }

// Renders a line chart and checks what holds for every chart: series told apart without colour
// (marker shape or dash), no reference label over data, every text inside the image.
plot::Canvas checked_line_chart(const plot::LineChartSpec& spec, plot::ChartLayout& layout) {
  std::vector<plot::SeriesStyle> styles;
  const plot::Canvas c = plot::render_line_chart(spec, &layout, &styles);
  INFO(spec.title);
  CHECK(series_alike_without_colour(layout, styles).empty());
  CHECK(labels_over_data(layout).empty());
  for (const std::string& t : texts_outside(c)) CHECK_MESSAGE(false, "outside the image: " << t);
  return c;
}

}  // namespace

TEST_CASE("probe chart: Theorem 2's bound drawn, zeros in a band, RPE and URPE equal at initialisation, both visible") {
  std::vector<ProbeRun> runs;
  for (const char* pe : {"none", "rpe", "urpe"})
    runs.push_back(probe_identical_tokens(
        fresh_model("pi-tiny", {std::string("pe=") + pe, "layers=1"}, "test", {"encoder"}), ProbeOptions{}));
  plot::ChartLayout layout;
  const plot::Canvas c = checked_line_chart(probe_chart(runs), layout);
  CHECK(least_visible_series(c, layout, 3) > 20);
  CHECK(reference_coverage(c, layout, 0) > 0.4);
  CHECK(layout.zero_band_row > 0);
  CHECK(any_text_contains(c, "1e-5: float rounding (theorem: 0)"));
  CHECK(any_text_contains(c, "exactly 0"));
  // C starts as all ones, so the untrained URPE model is the RPE model, digit for digit.
  CHECK(any_text_contains(c, "RPE = URPE at every point"));
  for (const char* name : {"noPE", "RPE", "URPE"}) CHECK(any_text_contains(c, name));
  CHECK_FALSE(any_text_contains(c, "pi-tiny (untrained"));  // no run names in the legend
  CHECK(texts_outside(c).empty());
}

TEST_CASE("construction chart: RPE's row sums of exactly 1 drawn below the frame, not on it") {
  const ConstructionResult r = proposition4_construction(8);
  plot::ChartLayout layout;
  const plot::Canvas c = checked_line_chart(construction_chart(r), layout);
  CHECK(least_visible_series(c, layout, 2) > 100);
  int top = -1;  // the highest row of RPE's colour in the plot
  for (int y = layout.plot.y; y < layout.plot.bottom() && top < 0; ++y)
    for (int x = layout.plot.x; x < layout.plot.right(); ++x)
      if (c.pixel(x, y) == plot::series_color(1)) {
        top = y;
        break;
      }
  CHECK(top >= layout.plot.y + 6);
  CHECK(any_text_contains(c, "(A\xC2\xB7" "1)_i"));
  CHECK(texts_outside(c).empty());
}

TEST_CASE("row-sums chart: five series, four nearly on top of each other, all visible; RPE's 1 drawn") {
  RowSumsResult r;
  r.run = "pi-V100-urpe-s1";
  r.n = 32;
  r.layers = 2;
  RowSumsHead h;
  for (int64_t i = 0; i < r.n; ++i) h.c_prediction.push_back(1.25 - 0.5 * static_cast<double>(i) / 31);
  std::vector<double> measured;
  for (double v : h.c_prediction) measured.push_back(v + 0.004);
  h.identical = {measured, measured};  // layer 2 equals layer 1 on identical tokens
  h.real = {measured, measured};
  h.real[0][3] += 0.01;
  r.heads = {h};
  plot::ChartLayout layout;
  const plot::Canvas c = checked_line_chart(rowsums_chart(r, 0), layout);
  CHECK(least_visible_series(c, layout, 5) > 20);
  CHECK(reference_coverage(c, layout, 0) > 0.3);
  CHECK_FALSE(layout.notes.empty());
  CHECK(any_text_contains(c, "(A\xC2\xB7" "1)_i"));
  CHECK(texts_outside(c).empty());
}

TEST_CASE("grid charts: accuracy and curves with chance 1/n, encodings by name, the seed count in the title") {
  std::vector<ResultRow> rows;
  const std::vector<RunCurve> curves = grid_runs_on_disk(tiny_demo(), &rows);
  REQUIRE(curves.size() == 3);
  CHECK(curves[0].pe == "none");
  CHECK(curves[2].pe == "urpe");
  CHECK(chance_accuracy(curves[0].dir) == doctest::Approx(1.0 / 32));

  plot::ChartLayout layout;
  const plot::BarChartSpec bars = grid_accuracy_chart(rows, curves);
  CHECK(bars.title.find("1 seed") != std::string::npos);
  const plot::Canvas a = plot::render_bar_chart(bars, &layout);
  REQUIRE(layout.reference_rows.size() == 1);
  CHECK(reference_coverage(a, layout, 0) > 0.3);
  CHECK(any_text_contains(a, "chance 1/32 = 3.1%"));
  for (const char* name : {"noPE", "RPE", "URPE"}) CHECK(any_text_contains(a, name));
  for (size_t k = 0; k < 3; ++k) CHECK(pixels_of(a, plot::series_color(k), layout.plot) > 0);
  CHECK(texts_outside(a).empty());

  const plot::Canvas l = checked_line_chart(grid_curves_chart("pi", curves), layout);
  CHECK(least_visible_series(l, layout, 3) > 20);  // after 40 steps all three are near chance
  CHECK(reference_coverage(l, layout, 0) > 0.3);
  CHECK(any_text_contains(l, "1 seed"));
  CHECK_FALSE(any_text_contains(l, "V=100"));  // one V: it is in the title, not in every name
  CHECK(texts_outside(l).empty());

  // The loss beside it, chance ln 32 drawn.
  const plot::Canvas loss = checked_line_chart(grid_loss_chart("pi", curves), layout);
  REQUIRE(layout.reference_rows.size() == 1);
  CHECK(reference_coverage(loss, layout, 0) > 0.3);
  CHECK(any_text_contains(loss, "ln 32"));
}

TEST_CASE("a series lying on a reference line is named in a note (the line hides under it)") {
  plot::LineChartSpec spec;
  spec.title = "accuracy";
  spec.series = {{"noPE", {100, 200, 300, 400}, {3.1, 3.2, 3.1, 3.0}}, {"URPE", {100, 200, 300, 400}, {3.1, 40, 90, 100}}};
  spec.references = {{3.125, "chance 1/32 = 3.1%"}};
  spec.x_min = 0;
  plot::ChartLayout layout;
  const plot::Canvas c = checked_line_chart(spec, layout);
  REQUIRE(!layout.notes.empty());
  CHECK(layout.notes.back() == "noPE on the dashed line (chance 1/32 = 3.1%)");
  CHECK(any_text_contains(c, "0"));  // the x axis starts at step 0
}

TEST_CASE("the checks catch what they promise: series alike without colour, a label over data") {
  plot::LineChartSpec spec;
  spec.title = "many points";
  for (int s = 0; s < 2; ++s) {
    plot::Series series{"series " + std::to_string(s), {}, {}};
    for (int i = 0; i < 100; ++i) series.x.push_back(i), series.y.push_back(s * 10 + std::sin(i / 10.0));
    spec.series.push_back(series);
  }
  plot::ChartLayout layout;
  std::vector<plot::SeriesStyle> styles;
  plot::render_line_chart(spec, &layout, &styles);
  CHECK(layout.markers_drawn);  // spaced-out markers on 100 points
  CHECK(series_alike_without_colour(layout, styles).empty());
  spec.markers = 0;  // no markers at all: two solid lines, colour alone tells them apart
  plot::render_line_chart(spec, &layout, &styles);
  CHECK(series_alike_without_colour(layout, styles).size() == 1);
  // A reference label that has no free place (lines fill the band around it, the label longer
  // than the legend column) lands on data, and the layout says so.
  plot::LineChartSpec crowded;
  for (int s = 0; s < 40; ++s) {
    plot::Series series{"s" + std::to_string(s), {}, {}};
    for (int i = 0; i < 60; ++i) series.x.push_back(i), series.y.push_back(1.0 + 0.0015 * (s - 20) + 0.0005 * std::sin(i + s));
    crowded.series.push_back(series);
  }
  crowded.references = {{1.0, "a label wider than the legend"}};
  crowded.height = 1400;
  plot::render_line_chart(crowded, &layout, &styles);
  CHECK(labels_over_data(layout).size() == 1);
}

TEST_CASE("C's window chart: c by offset and v by position, every head told apart without colour") {
  RowSumsResult r;
  r.run = "x";
  r.n = 32;
  r.layers = 1;
  for (int h = 0; h < 4; ++h) {
    RowSumsHead head;
    head.head = h;
    for (int k = 0; k < 63; ++k) head.c_by_offset.push_back(1.0 + (h % 2 ? -1 : 1) * 0.1 * std::tanh((k - 31) / 8.0));
    for (int i = 0; i < 32; ++i) {
      double total = 0;
      for (int j = 0; j < 32; ++j) total += head.c_by_offset[j - i + 31];
      head.c_prediction.push_back(total / 32);
    }
    r.heads.push_back(head);
  }
  const auto [c, v] = c_window_charts(r);
  plot::ChartLayout layout;
  checked_line_chart(c, layout);
  checked_line_chart(v, layout);
}

TEST_CASE("summary.png: accuracy, curves, C and the probe on one page") {
  const plot::Canvas page = render_grid_summary(tiny_demo());
  CHECK(page.width() > 1500);
  CHECK(page.height() > 800);
  for (const char* part : {"Summary of", "Validation accuracy, 1 seed", "during training", "Learned URPE matrix C",
                           "Theorem 2 probe", "chance 1/32"})
    CHECK_MESSAGE(any_text_contains(page, part), part);
  CHECK(texts_outside(page).empty());
  CHECK(path_exists(join_path(tiny_demo(), "plots/summary.png")));
  // `urpe plot --run DIR` redraws a grid directory's plots and its summary.
  const CliResult r = run_urpe("plot --run " + tiny_demo());
  CHECK(r.code == 0);
  CHECK(r.output.find("plots/summary.png") != std::string::npos);
  CHECK(r.output.find("plots/curves_pi.png") != std::string::npos);
}
