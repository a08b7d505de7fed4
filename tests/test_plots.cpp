// PNG charts: axis ticks and labels, then each chart written to a temp directory (PNG signature,
// IHDR size) and rendered in memory to check that data, legend and colour scales were drawn;
// bad input and unwritable paths give errors naming the file. Then what the pictures teach:
// overlapping series all visible (and the check catching a hidden one), reference lines, the
// "0" band of a log axis, headroom, colour bar ticks, labels inside the image, the raised "·".
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "doctest/doctest.h"
#include "tensor/error.h"
#include "chart_checks.h"
#include "base/plot/charts.h"
#include "test_util.h"

using namespace urpe;
using namespace urpe::plot;

namespace {

std::string temp_path(const std::string& name) {
  static test::TempDir dir("plots");
  REQUIRE(!dir.path.empty());
  return dir.path + "/" + name;
}

struct PngInfo {
  bool signature = false;
  uint32_t width = 0, height = 0;
};

// Reads the signature and the IHDR chunk (always the first chunk) of a PNG file.
PngInfo png_info(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  PngInfo info;
  if (bytes.size() < 24) return info;
  info.signature = bytes.compare(0, 8, "\x89PNG\r\n\x1a\n", 8) == 0 && bytes.compare(12, 4, "IHDR") == 0;
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<unsigned char>(bytes[at + k]);
    return v;
  };
  info.width = be32(16);
  info.height = be32(20);
  return info;
}

size_t count_color(const Canvas& c, Color color, int x0 = 0, int y0 = 0, int x1 = -1, int y1 = -1) {
  if (x1 < 0) x1 = c.width();
  if (y1 < 0) y1 = c.height();
  size_t n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) n += c.pixel(x, y) == color;
  return n;
}

size_t count_not_white(const Canvas& c, int x0, int y0, int x1, int y1) {
  return static_cast<size_t>((x1 - x0) * (y1 - y0)) - count_color(c, colors::white, x0, y0, x1, y1);
}

LineChartSpec three_series() {
  LineChartSpec s;
  s.title = "validation loss";
  s.x_label = "step";
  s.y_label = "loss";
  for (int k = 0; k < 3; ++k) {
    Series se{"model " + std::to_string(k), {}, {}};
    for (int i = 0; i <= 60; ++i) {
      se.x.push_back(i * 10.0);
      se.y.push_back(2.0 / (1 + 0.05 * i * (k + 1)) + 0.05 * k);
    }
    s.series.push_back(se);
  }
  return s;
}

}  // namespace

// ---- axes ----

