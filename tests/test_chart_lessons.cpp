// The project's own charts, each built from real (tiny) inputs the way its command builds it, and
// checked for what it is meant to teach (tests/chart_checks.h): every series visible, the
// reference line drawn (chance on the accuracy and curves charts, Theorem 2's 1e-5 on the probe,
// RPE's row sum 1), legends with the encodings' names rather than run names, titles with the
// number of seeds, every label inside the image; and the one-page summary of a demo grid. Bar
// charts: bars told apart without colour (hatch or name), seeds drawn, Theorem 2's encodings
// marked, no value label on data; heatmaps: no text on the cells, a colour bar that cuts off
// cells says so; the analyze pictures (attention terms, A·1 per block, the spiral's direction),
// the roofline (no label on another, cache-resident ops ringed) and Graphormer's C (distances
// never seen in training shaded). Each new check is also shown failing on a bad chart.
#include <cmath>
#include <string>

#include "chart_checks.h"
#include "cli_util.h"
#include "doctest/doctest.h"
#include "scratch_dir.h"
#include "ops/elementwise.h"
#include "app/analysis/analysis_model.h"
#include "app/analysis/attention_split.h"
#include "app/analysis/construction.h"
#include "app/analysis/probe.h"
#include "app/analysis/rowsums.h"
#include "app/analysis/run_summary.h"
#include "train/encoding_names.h"
#include "train/families/graphormer/graphormer_plots.h"
#include "base/io/run_dir.h"
#include "train/families/encoder/encoder_plots.h"
#include "train/families/txl/txl_plots.h"
#include "base/profile/roofline_plot.h"

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

// ---- bar charts, heatmaps, the analyze and profile pictures ----

namespace {

// Renders a bar chart and checks what holds for every one: bars told apart without colour (a
// hatch per series or a name under each bar), no value label over data, no label over another,
// every text inside the image.
plot::Canvas checked_bar_chart(const plot::BarChartSpec& spec, plot::ChartLayout& layout) {
  const plot::Canvas c = plot::render_bar_chart(spec, &layout);
  INFO(spec.title);
  for (const std::string& s : bars_alike_without_colour(layout)) CHECK_MESSAGE(false, "alike without colour: " << s);
  for (const std::string& s : value_labels_over_data(layout)) CHECK_MESSAGE(false, s);
  for (const std::string& s : texts_overlapping(c)) CHECK_MESSAGE(false, "overlapping: " << s);
  for (const std::string& t : texts_outside(c)) CHECK_MESSAGE(false, "outside the image: " << t);
  return c;
}

// The same for a heatmap grid: no text on the cells or a colour bar, none over another, a colour
// bar that cuts off cells says so.
plot::Canvas checked_heatmaps(const std::vector<plot::HeatmapSpec>& panels, int columns, bool shared,
                              plot::HeatmapLayout& layout) {
  const plot::Canvas c = plot::render_heatmap_grid(panels, columns, "", shared, &layout);
  for (const std::string& s : texts_over_heatmap(c, layout)) CHECK_MESSAGE(false, s);
  for (const std::string& s : texts_overlapping(c)) CHECK_MESSAGE(false, "overlapping: " << s);
  for (const std::string& s : unmarked_saturation(layout)) CHECK_MESSAGE(false, s);
  for (const std::string& t : texts_outside(c)) CHECK_MESSAGE(false, "outside the image: " << t);
  return c;
}

// A block of a 2-head, 8-position URPE model: terms with a smooth pos·pos ramp, a rough pos·ctx,
// ctx·pos and ctx·ctx near 0, one extreme key (which the colour scale cuts off), and A = P ⊙ C
// with row sums that fall (head 0) and rise (head 1) with the query.
AttentionSplit synthetic_split(int64_t block) {
  AttentionSplit b;
  b.block = block;
  b.heads = 2;
  b.positions = 8;
  const int64_t T = b.positions;
  for (int64_t h = 0; h < b.heads; ++h) {
    std::array<std::vector<double>, kLogitTerms> terms;
    std::vector<double> logits(T * T, 0.0), a(T * T);
    for (int k = 0; k < kLogitTerms; ++k) terms[k].assign(T * T, 0.0);
    for (int64_t s = 0; s < T; ++s)
      for (int64_t t = 0; t < T; ++t) {
        terms[0][s * T + t] = 0.01 * t;
        terms[1][s * T + t] = 0.05 * std::sin(3.0 * t + h) + (s == 0 && t == T - 1 ? 0.5 : 0.0);
        terms[2][s * T + t] = 1e-6 * s;
        for (int k = 0; k < kLogitTerms; ++k) logits[s * T + t] += terms[k][s * T + t];
        a[s * T + t] = (h == 0 ? 1.3 - 0.08 * s : 0.7 + 0.08 * s) / static_cast<double>(T) + 0.002 * block * ((s * t) % 3);
      }
    b.example.push_back(terms);
    b.example_logits.push_back(logits);
    b.centred_shares.push_back({0.05, 0.95, 0.0, 0.0});
    b.attention.push_back(a);
  }
  return b;
}

}  // namespace

