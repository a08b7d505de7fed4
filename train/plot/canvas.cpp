// Raster primitives behind the charts. Lines and discs are antialiased by coverage: a pixel's
// alpha is how far its centre lies inside the shape's edge (clamped to [0, 1]), which gives
// smooth strokes of any width with one small loop. Text comes from stb_easy_font, which emits
// axis-aligned quads in font units; each quad becomes a scaled rectangle of pixels.
#include "train/plot/canvas.h"

#include <algorithm>
#include <cmath>

#include "tensor/error.h"
#include "train/io/json.h"  // write_file_atomic

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

void Canvas::disc(double cx, double cy, double radius, Color c) { line(cx, cy, cx, cy, c, 2 * radius); }

// ---- text ----

// stb_easy_font covers printable ASCII; a few common symbols get ASCII stand-ins and any other
// UTF-8 sequence becomes one '?'.
static std::string to_font_ascii(const std::string& s) {
  static const std::pair<const char*, const char*> replacements[] = {
      {"\xC3\x97", "x"}, {"\xE2\x88\x92", "-"}, {"\xE2\x80\x94", "-"}, {"\xE2\x80\x93", "-"},
      {"\xC2\xB7", "."}, {"\xE2\x8A\x99", "*"}, {"\xE2\x80\xA6", "..."}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 32 && c < 127) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
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
  std::string ascii = to_font_ascii(s);
  if (ascii.empty()) return;
  const double w = text_width(s, scale), ht = text_height(scale);
  // Offsets of the text box's reading-frame origin (its top-left before rotation).
  const double along = h == HAlign::left ? 0 : h == HAlign::center ? -w / 2 : -w;
  const double across = v == VAlign::top ? 0 : v == VAlign::middle ? -ht / 2 : -ht;
  std::vector<char> quads(ascii.size() * 1024 + 64);  // up to 16 quads of 64 bytes per glyph
  const int n = stb_easy_font_print(0, 0, &ascii[0], nullptr, quads.data(), static_cast<int>(quads.size()));
  for (int q = 0; q < n; ++q) {
    const float* v0 = reinterpret_cast<const float*>(quads.data() + q * 64);
    const float* v2 = reinterpret_cast<const float*>(quads.data() + q * 64 + 32);
    const double u0 = v0[0], t0 = v0[1], u1 = v2[0], t1 = v2[1];  // font units: u along, t down
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
