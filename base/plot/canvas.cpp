// Raster primitives behind the charts. Lines and discs are antialiased by coverage: a pixel's
// alpha is how far its centre lies inside the shape's edge (clamped to [0, 1]), which gives
// smooth strokes of any width with one small loop. Text comes from stb_easy_font, which emits
// axis-aligned quads in font units; each quad becomes a scaled rectangle of pixels.
#include "base/plot/canvas.h"

#include <algorithm>
#include <cmath>

#include "tensor/error.h"
#include "base/io/json.h"  // write_file_atomic

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wtype-limits"
#endif
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#include "stb/stb_easy_font.h"
#include "stb/stb_image_write.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace urpe::plot {

Color mix(Color a, Color b, double t) {
  t = std::clamp(t, 0.0, 1.0);
  auto channel = [t](uint8_t u, uint8_t v) {
    return static_cast<uint8_t>(std::lround(u + (static_cast<double>(v) - u) * t));
  };
  return {channel(a.r, b.r), channel(a.g, b.g), channel(a.b, b.b)};
}

Canvas::Canvas(int width, int height, Color background) : width_(width), height_(height) {
  URPE_CHECK(width > 0 && height > 0 && width <= 16384 && height <= 16384,
             "plot: canvas size " << width << "x" << height << " is out of range");
  rgb_.resize(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < rgb_.size(); i += 3) {
    rgb_[i] = background.r;
    rgb_[i + 1] = background.g;
    rgb_[i + 2] = background.b;
  }
  reset_clip();
}

Color Canvas::pixel(int x, int y) const {
  URPE_CHECK(x >= 0 && y >= 0 && x < width_ && y < height_,
             "plot: pixel (" << x << ", " << y << ") outside a " << width_ << "x" << height_ << " canvas");
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  return {rgb_[i], rgb_[i + 1], rgb_[i + 2]};
}

void Canvas::set_clip(const Rect& clip) {
  const int x0 = std::max(0, clip.x), y0 = std::max(0, clip.y);
  const int x1 = std::min(width_, clip.right()), y1 = std::min(height_, clip.bottom());
  clip_ = {x0, y0, std::max(0, x1 - x0), std::max(0, y1 - y0)};
}

void Canvas::reset_clip() { clip_ = {0, 0, width_, height_}; }

void Canvas::blend(int x, int y, Color c, double alpha) {
  if (alpha <= 0 || x < clip_.x || y < clip_.y || x >= clip_.right() || y >= clip_.bottom()) return;
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  if (alpha >= 1) {
    rgb_[i] = c.r;
    rgb_[i + 1] = c.g;
    rgb_[i + 2] = c.b;
    return;
  }
  const Color out = mix({rgb_[i], rgb_[i + 1], rgb_[i + 2]}, c, alpha);
  rgb_[i] = out.r;
  rgb_[i + 1] = out.g;
  rgb_[i + 2] = out.b;
}

void Canvas::fill_rect(double x0, double y0, double x1, double y1, Color c) {
  const int px0 = static_cast<int>(std::ceil(std::min(x0, x1) - 0.5));
  const int px1 = static_cast<int>(std::ceil(std::max(x0, x1) - 0.5));
  const int py0 = static_cast<int>(std::ceil(std::min(y0, y1) - 0.5));
  const int py1 = static_cast<int>(std::ceil(std::max(y0, y1) - 0.5));
  for (int y = std::max(py0, clip_.y); y < std::min(py1, clip_.bottom()); ++y)
    for (int x = std::max(px0, clip_.x); x < std::min(px1, clip_.right()); ++x) blend(x, y, c, 1.0);
}

void Canvas::outline_rect(int x0, int y0, int x1, int y1, Color c) {
  fill_rect(x0, y0, x1, y0 + 1, c);
  fill_rect(x0, y1 - 1, x1, y1, c);
  fill_rect(x0, y0, x0 + 1, y1, c);
  fill_rect(x1 - 1, y0, x1, y1, c);
}