TEST_CASE("accuracy bars: named under each bar, seeds as dots, Theorem 2's bound encodings marked and explained") {
  plot::BarChartSpec spec;
  spec.title = "Validation accuracy, mean of 2 seeds";
  spec.y_label = "accuracy (%)";
  spec.groups = {"PI, V=100"};
  spec.y_min = 0;
  spec.y_max = 112;
  spec.decimals = 1;
  spec.references = {{100.0 / 32, "chance 1/32 = 3.1%"}};
  const char* pes[] = {"none", "ape", "rpe", "rope", "urpe"};
  const double values[][2] = {{3.0, 3.1}, {100, 100}, {3.2, 3.3}, {99.7, 91.3}, {100, 100}};
  for (int k = 0; k < 5; ++k) {
    plot::BarSeries s;
    s.name = encoding_display_name(pes[k]);
    s.values = {(values[k][0] + values[k][1]) / 2};
    s.points = {{values[k][0], values[k][1]}};
    s.marked = theorem2_binds_encoding(pes[k]);
    spec.series.push_back(s);
  }
  spec.mark_label = "bound by Theorem 2";
  spec.notes = {"Theorem 2 binds noPE, RPE and RoPE: rows sum to 1"};
  plot::ChartLayout layout;
  const plot::Canvas c = checked_bar_chart(spec, layout);
  CHECK(layout.bars_named);
  for (const char* name : {"noPE", "APE", "RPE", "RoPE", "URPE", "bound by Theorem 2", "Theorem 2 binds"})
    CHECK_MESSAGE(any_text_contains(c, name), name);
  CHECK_FALSE(theorem2_binds_encoding("shaw"));
  CHECK_FALSE(theorem2_binds_encoding("alibi+urpe"));
  CHECK(theorem2_binds_encoding("alibi"));
}

TEST_CASE("grouped bars without names are hatched, one pattern per series; the checks catch bars alike and a label on a whisker") {
  plot::BarChartSpec spec;
  spec.title = "accuracy per task";
  spec.groups = {"PI", "ETP"};
  for (int s = 0; s < 3; ++s) spec.series.push_back({"model " + std::to_string(s), {40.0 + 20 * s, 30.0 + 10 * s}});
  spec.series[1].points = {{55, 65}, {35, 45}};
  plot::ChartLayout layout;
  checked_bar_chart(spec, layout);
  CHECK_FALSE(layout.bars_named);
  CHECK(layout.bar_hatches == std::vector<int>{0, 1, 2});

  // Eleven series: the patterns repeat, and series 0 and 10 differ by colour alone.
  plot::BarChartSpec many = spec;
  many.series.clear();
  for (int s = 0; s < 11; ++s) many.series.push_back({"m" + std::to_string(s), {10.0 + s, 20.0}});
  plot::render_bar_chart(many, &layout);
  CHECK(bars_alike_without_colour(layout) == std::vector<std::string>{"0 and 10"});
  // A bar that reaches a fixed y_max puts its label inside its end, where its whisker runs.
  plot::BarChartSpec clipped;
  clipped.groups = {"PI"};
  clipped.series = {{"URPE", {100}}, {"RPE", {50}}};
  clipped.series[0].points = {{95, 105}};
  clipped.y_min = 0;
  clipped.y_max = 100;
  clipped.name_bars = 0;
  plot::render_bar_chart(clipped, &layout);
  CHECK(value_labels_over_data(layout).size() == 1);
}

