// A small RGB raster for the charts in charts.h: antialiased lines (solid or dashed), discs and
// marker shapes, rectangles, text from the stb_easy_font segment font (scaled, optionally rotated
// for a y-axis label), clipping, copying one canvas into another (pages of charts), and PNG
// encoding with stb_image_write. Coordinates are pixels, x right, y down. Every text drawn is
// recorded with its box, so tests can check that labels fit inside the image.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace urpe::plot {

struct Color {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Color& o) const { return r == o.r && g == o.g && b == o.b; }
  bool operator!=(const Color& o) const { return !(*this == o); }
};

// Linear mix: t = 0 gives a, t = 1 gives b.
Color mix(Color a, Color b, double t);

namespace colors {
constexpr Color white{255, 255, 255};
constexpr Color black{0, 0, 0};
constexpr Color text{34, 34, 34};
constexpr Color axis{68, 68, 68};
constexpr Color grid{228, 228, 228};
constexpr Color missing{190, 190, 190};  // NaN heatmap cells
constexpr Color reference{96, 96, 96};   // reference lines (chance, a theorem's bound) and their labels
constexpr Color band{238, 238, 238};     // the "0" band under a log axis
}  // namespace colors

// Point markers. Shapes differ by series so that coinciding lines stay apart in print and for
// colour-blind readers; `hollow` draws the outline only (a marker on top of another one).
enum class MarkerShape { circle, square, triangle, diamond, triangle_down };

// A dash pattern along a line, in pixels: `on` drawn, `off` skipped; on = 0 is a solid line.
struct Dash {
  double on = 0, off = 0;
  bool solid() const { return on <= 0 || off <= 0; }
};

struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
  int right() const { return x + w; }
  int bottom() const { return y + h; }
};

enum class HAlign { left, center, right };
enum class VAlign { top, middle, bottom };

class Canvas {
 public:
  Canvas(int width, int height, Color background = colors::white);

  int width() const { return width_; }
  int height() const { return height_; }
  Color pixel(int x, int y) const;

  // Drawing is limited to the clip rectangle (the whole canvas by default).
  void set_clip(const Rect& clip);
  void reset_clip();

  // Pixels whose centre lies in [x0, x1) × [y0, y1), fully opaque.
  void fill_rect(double x0, double y0, double x1, double y1, Color c);
  // A one-pixel rectangle outline along the edges of [x0, x1) × [y0, y1).
  void outline_rect(int x0, int y0, int x1, int y1, Color c);
  // An antialiased segment of the given width with round caps.
  void line(double x0, double y0, double x1, double y1, Color c, double width);
  void polyline(const std::vector<double>& xs, const std::vector<double>& ys, Color c, double width);
  // The same path, dashed: the pattern runs on along the whole path (not restarted per segment).
  void dashed_polyline(const std::vector<double>& xs, const std::vector<double>& ys, Color c, double width,
                       Dash dash);
  void disc(double cx, double cy, double radius, Color c);
  // A marker centred at (cx, cy) about 2·radius across.
  void marker(double cx, double cy, MarkerShape shape, double radius, Color c, bool hollow = false);

  // Text at `scale` pixels per font unit (2 is the body size). The anchor (x, y) is aligned to
  // the text box: its width and the cap height (7 units; descenders hang 2 units below). With
  // `vertical`, the text reads bottom to top and alignment applies to the rotated box.
  void text(double x, double y, const std::string& s, Color c, int scale = 2,
            HAlign h = HAlign::left, VAlign v = VAlign::top, bool vertical = false);
  static int text_width(const std::string& s, int scale = 2);
  static int text_height(int scale = 2) { return 7 * scale; }

  // Every text() call's string and box (before clipping), in drawing order.
  struct TextRecord {
    std::string text;
    Rect box;
  };
  const std::vector<TextRecord>& texts() const { return texts_; }

  // Copies `src` with its top-left at (x, y) (clipped to this canvas); its text records come along,
  // moved by (x, y).
  void blit(const Canvas& src, int x, int y);

  // PNG bytes of the image, and an atomic write of them (path.tmp, then rename). Failures throw
  // urpe::Error naming the path.
  std::string encode_png() const;
  void save_png(const std::string& path) const;

 private:
  void blend(int x, int y, Color c, double alpha);
  void fill_convex(const std::vector<std::pair<double, double>>& pts, Color c);

  int width_, height_;
  Rect clip_;
  std::vector<uint8_t> rgb_;  // (height, width, 3)
  std::vector<TextRecord> texts_;
};

}  // namespace urpe::plot