// Coverage of a capsule (segment swept by a disc of radius width/2): for each pixel centre p in
// the bounding box, alpha = r + 0.5 − distance(p, segment).
void Canvas::line(double x0, double y0, double x1, double y1, Color c, double width) {
  const double r = width / 2;
  const int bx0 = std::max(clip_.x, static_cast<int>(std::floor(std::min(x0, x1) - r - 1)));
  const int bx1 = std::min(clip_.right() - 1, static_cast<int>(std::ceil(std::max(x0, x1) + r + 1)));
  const int by0 = std::max(clip_.y, static_cast<int>(std::floor(std::min(y0, y1) - r - 1)));
  const int by1 = std::min(clip_.bottom() - 1, static_cast<int>(std::ceil(std::max(y0, y1) + r + 1)));
  const double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
  for (int y = by0; y <= by1; ++y) {
    for (int x = bx0; x <= bx1; ++x) {
      const double px = x + 0.5 - x0, py = y + 0.5 - y0;
      const double t = len2 > 0 ? std::clamp((px * dx + py * dy) / len2, 0.0, 1.0) : 0.0;
      const double ex = px - t * dx, ey = py - t * dy;
      blend(x, y, c, r + 0.5 - std::sqrt(ex * ex + ey * ey));
    }
  }
}

void Canvas::polyline(const std::vector<double>& xs, const std::vector<double>& ys, Color c,
                      double width) {
  for (size_t i = 1; i < xs.size() && i < ys.size(); ++i) line(xs[i - 1], ys[i - 1], xs[i], ys[i], c, width);
}

// Walks the path by arc length; `phase` is how far into the current period the walk is, so a dash
// continues across a vertex.
void Canvas::dashed_polyline(const std::vector<double>& xs, const std::vector<double>& ys, Color c, double width,
                             Dash dash) {
  if (dash.solid()) return polyline(xs, ys, c, width);
  const double period = dash.on + dash.off;
  double phase = 0;
  for (size_t i = 1; i < xs.size() && i < ys.size(); ++i) {
    const double dx = xs[i] - xs[i - 1], dy = ys[i] - ys[i - 1], len = std::sqrt(dx * dx + dy * dy);
    double t = 0;  // distance along this segment
    while (t < len) {
      const bool on = phase < dash.on;
      const double step = std::min(len - t, on ? dash.on - phase : period - phase);
      if (on) {
        const double a = t / len, b = (t + step) / len;
        line(xs[i - 1] + a * dx, ys[i - 1] + a * dy, xs[i - 1] + b * dx, ys[i - 1] + b * dy, c, width);
      }
      t += step;
      phase += step;
      if (phase >= period - 1e-9) phase = 0;
    }
  }
}

void Canvas::disc(double cx, double cy, double radius, Color c) { line(cx, cy, cx, cy, c, 2 * radius); }

// A convex polygon, antialiased: a pixel's alpha is 0.5 plus its centre's distance inside the
// nearest edge (vertices in either winding order).
void Canvas::fill_convex(const std::vector<std::pair<double, double>>& pts, Color c) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY, area = 0;
  for (size_t k = 0; k < pts.size(); ++k) {
    const auto& [ax, ay] = pts[k];
    const auto& [bx, by] = pts[(k + 1) % pts.size()];
    x0 = std::min(x0, ax), x1 = std::max(x1, ax), y0 = std::min(y0, ay), y1 = std::max(y1, ay);
    area += ax * by - bx * ay;
  }
  const double orient = area >= 0 ? 1.0 : -1.0;
  for (int y = static_cast<int>(std::floor(y0 - 1)); y <= static_cast<int>(std::ceil(y1 + 1)); ++y)
    for (int x = static_cast<int>(std::floor(x0 - 1)); x <= static_cast<int>(std::ceil(x1 + 1)); ++x) {
      double inside = INFINITY;
      for (size_t k = 0; k < pts.size(); ++k) {
        const auto& [ax, ay] = pts[k];
        const auto& [bx, by] = pts[(k + 1) % pts.size()];
        const double ex = bx - ax, ey = by - ay, len = std::sqrt(ex * ex + ey * ey);
        if (len == 0) continue;
        inside = std::min(inside, orient * (ex * (y + 0.5 - ay) - ey * (x + 0.5 - ax)) / len);
      }
      blend(x, y, c, 0.5 + inside);
    }
}