TEST_CASE("attention terms: shares in the titles, a caption for blank panels, the colour bar marks the cells it cuts off") {
  const AttentionSplit b = synthetic_split(2);
  plot::HeatmapLayout layout;
  const std::vector<plot::HeatmapSpec> panels = attention_term_panels(b);
  checked_heatmaps(panels, kLogitTerms + 1, true, layout);
  REQUIRE(layout.cells_beyond.size() == 1);
  CHECK(layout.cells_beyond[0] > 0);  // the extreme key: beyond the 99th percentile
  CHECK(layout.beyond_marked[0]);
  CHECK(panels[2].title == "head 0: ctx.pos 0.0%");
  const plot::Canvas page = render_attention_terms("run", b);
  CHECK(any_text_contains(page, "blank"));
  CHECK(any_text_contains(page, "beyond"));
  CHECK(texts_outside(page).empty());
  CHECK(texts_overlapping(page).empty());

  // The checks catch a bad grid: panel titles wider than their panels run into each other, and a
  // colour bar's layout that hides its cut-off cells is reported.
  std::vector<plot::HeatmapSpec> bad = panels;
  for (plot::HeatmapSpec& p : bad) p.title = "a title far wider than its small panel of 8 x 8 cells";
  const plot::Canvas c = plot::render_heatmap_grid(bad, kLogitTerms + 1, "", true, &layout);
  CHECK_FALSE(texts_overlapping(c).empty());
  plot::HeatmapLayout hidden = layout;
  hidden.beyond_marked[0] = false;
  CHECK(unmarked_saturation(hidden).size() == 1);
}

TEST_CASE("row sums A.1: a chart per block, one y scale, four heads told apart by shape, RPE's 1 clear of the lines") {
  const std::vector<plot::LineChartSpec> charts = rowsum_charts({synthetic_split(1), synthetic_split(2)});
  REQUIRE(charts.size() == 2);
  CHECK(charts[0].y_min == charts[1].y_min);
  CHECK(charts[0].y_max == charts[1].y_max);
  for (const plot::LineChartSpec& chart : charts) {
    plot::ChartLayout layout;
    const plot::Canvas c = checked_line_chart(chart, layout);
    CHECK(least_visible_series(c, layout, 2) > 20);
    CHECK(reference_coverage(c, layout, 0) > 0.3);
  }
}

TEST_CASE("a path chart (the spiral) marks where each path starts and ends and which way it runs") {
  plot::LineChartSpec spec;
  spec.title = "pos_t in directions 1, 2";
  spec.markers = 1;
  spec.path_marks = true;
  for (int l = 0; l < 3; ++l) {
    plot::Series s{"layer " + std::to_string(l), {}, {}};
    for (int t = 0; t < 32; ++t) {
      const double angle = 2 * 3.14159265 * t / 32 * (l + 1) / 3;
      s.x.push_back((0.1 + 0.1 * l) * std::cos(angle));
      s.y.push_back((0.1 + 0.1 * l) * std::sin(angle));
    }
    spec.series.push_back(s);
  }
  spec.notes = {"big ring at t = 1, big square at t = 32, arrowheads point to increasing t"};
  plot::ChartLayout layout;
  checked_line_chart(spec, layout);
  CHECK(layout.path_arrows >= 6);
  spec.path_marks = false;
  plot::render_line_chart(spec, &layout);
  CHECK(layout.path_arrows == 0);
}