TEST_CASE("plots: nice ticks, log ticks and tick labels") {
  CHECK(nice_ticks(0, 10, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(nice_ticks(0.13, 0.92, 4) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  const std::vector<double> t = nice_ticks(-3.7, 1234, 6);
  CHECK(t.front() <= -3.7);
  CHECK(t.back() >= 1234);
  CHECK(t[1] - t[0] == 200);
  CHECK(nice_ticks(5, 5, 4).size() >= 2);  // a single value still gets an axis
  CHECK(log_ticks(0.001, 5) == std::vector<double>{0.001, 0.01, 0.1, 1});
  CHECK(log_ticks(1, 40) == std::vector<double>{1, 2, 5, 10, 20});
  CHECK(log_ticks(1e-12, 1e12).size() <= 9);
  CHECK(log_ticks(2.1, 2.3).size() >= 2);
  CHECK_THROWS_AS(log_ticks(0, 1), Error);
  CHECK(format_tick(0.25, 0.05) == "0.25");
  CHECK(format_tick(1500, 500) == "1500");
  CHECK(format_tick(0.6000000000000001, 0.2) == "0.6");
  CHECK(format_tick(-1e-17, 0.2) == "0.0");  // no "-0.0" from rounding noise
  CHECK(format_tick(2e6, 1e6) == "2e6");
  CHECK(format_tick(2.5e6, 5e5) == "2.5e6");
  CHECK(format_tick(1e-5, 1e-5) == "1e-5");
  CHECK(format_tick(0.001, 0.001) == "0.001");
  CHECK(format_tick(100, 100) == "100");
}

TEST_CASE("plots: canvas primitives and text") {
  Canvas c(100, 60);
  c.fill_rect(10, 10, 20, 15, colors::black);
  CHECK(count_color(c, colors::black) == 50);
  c.set_clip({0, 0, 50, 60});
  c.line(0, 40, 99, 40, {255, 0, 0}, 3);
  CHECK(c.pixel(30, 40) == Color{255, 0, 0});
  CHECK(c.pixel(70, 40) == colors::white);  // clipped
  c.reset_clip();
  CHECK(Canvas::text_width("abc", 2) == 2 * Canvas::text_width("abc", 1));
  Canvas h(200, 200), v(200, 200);
  h.text(100, 100, "Hello", colors::black, 2, HAlign::center, VAlign::middle);
  v.text(100, 100, "Hello", colors::black, 2, HAlign::center, VAlign::middle, true);
  auto extent = [](const Canvas& k) {
    int x0 = 1000, x1 = -1, y0 = 1000, y1 = -1;
    for (int y = 0; y < k.height(); ++y)
      for (int x = 0; x < k.width(); ++x)
        if (k.pixel(x, y) != colors::white) {
          x0 = std::min(x0, x); x1 = std::max(x1, x); y0 = std::min(y0, y); y1 = std::max(y1, y);
        }
    return std::vector<int>{x0, x1, y0, y1};
  };
  const std::vector<int> eh = extent(h), ev = extent(v);
  CHECK(eh[1] - eh[0] > 3 * (eh[3] - eh[2]));  // horizontal text is wide
  CHECK(ev[3] - ev[2] > 3 * (ev[1] - ev[0]));  // rotated text is tall
  CHECK(std::abs((eh[0] + eh[1]) / 2 - 100) <= 2);  // centred on the anchor
  CHECK(std::abs((ev[2] + ev[3]) / 2 - 100) <= 2);
  Canvas u(200, 40);
  u.text(0, 0, "x \xC3\x97 \xE2\x88\x92 \xF0\x9F\x98\x80", colors::black);  // non-ASCII: no crash, drawn
  CHECK(count_color(u, colors::black) > 0);
  CHECK_THROWS_AS(Canvas(0, 10), Error);
  CHECK(c.encode_png().compare(0, 8, "\x89PNG\r\n\x1a\n", 8) == 0);
}

// ---- line chart ----

TEST_CASE("plots: line chart file, size, series colours and legend") {
  LineChartSpec spec = three_series();
  spec.series[1].y[10] = NAN;  // skipped, not drawn at a bogus place
  spec.series[2].x[5] = INFINITY;
  const std::string path = temp_path("loss.png");
  line_chart(path, spec);
  const PngInfo info = png_info(path);
  CHECK(info.signature);
  CHECK(info.width == 960);
  CHECK(info.height == 600);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

  const Canvas c = render_line_chart(spec);
  CHECK(c.width() == 960);
  // The middle of the plotting area has data drawn in it.
  CHECK(count_not_white(c, 150, 80, 700, 500) > 2000);
  // The plot frame's right edge: the rightmost axis-coloured pixel on the middle row.
  int frame_right = c.width() - 1;
  while (frame_right > 0 && c.pixel(frame_right, 300) != colors::axis) --frame_right;
  REQUIRE(frame_right > 500);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(count_color(c, series_color(k), 0, 0, frame_right, 600) > 200);  // the line
    CHECK(count_color(c, series_color(k), frame_right + 1, 0, 960, 600) > 30);  // its legend swatch
  }
  CHECK(count_color(c, series_color(3)) == 0);
  // The title and axis labels are drawn in the text colour at the top and left.
  CHECK(count_color(c, colors::text, 300, 0, 700, 50) > 50);
  CHECK(count_color(c, colors::text, 0, 200, 40, 400) > 20);

  spec.log_y = true;
  spec.series[0].y[3] = -1;  // below zero: skipped on a log axis
  const Canvas l = render_line_chart(spec);
  CHECK(count_color(l, series_color(0), 0, 0, frame_right, 600) > 200);
  spec.width = 700;
  spec.height = 400;
  line_chart(path, spec);
  CHECK(png_info(path).width == 700);
  CHECK(png_info(path).height == 400);
}

TEST_CASE("plots: a title longer than the space left of the legend stays on the canvas") {
  // Centred over the plot, a long title beside a wide legend used to start left of x = 0 and lose
  // its first letters. Now it is shifted right: nothing is drawn in the 16-pixel margins, and the
  // whole title is there (its pixels span about its width).
  LineChartSpec spec = three_series();
  spec.series[0].name = "a series name that makes the legend wide";
  spec.title = std::string(40, 'W');
  const Canvas c = render_line_chart(spec);
  const int title_width = Canvas::text_width(spec.title, 3);
  REQUIRE(title_width < c.width() - 32);
  CHECK(count_color(c, colors::text, 0, 0, 16, 45) == 0);
  CHECK(count_color(c, colors::text, c.width() - 16, 0, c.width(), 45) == 0);
  int first = c.width(), last = 0;
  for (int y = 0; y < 45; ++y)
    for (int x = 0; x < c.width(); ++x)
      if (c.pixel(x, y) == colors::text) {
        first = std::min(first, x);
        last = std::max(last, x);
      }
  CHECK(last - first + 1 >= title_width - 6);
}

TEST_CASE("plots: integer_x puts x ticks on whole numbers only") {
  // Three layers (x = 0, 1, 2): nice ticks would be 0, 0.2, …, 2; integer_x draws 0, 1 and 2, so the
  // tick marks below the frame are exactly three.
  LineChartSpec spec;
  spec.series = {{"spread", {0, 1, 2}, {1e-9, 1e-7, 1e-6}}};
  spec.log_y = true;
  auto tick_marks = [](const Canvas& c) {
    int bottom = c.height() - 1;  // the frame's bottom edge: the lowest axis-coloured pixel in column 300
    while (bottom > 0 && c.pixel(300, bottom) != colors::axis) --bottom;
    int marks = 0;
    for (int x = 1; x < c.width(); ++x)
      marks += c.pixel(x, bottom + 4) == colors::axis && c.pixel(x - 1, bottom + 4) != colors::axis;
    return marks;
  };
  const int plain = tick_marks(render_line_chart(spec));
  spec.integer_x = true;
  CHECK(tick_marks(render_line_chart(spec)) == 3);
  CHECK(plain > 3);
}

TEST_CASE("plots: line chart errors name the file") {
  const std::string path = temp_path("bad.png");
  LineChartSpec empty;
  CHECK_THROWS_WITH_AS(line_chart(path, empty), doctest::Contains((path + ": line chart has no series").c_str()), Error);
  LineChartSpec s = three_series();
  s.series[1].y.pop_back();
  CHECK_THROWS_WITH_AS(line_chart(path, s),
                       doctest::Contains("line chart 'validation loss': series 'model 1' has 61 x values but 60 y values"),
                       Error);
  LineChartSpec nan;
  nan.series = {{"a", {1, 2}, {NAN, INFINITY}}};
  CHECK_THROWS_WITH_AS(line_chart(path, nan), doctest::Contains("has no finite data points"), Error);
  LineChartSpec negative;
  negative.log_y = true;
  negative.series = {{"a", {1, 2}, {-1, 0}}};
  CHECK_THROWS_WITH_AS(line_chart(path, negative), doctest::Contains("(above 0, for the log axis)"), Error);
  LineChartSpec tiny = three_series();
  tiny.width = 150;
  CHECK_THROWS_WITH_AS(line_chart(path, tiny), doctest::Contains("is too small for this chart"), Error);
  CHECK_FALSE(std::filesystem::exists(path));
  const std::string unwritable = "/nonexistent_urpe_dir/plot.png";
  CHECK_THROWS_WITH_AS(line_chart(unwritable, three_series()),
                       doctest::Contains((unwritable + ": cannot write").c_str()), Error);
}

// ---- heatmaps ----

TEST_CASE("plots: heatmap colour maps") {
  CHECK(colormap_color(ColorMap::diverging, 0.5) == Color{247, 247, 247});
  CHECK(colormap_color(ColorMap::diverging, 0) == Color{5, 48, 97});
  CHECK(colormap_color(ColorMap::diverging, 1) == Color{103, 0, 31});
  CHECK(colormap_color(ColorMap::diverging, 7) == Color{103, 0, 31});  // clamped
  CHECK(colormap_color(ColorMap::sequential, 0) == Color{68, 1, 84});
  CHECK(colormap_color(ColorMap::sequential, 1) == Color{253, 231, 37});
}

TEST_CASE("plots: heatmap and heatmap grid with shared or per-panel scales") {
  // Panel a: values 0..1 around centre 0; panel b: -4..4. Masked cells are NaN.
  HeatmapSpec a, b;
  a.title = "head 0";
  b.title = "head 1";
  for (HeatmapSpec* p : {&a, &b}) {
    p->rows = 6;
    p->cols = 8;
    p->x_label = "key j";
    p->y_label = "query i";
  }
  for (int i = 0; i < 48; ++i) {
    a.values.push_back(static_cast<float>(i % 8) / 7);  // 0 .. 1
    b.values.push_back(static_cast<float>(i % 8) - 4);  // -4 .. 3
  }
  b.values[47] = 4;
  b.values[0] = NAN;

  const std::string path = temp_path("heads.png");
  heatmap_grid(path, {a, b}, 2, "C per head");
  const PngInfo info = png_info(path);
  CHECK(info.signature);
  const Canvas shared = render_heatmap_grid({a, b}, 2, "C per head");
  CHECK(info.width == static_cast<uint32_t>(shared.width()));
  CHECK(info.height == static_cast<uint32_t>(shared.height()));
  const Canvas own = render_heatmap_grid({a, b}, 2, "C per head", false);
  CHECK(own.width() > shared.width());  // a colour bar per panel

  const Color darkest_red = colormap_color(ColorMap::diverging, 1);
  const Color centre = colormap_color(ColorMap::diverging, 0.5);
  // Shared scale [-4, 4]: only b's 4 reaches the darkest red; per panel, a's 1 does too.
  const size_t shared_red = count_color(shared, darkest_red), own_red = count_color(own, darkest_red);
  CHECK(shared_red > 0);
  CHECK(own_red > shared_red + 100);
  CHECK(count_color(shared, centre) > 100);            // a's zeros and b's zeros are white
  CHECK(count_color(shared, colors::missing) > 20);    // the NaN cell
  CHECK(count_color(shared, colormap_color(ColorMap::diverging, 0)) > 0);  // the bar's blue end
  CHECK(count_color(shared, colors::text) > 200);      // titles, ticks, labels

  // A single heatmap, sequential map: the viridis ends appear.
  a.map = ColorMap::sequential;
  heatmap(temp_path("one.png"), a);
  CHECK(png_info(temp_path("one.png")).signature);
  const Canvas one = render_heatmap_grid({a}, 1, "");
  CHECK(count_color(one, Color{68, 1, 84}) > 100);
  CHECK(count_color(one, Color{253, 231, 37}) > 100);

  // Fixed range and centre: a constant C = 1 matrix is pure white.
  HeatmapSpec ones;
  ones.rows = ones.cols = 4;
  ones.values.assign(16, 1.0f);
  ones.center = 1;
  CHECK(count_color(render_heatmap_grid({ones}, 1, "C at init"), centre) > 16 * 100);
}

TEST_CASE("plots: heatmap errors name the file") {
  const std::string path = temp_path("bad_heat.png");
  HeatmapSpec p;
  p.title = "h";
  p.rows = 2;
  p.cols = 3;
  p.values.assign(5, 1.0f);
  CHECK_THROWS_WITH_AS(heatmap(path, p), doctest::Contains((path + ": heatmap 'h' has 5 values for 2x3 cells").c_str()), Error);
  p.values.assign(6, NAN);
  CHECK_THROWS_WITH_AS(heatmap(path, p), doctest::Contains("heatmap 'h' has no finite values"), Error);
  p.rows = 0;
  CHECK_THROWS_WITH_AS(heatmap(path, p), doctest::Contains("has no cells (0x3)"), Error);
  CHECK_THROWS_WITH_AS(heatmap_grid(path, {}, 2, "t"), doctest::Contains((path + ": heatmap grid has no panels").c_str()), Error);
  HeatmapSpec q;
  q.rows = q.cols = 2;
  q.values.assign(4, 0.5f);
  CHECK_THROWS_WITH_AS(heatmap_grid(path, {q}, 0, "t"), doctest::Contains("needs at least 1 column"), Error);
  HeatmapSpec r = q;
  r.map = ColorMap::sequential;
  CHECK_THROWS_WITH_AS(heatmap_grid(path, {q, r}, 2, "t"), doctest::Contains("must share the colour map"), Error);
  CHECK_NOTHROW(render_heatmap_grid({q, r}, 2, "t", false));
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_THROWS_WITH_AS(heatmap("/nonexistent_urpe_dir/h.png", q),
                       doctest::Contains("/nonexistent_urpe_dir/h.png: cannot write"), Error);
}

// ---- bar chart ----

TEST_CASE("plots: grouped bar chart") {
  BarChartSpec b;
  b.title = "accuracy";
  b.y_label = "accuracy (%)";
  b.groups = {"position identification", "even tokens", "copy"};
  b.series = {{"URPE", {99.8, 100, 97.2}}, {"RPE", {10.3, 55.1, 80.4}}, {"no PE", {3.1, NAN, 12.0}}};
  b.decimals = 1;
  b.y_max = 100;
  const std::string path = temp_path("bars.png");
  bar_chart(path, b);
  const PngInfo info = png_info(path);
  CHECK(info.signature);
  CHECK(info.height == 560);
  const Canvas c = render_bar_chart(b);
  CHECK(info.width == static_cast<uint32_t>(c.width()));
  for (size_t k = 0; k < 3; ++k) CHECK(count_color(c, series_color(k)) > 500);
  int frame_right = c.width() - 1;
  while (frame_right > 0 && c.pixel(frame_right, 300) != colors::axis) --frame_right;
  // Legend swatches (20 × 18) right of the plot, hatched like their bars: the first plain, the
  // others with white lines through them.
  CHECK(count_color(c, series_color(0), frame_right + 1, 0, c.width(), c.height()) == 360);
  for (size_t k = 1; k < 3; ++k) {
    const size_t n = count_color(c, series_color(k), frame_right + 1, 0, c.width(), c.height());
    CHECK(n > 180);
    CHECK(n < 360);
  }
  // Taller bars, more pixels: URPE's bars cover far more than no-PE's.
  CHECK(count_color(c, series_color(0)) > 4 * count_color(c, series_color(2)));
  CHECK(count_color(c, colors::text) > 300);  // labels, values, ticks
  // Negative values grow down from 0.
  BarChartSpec n;
  n.groups = {"a", "b"};
  n.series = {{"delta", {-2.5, 1.0}}};
  const Canvas neg = render_bar_chart(n);
  CHECK(count_color(neg, series_color(0)) > 500);
  n.value_labels = false;
  CHECK(count_color(render_bar_chart(n), colors::text) < count_color(neg, colors::text));

  // Many bars: narrow bars with vertical value labels keep the image a sensible width.
  BarChartSpec many;
  for (int g = 0; g < 12; ++g) many.groups.push_back("task " + std::to_string(g));
  for (int s = 0; s < 4; ++s) {
    BarSeries bs{"model " + std::to_string(s), {}};
    for (int g = 0; g < 12; ++g) bs.values.push_back(0.1 + 0.05 * s + 0.01 * g);
    many.series.push_back(bs);
  }
  const Canvas wide = render_bar_chart(many);
  CHECK(wide.width() < 2000);
  for (size_t k = 0; k < 4; ++k) CHECK(count_color(wide, series_color(k)) > 1000);
}

TEST_CASE("plots: bar chart errors name the file") {
  const std::string path = temp_path("bad_bars.png");
  BarChartSpec b;
  CHECK_THROWS_WITH_AS(bar_chart(path, b), doctest::Contains((path + ": bar chart has no groups").c_str()), Error);
  b.groups = {"x", "y"};
  CHECK_THROWS_WITH_AS(bar_chart(path, b), doctest::Contains("bar chart has no series"), Error);
  b.title = "t";
  b.series = {{"URPE", {1.0}}};
  CHECK_THROWS_WITH_AS(bar_chart(path, b), doctest::Contains("bar chart 't': series 'URPE' has 1 values for 2 groups"),
                       Error);
  b.series = {{"URPE", {NAN, NAN}}};
  CHECK_THROWS_WITH_AS(bar_chart(path, b), doctest::Contains("has no finite values"), Error);
  b.series = {{"URPE", {1, 2}}};
  b.y_min = 5;
  b.y_max = 5;
  CHECK_THROWS_WITH_AS(bar_chart(path, b), doctest::Contains("y range [5, 5] is empty"), Error);
  CHECK_FALSE(std::filesystem::exists(path));
}

// ---- what the pictures teach (tests/chart_checks.h) ----

namespace {

using urpe::test::has_text;
using urpe::test::least_visible_series;
using urpe::test::pixels_of;
using urpe::test::reference_coverage;
using urpe::test::texts_outside;

// Three series over 32 positions: `a` and `b` exactly equal, `c` apart.
LineChartSpec equal_pair() {
  LineChartSpec s;
  s.title = "spread per layer";
  s.x_label = "position";
  s.y_label = "value";
  Series a{"RPE", {}, {}}, c{"APE", {}, {}};
  for (int i = 0; i < 32; ++i) {
    a.x.push_back(i);
    a.y.push_back(0.5 + 0.01 * i);
    c.x.push_back(i);
    c.y.push_back(2.0 - 0.02 * i);
  }
  Series b = a;
  b.name = "URPE";
  s.series = {a, b, c};
  return s;
}

}  // namespace

TEST_CASE("plots: series that lie on top of each other all stay visible, with a note saying so") {
  ChartLayout layout;
  std::vector<SeriesStyle> styles;
  const Canvas c = render_line_chart(equal_pair(), &layout, &styles);
  // Every series has pixels of its own colour in the plot: URPE, drawn dashed and narrower over
  // RPE, leaves RPE showing at its edges and through its gaps.
  CHECK(least_visible_series(c, layout, 3) > 150);
  CHECK(styles[0].width > styles[1].width);
  CHECK(styles[0].dash.solid());
  CHECK_FALSE(styles[1].dash.solid());
  CHECK(styles[0].draw_rank < styles[1].draw_rank);  // the wide one first
  CHECK(styles[2].width == styles[1].width);          // APE overlaps nothing: the plain style
  CHECK(styles[0].marker != styles[1].marker);
  REQUIRE(layout.notes.size() == 1);
  CHECK(layout.notes[0] == "RPE = URPE at every point (URPE drawn dashed on top)");
  CHECK(has_text(c, "RPE = URPE at every"));
  CHECK(texts_outside(c).empty());

  // Close but not equal: the same drawing, and a note that they overlap (not "at every point").
  LineChartSpec close = equal_pair();
  for (double& y : close.series[1].y) y += 1e-4;
  const Canvas k = render_line_chart(close, &layout, &styles);
  CHECK(least_visible_series(k, layout, 3) > 150);
  REQUIRE(layout.notes.size() == 1);
  CHECK(layout.notes[0] == "URPE drawn dashed over RPE: the lines overlap");

  // The check itself: paint the plot's RPE pixels over in URPE's colour and RPE has none left.
  Canvas hidden = render_line_chart(equal_pair(), &layout);
  for (int y = layout.plot.y; y < layout.plot.bottom(); ++y)
    for (int x = layout.plot.x; x < layout.plot.right(); ++x)
      if (hidden.pixel(x, y) == series_color(0)) hidden.fill_rect(x, y, x + 1, y + 1, series_color(1));
  CHECK(least_visible_series(hidden, layout, 3) == 0);
}

TEST_CASE("plots: reference lines are drawn across the plot and labelled") {
  LineChartSpec s = equal_pair();
  s.references = {{1.0, "chance 1/32 = 3.1%"}, {1e-3, ""}};
  s.series.pop_back();
  ChartLayout layout;
  // The axis reaches down to 1e-3 for the second line; both rows are drawn, dashed.
  const Canvas c = render_line_chart(s, &layout);
  REQUIRE(layout.reference_rows.size() == 2);
  CHECK(reference_coverage(c, layout, 0) > 0.4);
  CHECK(reference_coverage(c, layout, 1) > 0.4);
  CHECK(layout.reference_rows[1] > layout.reference_rows[0]);  // 1e-3 lies lower
  CHECK(has_text(c, "chance 1/32 = 3.1%"));
  CHECK(texts_outside(c).empty());
  // The check itself: a chart without the line has no coverage on that row.
  LineChartSpec none = s;
  none.references.clear();
  ChartLayout bare;
  const Canvas b = render_line_chart(none, &bare);
  bare.reference_rows = layout.reference_rows;
  CHECK(reference_coverage(b, bare, 0) < 0.05);

  // Bar charts draw the line over the bars and name it in the legend.
  BarChartSpec bars;
  bars.groups = {"PI, V=100"};
  bars.series = {{"noPE", {3.0}}, {"RPE", {3.2}}, {"URPE", {100.0}}};
  bars.references = {{3.125, "chance 1/32 = 3.1%"}};
  bars.y_min = 0;
  bars.y_max = 112;
  const Canvas bc = render_bar_chart(bars, &layout);
  CHECK(reference_coverage(bc, layout, 0) > 0.3);
  CHECK(has_text(bc, "chance 1/32"));
  CHECK(pixels_of(bc, colors::reference, layout.legend) > 10);  // its dashed swatch
  for (size_t k = 0; k < 3; ++k) CHECK(pixels_of(bc, series_color(k), layout.plot) > 100);
  CHECK(texts_outside(bc).empty());
  CHECK_THROWS_WITH_AS(render_line_chart([] {
                         LineChartSpec l = equal_pair();
                         l.log_y = true;
                         l.references = {{0.0, "zero"}};
                         return l;
                       }()),
                       doctest::Contains("reference line 'zero' at 0 cannot be drawn on this axis"), Error);
}

TEST_CASE("plots: a log axis shows zero in a band labelled 0, not as a made-up decade") {
  LineChartSpec s;
  s.log_y = true;
  s.zero_band = "exactly 0";
  s.integer_x = true;
  s.series = {{"noPE", {0, 1, 2}, {0, 2e-7, 3e-7}}, {"URPE", {0, 1, 2}, {0, 0.09, 1.98}}};
  ChartLayout layout;
  const Canvas c = render_line_chart(s, &layout);
  CHECK(layout.zero_band_row > layout.plot.y + layout.plot.h / 2);
  CHECK(pixels_of(c, colors::band, layout.plot) > 1000);
  CHECK(has_text(c, "exactly 0"));
  bool zero_tick = false, fake_decade = false;
  for (const Canvas::TextRecord& t : c.texts()) {
    zero_tick = zero_tick || t.text == "0";
    fake_decade = fake_decade || t.text == "1e-9" || t.text == "1e-8";
  }
  CHECK(zero_tick);
  CHECK_FALSE(fake_decade);  // the axis starts near the smallest positive value, 2e-7
  // Both series' zeros sit in the band: each colour has pixels on the band's row.
  for (size_t k = 0; k < 2; ++k)
    CHECK(pixels_of(c, series_color(k), {layout.plot.x, layout.zero_band_row - 3, layout.plot.w, 7}) > 5);
  // No segment crosses the axis break (white rows between the band and the axis): a line from the
  // band's 0 to 2e-7 would pass through values nobody measured, a made-up "layer 0.4".
  for (size_t k = 0; k < 2; ++k)
    CHECK(pixels_of(c, series_color(k), {layout.plot.x + 1, layout.zero_band_row - 22, layout.plot.w - 2, 8}) == 0);
  // Without zero_band the zeros are skipped as before, and no band is drawn.
  s.zero_band.clear();
  const Canvas plain = render_line_chart(s, &layout);
  CHECK(layout.zero_band_row == -1);
  CHECK(pixels_of(plain, colors::band, layout.plot) == 0);
}

TEST_CASE("plots: axes have headroom and end at the data") {
  // Accuracy reaching exactly 100 and a line at exactly 1.0: neither lies on the frame.
  LineChartSpec s;
  s.series = {{"URPE", {}, {}}, {"RPE", {}, {}}};
  for (int i = 0; i < 32; ++i) {
    s.series[0].x.push_back(i);
    s.series[0].y.push_back(i < 10 ? 10.0 * i : 100.0);
    s.series[1].x.push_back(i);
    s.series[1].y.push_back(1.0);
  }
  s.integer_x = true;
  ChartLayout layout;
  const Canvas c = render_line_chart(s, &layout);
  int top = c.height();
  for (int y = layout.plot.y; y < layout.plot.bottom() && top == c.height(); ++y)
    for (int x = layout.plot.x; x < layout.plot.right(); ++x)
      if (c.pixel(x, y) == series_color(0)) {
        top = y;
        break;
      }
  CHECK(top >= layout.plot.y + 6);  // 100 is below the frame's top edge
  // x: positions 0 … 31 get ticks up to 30, never 35.
  CHECK(has_text(c, "30"));
  for (const Canvas::TextRecord& t : c.texts()) CHECK(t.text != "35");
}

TEST_CASE("plots: colour bars carry a tick per nice step, the centre among them") {
  const std::vector<double> t = colorbar_ticks(-0.2, 1.0, 2.2);
  CHECK(t.size() >= 4);
  CHECK(std::find(t.begin(), t.end(), 1.0) != t.end());
  CHECK(t.front() >= -0.2);
  CHECK(t.back() <= 2.2);
  const std::vector<double> u = colorbar_ticks(-1, 0.13, 1);  // an odd centre joins the nice steps
  CHECK(std::find(u.begin(), u.end(), 0.13) != u.end());
  // No tick within 3/4 of a step of another: their labels would touch ("0.05" over "0.05").
  for (size_t k = 1; k < u.size(); ++k) CHECK(u[k] - u[k - 1] >= 0.75 * 0.5 - 1e-9);
  HeatmapSpec h;
  h.rows = h.cols = 32;
  h.center = 1;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) h.values.push_back(static_cast<float>(1.0 + 0.035 * (j - i)));
  const Canvas c = render_heatmap_grid({h, h, h, h}, 4, "C per head");
  int bar_labels = 0;
  for (const Canvas::TextRecord& r : c.texts()) bar_labels += r.text.find('.') != std::string::npos;
  CHECK(bar_labels >= 4);  // "0.0", "0.5", "1.0", "1.5", "2.0": not only the ends and the centre
  CHECK(texts_outside(c).empty());
}

TEST_CASE("plots: every label fits inside the image, titles included") {
  LineChartSpec s = three_series();
  s.title = "Validation accuracy during training (position identification, V = 100, mean of 3 seeds)";
  s.width = 700;
  s.height = 420;
  const Canvas c = render_line_chart(s);
  CHECK(texts_outside(c).empty());
  CHECK(has_text(c, "seeds"));  // wrapped, not cut
  BarChartSpec b;
  b.title = s.title;
  b.groups = {"PI"};
  b.series = {{"URPE", {100}}};
  CHECK(texts_outside(render_bar_chart(b)).empty());
  // A page of charts keeps their texts, moved into place.
  const Canvas page = render_page("Summary", {{c, render_bar_chart(b)}});
  CHECK(page.width() >= c.width() + 640);
  CHECK(texts_outside(page).empty());
  CHECK(has_text(page, "Summary"));
  CHECK(has_text(page, "seeds"));
}

TEST_CASE("plots: the middle dot of A·1 is drawn at mid-height, not as a full stop") {
  Canvas dot(120, 40), stop(120, 40);
  dot.text(10, 10, "A\xC2\xB7" "1", colors::black, 2);
  stop.text(10, 10, "A.1", colors::black, 2);
  auto lowest_between = [](const Canvas& k, int x0, int x1) {  // lowest inked row between the letters
    int lowest = -1;
    for (int y = 0; y < k.height(); ++y)
      for (int x = x0; x < x1; ++x)
        if (k.pixel(x, y) == colors::black) lowest = y;
    return lowest;
  };
  const int gap0 = 10 + Canvas::text_width("A", 2), gap1 = 10 + Canvas::text_width("A.", 2);
  CHECK(lowest_between(dot, gap0 + 1, gap1) < lowest_between(stop, gap0 + 1, gap1) - 3);
  CHECK(dot.texts().size() == 1);
  CHECK(dot.texts()[0].box.w == Canvas::text_width("A.1", 2));
}