constexpr double kPi = 3.14159265358979323846;

void Canvas::marker(double cx, double cy, MarkerShape shape, double r, Color c, bool hollow) {
  std::vector<std::pair<double, double>> pts;
  switch (shape) {
    case MarkerShape::circle:
      if (!hollow) return disc(cx, cy, r, c);
      for (int k = 0; k < 24; ++k) pts.push_back({cx + r * std::cos(k * kPi / 12), cy + r * std::sin(k * kPi / 12)});
      break;
    case MarkerShape::square: {
      const double h = r * 0.85;
      pts = {{cx - h, cy - h}, {cx + h, cy - h}, {cx + h, cy + h}, {cx - h, cy + h}};
      break;
    }
    case MarkerShape::triangle:
      pts = {{cx, cy - 1.15 * r}, {cx + r, cy + 0.75 * r}, {cx - r, cy + 0.75 * r}};
      break;
    case MarkerShape::triangle_down:
      pts = {{cx, cy + 1.15 * r}, {cx + r, cy - 0.75 * r}, {cx - r, cy - 0.75 * r}};
      break;
    case MarkerShape::diamond:
      pts = {{cx, cy - 1.2 * r}, {cx + r, cy}, {cx, cy + 1.2 * r}, {cx - r, cy}};
      break;
  }
  if (hollow) {
    std::vector<double> xs, ys;
    for (const auto& [x, y] : pts) xs.push_back(x), ys.push_back(y);
    xs.push_back(pts[0].first);
    ys.push_back(pts[0].second);
    return polyline(xs, ys, c, 1.6);
  }
  fill_convex(pts, c);
}

void Canvas::blit(const Canvas& src, int x, int y) {
  for (int sy = 0; sy < src.height_; ++sy)
    for (int sx = 0; sx < src.width_; ++sx) {
      const int tx = x + sx, ty = y + sy;
      if (tx < clip_.x || ty < clip_.y || tx >= clip_.right() || ty >= clip_.bottom()) continue;
      const size_t from = (static_cast<size_t>(sy) * src.width_ + sx) * 3, to = (static_cast<size_t>(ty) * width_ + tx) * 3;
      for (int k = 0; k < 3; ++k) rgb_[to + k] = src.rgb_[from + k];
    }
  for (const TextRecord& t : src.texts_) texts_.push_back({t.text, {t.box.x + x, t.box.y + y, t.box.w, t.box.h}});
}

// ---- text ----

// stb_easy_font covers printable ASCII; a few common symbols get ASCII stand-ins and any other
// UTF-8 sequence becomes one '?'. The middle dot "·" (A·1) becomes a '.' whose index goes to
// `raised`, and text() lifts it to mid-height, so that it reads as a product, not a full stop.
static std::string to_font_ascii(const std::string& s, std::vector<size_t>* raised = nullptr) {
  static const std::pair<const char*, const char*> replacements[] = {
      {"\xC3\x97", "x"}, {"\xE2\x88\x92", "-"}, {"\xE2\x80\x94", "-"}, {"\xE2\x80\x93", "-"},
      {"\xC2\xB7", "."}, {"\xE2\x8A\x99", "*"}, {"\xE2\x80\xA6", "..."}, {"\xE2\x89\xA4", "<="},
      {"\xE2\x89\xA5", ">="}, {"\xE2\x86\x92", "->"}, {"\xE2\x80\x96", "||"}, {"\xE2\x80\x99", "'"}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 32 && c < 127) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (s.compare(i, 2, "\xC2\xB7") == 0 && raised) raised->push_back(out.size());
    bool replaced = false;
    for (const auto& [from, to] : replacements) {
      const size_t n = std::char_traits<char>::length(from);
      if (s.compare(i, n, from) == 0) {
        out += to;
        i += n;
        replaced = true;
        break;
      }
    }
    if (replaced) continue;
    out += '?';
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;  // continuation bytes
  }
  return out;
}