TEST_CASE("roofline: an op above the memory line is ringed and explained, no label on another or on a disc") {
  profile::ProfileSummary summary;
  summary.device = "cpu";
  summary.step_ms = 100;
  profile::MachinePeaks peaks;
  peaks.gemm_gflops = 200;
  peaks.bandwidth_gbs = 20;
  summary.peaks = peaks;
  auto op = [](const char* name, profile::Phase phase, double ms, double flops, double bytes) {
    profile::OpAverage o;
    o.name = name;
    o.phase = phase;
    o.self_ms = o.total_ms = ms;
    o.cost = {flops, bytes};
    return o;
  };
  using profile::Phase;
  // GEMMs near each other at the top, memory-bound ops along the slant, one op at 2.5x the memory line.
  summary.ops = {op("linear backward", Phase::backward, 40, 40 * 40e6, 40 * 40e6 / 30),
                 op("linear", Phase::forward, 20, 20 * 45e6, 20 * 45e6 / 20),
                 op("matmul backward", Phase::backward, 9, 9 * 38e6, 9 * 38e6 / 10),
                 op("matmul", Phase::forward, 4, 4 * 47e6, 4 * 47e6 / 10),
                 op("urpe_attention backward", Phase::backward, 2, 2 * 6e6, 2 * 6e6 / 0.75),
                 op("urpe_attention", Phase::forward, 2, 2 * 5e6, 2 * 5e6 / 0.7),
                 op("gelu", Phase::forward, 1.5, 1.5 * 4e6, 1.5 * 4e6 / 0.6),
                 op("cache-resident copy", Phase::backward, 0.3, 0.3 * 6e6, 0.3 * 6e6 / 0.125),
                 op("adam_update", Phase::optimizer, 0.5, 0.5 * 3.7e6, 0.5 * 3.7e6 / 0.5)};
  const plot::Canvas c = profile::render_roofline(summary);
  CHECK(texts_overlapping(c).empty());
  CHECK(texts_outside(c).empty());
  CHECK(any_text_contains(c, "ringed: above the"));
  CHECK(any_text_contains(c, "cache-resident copy"));  // labelled, or named under the note
  // No label over a disc: inside each text's box, no pixel of a phase's colour or fill.
  for (const plot::Canvas::TextRecord& t : c.texts())
    for (size_t phase = 0; phase < 3; ++phase) {
      const plot::Color line = plot::series_color(phase), fill = plot::mix(line, plot::colors::white, 0.35);
      CHECK_MESSAGE(pixels_of(c, line, t.box) + pixels_of(c, fill, t.box) == 0, t.text);
    }
  // Without the cache-resident op, no ring and no note.
  summary.ops.erase(summary.ops.begin() + 7);
  CHECK_FALSE(any_text_contains(profile::render_roofline(summary), "ringed"));
}

TEST_CASE("a same-shape add's gradient is a copy: bytes, no FLOPs (the roofline leaves it out)") {
  using kernels::BinaryOp;
  const profile::Cost same = binary_backward_cost(BinaryOp::add, 1000, 1000, false, true);
  CHECK(same.flops == 0);
  CHECK(same.bytes == 4.0 * 2000);  // read g, write the copy
  const profile::Cost bias = binary_backward_cost(BinaryOp::add, 1000, 10, true, true);
  CHECK(bias.flops == 1000);  // ∂b sums g over 100 repeats of 10 elements
  CHECK(binary_backward_cost(BinaryOp::sub, 1000, 1000, false, true).flops == 1000);  // −g
  CHECK(binary_backward_cost(BinaryOp::mul, 1000, 1000, true, true).flops == 4000);
}

TEST_CASE("molecules C: the distances no training molecule has are shaded and named") {
  std::vector<plot::Series> series;
  for (int h = 0; h < 2; ++h) {
    plot::Series s{"head " + std::to_string(h), {}, {}};
    for (int d = 0; d < 12; ++d) s.x.push_back(d), s.y.push_back(d < 8 ? 1.0 + 0.05 * std::sin(d + h) : 0.993);
    series.push_back(s);
  }
  const std::vector<int64_t> counts = {50, 120, 100, 80, 40, 0, 10, 5, 0, 0, 0, 3};
  const plot::LineChartSpec chart = urpe_c_chart("URPE C per head", series, counts);
  REQUIRE(chart.x_bands.size() == 2);
  CHECK(chart.x_bands[0].lo == 4.5);
  CHECK(chart.x_bands[1].hi == 10.5);
  plot::ChartLayout layout;
  const plot::Canvas c = checked_line_chart(chart, layout);
  CHECK(any_text_contains(c, "distance 5, 8 to 10,"));
  CHECK(pixels_of(c, plot::colors::band, layout.plot) > 1000);
  CHECK(any_text_contains(plot::render_line_chart(urpe_c_chart("C", series, {})), "not marked"));
}
