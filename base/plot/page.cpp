// Pages of charts (a run's one-page summary): rendered charts placed row by row, each row as tall
// as its tallest chart, charts top-aligned and centred in the page width, under a page title.
#include <algorithm>

#include "tensor/error.h"
#include "base/plot/chart_parts.h"
#include "base/plot/charts.h"

namespace urpe::plot {

Canvas render_page(const std::string& title, const std::vector<std::vector<Canvas>>& rows) {
  using parts::kMargin;
  using parts::kTitleScale;
  URPE_CHECK(!rows.empty(), "plot: a page needs at least one row of charts");
  constexpr int kGap = 12;
  int width = 0, height = 0;
  for (const std::vector<Canvas>& row : rows) {
    URPE_CHECK(!row.empty(), "plot: page '" << title << "' has an empty row");
    int row_w = 2 * kMargin - kGap, row_h = 0;
    for (const Canvas& chart : row) {
      row_w += chart.width() + kGap;
      row_h = std::max(row_h, chart.height());
    }
    width = std::max(width, row_w);
    height += row_h + kGap;
  }
  width = std::max(width, Canvas::text_width(title, kTitleScale) + 2 * kMargin);
  height += parts::title_band(title, width) + kMargin - kGap;
  Canvas page(width, height);
  page.text(width / 2.0, kMargin, title, colors::text, kTitleScale, HAlign::center);
  int y = parts::title_band(title, width);
  for (const std::vector<Canvas>& row : rows) {
    int row_w = -kGap, row_h = 0;
    for (const Canvas& chart : row) {
      row_w += chart.width() + kGap;
      row_h = std::max(row_h, chart.height());
    }
    int x = (width - row_w) / 2;
    for (const Canvas& chart : row) {
      page.blit(chart, x, y);
      x += chart.width() + kGap;
    }
    y += row_h + kGap;
  }
  return page;
}

Canvas render_caption(const std::string& text, int width) {
  const std::vector<std::string> lines = parts::wrap(text, width - 2 * parts::kMargin);
  const int line_h = Canvas::text_height(parts::kBody) + 6;
  Canvas c(width, static_cast<int>(lines.size()) * line_h + parts::kMargin);
  for (size_t k = 0; k < lines.size(); ++k)
    c.text(parts::kMargin, parts::kMargin / 2 + static_cast<int>(k) * line_h, lines[k], colors::text, parts::kBody);
  return c;
}

}  // namespace urpe::plot