int Canvas::text_width(const std::string& s, int scale) {
  std::string ascii = to_font_ascii(s);
  if (ascii.empty()) return 0;
  // The font's width includes the spacing after the last glyph; drop one unit of it.
  return (stb_easy_font_width(&ascii[0]) - 1) * scale;
}

void Canvas::text(double x, double y, const std::string& s, Color c, int scale, HAlign h,
                  VAlign v, bool vertical) {
  std::vector<size_t> raised;
  std::string ascii = to_font_ascii(s, &raised);
  if (ascii.empty()) return;
  const double w = text_width(s, scale), ht = text_height(scale);
  // Offsets of the text box's reading-frame origin (its top-left before rotation).
  const double along = h == HAlign::left ? 0 : h == HAlign::center ? -w / 2 : -w;
  const double across = v == VAlign::top ? 0 : v == VAlign::middle ? -ht / 2 : -ht;
  {
    const double ox = std::round(x + (vertical ? across : along)), oy = std::round(y + (vertical ? -along - w : across));
    texts_.push_back({s, vertical ? Rect{static_cast<int>(ox), static_cast<int>(oy), static_cast<int>(ht), static_cast<int>(w)}
                                  : Rect{static_cast<int>(ox), static_cast<int>(oy), static_cast<int>(w), static_cast<int>(ht)}});
  }
  // The font-unit span [start, end) along the text of each raised dot's glyph.
  std::vector<std::pair<double, double>> raised_spans;
  for (size_t k : raised) {
    std::string prefix = ascii.substr(0, k), dot = ascii.substr(0, k + 1);
    raised_spans.push_back({prefix.empty() ? 0.0 : static_cast<double>(stb_easy_font_width(&prefix[0])),
                            static_cast<double>(stb_easy_font_width(&dot[0]))});
  }
  std::vector<char> quads(ascii.size() * 1024 + 64);  // up to 16 quads of 64 bytes per glyph
  const int n = stb_easy_font_print(0, 0, &ascii[0], nullptr, quads.data(), static_cast<int>(quads.size()));
  for (int q = 0; q < n; ++q) {
    const float* v0 = reinterpret_cast<const float*>(quads.data() + q * 64);
    const float* v2 = reinterpret_cast<const float*>(quads.data() + q * 64 + 32);
    double u0 = v0[0], t0 = v0[1], u1 = v2[0], t1 = v2[1];  // font units: u along, t down
    for (const auto& [start, end] : raised_spans)
      if (u0 >= start - 1e-6 && u0 < end) t0 -= 3, t1 -= 3;  // the dot to mid-height
    if (!vertical) {
      const double ox = std::round(x + along), oy = std::round(y + across);
      fill_rect(ox + u0 * scale, oy + t0 * scale, ox + u1 * scale, oy + t1 * scale, c);
    } else {
      // Rotated 90° counter-clockwise: "along" runs up the canvas, "down" runs right.
      // With the anchor (x, y): HAlign moves the text along y, VAlign across x.
      const double ox = std::round(x + across), oy = std::round(y - along);
      fill_rect(ox + t0 * scale, oy - u1 * scale, ox + t1 * scale, oy - u0 * scale, c);
    }
  }
}

// ---- PNG ----

static void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
}

std::string Canvas::encode_png() const {
  std::string png;
  const int ok = stbi_write_png_to_func(append_bytes, &png, width_, height_, 3, rgb_.data(), width_ * 3);
  URPE_CHECK(ok != 0, "plot: PNG encoding failed");
  return png;
}

void Canvas::save_png(const std::string& path) const { write_file_atomic(path, encode_png()); }

}  // namespace urpe::plot
