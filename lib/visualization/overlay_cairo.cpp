// The overlay pictures drawn with cairo (built when MEDSEG_WITH_CAIRO is ON; overlay_cairo_off.cpp otherwise).
#include "visualization/overlay.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "core/json_io.h"
#include "visualization/views.h"

namespace fs = std::filesystem;

namespace medseg::visualization {
namespace {

struct Rgb {
  double r, g, b;
};

// Distinct colours by label value (Trubetskoy's list without its greys, white and black), so that a
// label keeps its colour from case to case.
Rgb label_colour(int value) {
  static const unsigned char table[][3] = {{230, 25, 75},  {60, 180, 75},   {255, 225, 25}, {0, 130, 200},
                                           {245, 130, 48}, {145, 30, 180},  {70, 240, 240}, {240, 50, 230},
                                           {210, 245, 60}, {250, 190, 212}, {0, 128, 128},  {220, 190, 255},
                                           {170, 110, 40}, {255, 250, 200}, {128, 0, 0},    {170, 255, 195},
                                           {128, 128, 0},  {255, 215, 180}, {0, 0, 128}};
  constexpr int n = sizeof table / sizeof table[0];
  const auto& c = table[((value - 1) % n + n) % n];
  return {c[0] / 255.0, c[1] / 255.0, c[2] / 255.0};
}

using SurfacePtr = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;

// The image's 0.5th and 99.5th percentiles, from at most ~1M evenly spaced voxels.
std::pair<double, double> window(const Volume& image) {
  std::vector<double> s;
  const int64_t n = image.numel(), step = std::max<int64_t>(1, n / (1 << 20));
  visit_pixels(image, [&](const auto* p) {
    for (int64_t i = 0; i < n; i += step)
      if (std::isfinite(static_cast<double>(p[i]))) s.push_back(static_cast<double>(p[i]));
  });
  if (s.empty()) return {0, 1};
  auto at = [&](double q) {
    auto it = s.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(s.size() - 1));
    std::nth_element(s.begin(), it, s.end());
    return *it;
  };
  const double lo = at(0.005), hi = at(0.995);
  return {lo, hi > lo ? hi : lo + 1};
}

// One view's slice of a volume, in display order (row-major, height x width voxels).
template <class T>
std::vector<T> cut(const Volume& v, const ViewSpec& view, int64_t slice, int64_t& w, int64_t& h) {
  const auto& shape = v.shape();
  w = shape[view.h.array_axis];
  h = shape[view.v.array_axis];
  std::vector<T> out(static_cast<std::size_t>(w * h));
  std::array<int64_t, 3> idx{};
  idx[view.slice_axis] = slice;
  for (int64_t r = 0; r < h; ++r)
    for (int64_t c = 0; c < w; ++c) {
      idx[view.v.array_axis] = view.v.index(r, h);
      idx[view.h.array_axis] = view.h.index(c, w);
      out[static_cast<std::size_t>(r * w + c)] = static_cast<T>(v.at(idx[0], idx[1], idx[2]));
    }
  return out;
}

struct Slice {
  int64_t w = 0, h = 0;
  std::vector<double> grey;  // 0..1
  std::vector<int> labels;
};

// The slice as voxels: grey image with each label's colour blended in at kFillAlpha.
SurfacePtr fill_surface(const Slice& s) {
  SurfacePtr surf(cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(s.w), static_cast<int>(s.h)),
                  cairo_surface_destroy);
  cairo_surface_flush(surf.get());
  unsigned char* data = cairo_image_surface_get_data(surf.get());
  const int stride = cairo_image_surface_get_stride(surf.get());
  for (int64_t r = 0; r < s.h; ++r)
    for (int64_t c = 0; c < s.w; ++c) {
      const std::size_t i = static_cast<std::size_t>(r * s.w + c);
      Rgb px{s.grey[i], s.grey[i], s.grey[i]};
      if (s.labels[i] != 0) {
        const Rgb l = label_colour(s.labels[i]);
        px = {(1 - kFillAlpha) * px.r + kFillAlpha * l.r, (1 - kFillAlpha) * px.g + kFillAlpha * l.g,
              (1 - kFillAlpha) * px.b + kFillAlpha * l.b};
      }
      auto* p = reinterpret_cast<uint32_t*>(data + r * stride) + c;
      *p = (static_cast<uint32_t>(std::lround(px.r * 255)) << 16) |
           (static_cast<uint32_t>(std::lround(px.g * 255)) << 8) | static_cast<uint32_t>(std::lround(px.b * 255));
    }
  cairo_surface_mark_dirty(surf.get());
  return surf;
}

// Label borders as lines along voxel edges, in the colour of the label inside.
void outline(cairo_t* cr, const Slice& s, double sx, double sy) {
  std::map<int, std::vector<std::array<double, 4>>> edges;
  auto label = [&](int64_t r, int64_t c) {
    return (r < 0 || c < 0 || r >= s.h || c >= s.w) ? 0 : s.labels[static_cast<std::size_t>(r * s.w + c)];
  };
  for (int64_t r = 0; r <= s.h; ++r)
    for (int64_t c = 0; c <= s.w; ++c) {
      const int here = label(r, c), left = label(r, c - 1), up = label(r - 1, c);
      for (int v : {here, left})
        if (here != left && v != 0) edges[v].push_back({c * sx, r * sy, c * sx, (r + 1) * sy});
      for (int v : {here, up})
        if (here != up && v != 0) edges[v].push_back({c * sx, r * sy, (c + 1) * sx, r * sy});
    }
  cairo_set_line_width(cr, 1.5);
  for (const auto& [value, segs] : edges) {
    const Rgb c = label_colour(value);
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    for (const auto& e : segs) {
      cairo_move_to(cr, e[0], e[1]);
      cairo_line_to(cr, e[2], e[3]);
    }
    cairo_stroke(cr);
  }
}

void draw_view(cairo_t* cr, const Slice& s, const ViewRect& rect) {
  const double sx = static_cast<double>(rect.width) / static_cast<double>(s.w);
  const double sy = static_cast<double>(rect.height) / static_cast<double>(s.h);
  SurfacePtr surf = fill_surface(s);
  cairo_save(cr);
  cairo_translate(cr, rect.x, rect.y);
  cairo_rectangle(cr, 0, 0, rect.width, rect.height);
  cairo_clip(cr);
  cairo_save(cr);
  cairo_scale(cr, sx, sy);
  cairo_set_source_surface(cr, surf.get(), 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_paint(cr);
  cairo_restore(cr);
  outline(cr, s, sx, sy);
  cairo_restore(cr);
}

void text(cairo_t* cr, const std::string& s, double x, double y, double size) {
  cairo_set_font_size(cr, size);
  cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
  cairo_move_to(cr, x, y);
  cairo_show_text(cr, s.c_str());
}

// The values present in the segmentation or reference, named by the legend (in its order), then
// the unnamed ones.
std::vector<LegendEntry> shown_legend(const OverlayInput& in) {
  std::set<int> present;
  for (const Volume* v : {in.segmentation, in.reference})
    if (v)
      visit_pixels(*v, [&](const auto* p) {
        for (int64_t i = 0; i < v->numel(); ++i)
          if (p[i] != 0) present.insert(static_cast<int>(p[i]));
      });
  std::vector<LegendEntry> out;
  for (const auto& e : in.legend)
    if (present.erase(e.value)) out.push_back(e);
  for (int v : present) out.push_back({v, concat("label ", v)});
  return out;
}

void draw_legend(cairo_t* cr, const std::vector<LegendEntry>& entries, double x, double y) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double top = y + static_cast<double>(i) * kLegendRow;
    const Rgb c = label_colour(entries[i].value);
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_rectangle(cr, x, top + 2, 14, 14);
    cairo_fill(cr);
    text(cr, concat(entries[i].value, "  ", entries[i].name), x + 20, top + 14, 12);
  }
}

cairo_status_t append_png(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

void check_shapes(const OverlayInput& in) {
  MEDSEG_CHECK(in.image && in.segmentation, "overlay: an image and a segmentation are needed");
  for (const Volume* v : {in.segmentation, in.reference})
    MEDSEG_CHECK(!v || v->shape() == in.image->shape(), "overlay of '", in.title, "': image shape ",
                 shape_str(in.image->shape()), " differs from the segmentation's ", shape_str(v->shape()));
}

std::string render(const OverlayInput& in) {
  const auto legend = shown_legend(in);
  const Layout layout = overlay_layout(in.image->shape(), in.image->geometry(), in.reference != nullptr, legend.size());
  const auto specs = patient_views(in.image->shape(), in.image->geometry());
  SliceChoice choice = slices_through_largest_structure(*in.segmentation);
  if (!choice.found && in.reference) choice = slices_through_largest_structure(*in.reference);
  const auto [lo, hi] = window(*in.image);

  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, layout.width, layout.height),
                     cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr(cairo_create(surface.get()), cairo_destroy);
  cairo_set_source_rgb(cr.get(), 0, 0, 0);
  cairo_paint(cr.get());
  cairo_select_font_face(cr.get(), "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  text(cr.get(), in.title, kMargin, 21, 16);
  const std::vector<std::pair<std::string, const Volume*>> rows = {{"segmentation", in.segmentation},
                                                                   {"reference", in.reference}};
  for (std::size_t r = 0; r < rows.size() && rows[r].second; ++r)
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const ViewSpec& spec = specs[i];
      ViewRect rect = layout.views[i];
      rect.y += static_cast<int>(r) * layout.row_step;
      const int64_t slice = choice.index[spec.slice_axis];
      Slice s;
      const auto grey = cut<double>(*in.image, spec, slice, s.w, s.h);
      for (double g : grey) s.grey.push_back(std::isfinite(g) ? std::clamp((g - lo) / (hi - lo), 0.0, 1.0) : 0.0);
      s.labels = cut<int>(*rows[r].second, spec, slice, s.w, s.h);
      draw_view(cr.get(), s, rect);
      text(cr.get(), concat(rows[r].first, ": ", spec.name, " ", slice), rect.x, rect.y - 5, 11);
    }
  const ViewRect& last = layout.views.back();
  draw_legend(cr.get(), legend, last.x + last.width + kMargin, kTitle + kCaption);
  cairo_surface_flush(surface.get());
  std::string png;
  MEDSEG_CHECK(cairo_surface_write_to_png_stream(surface.get(), append_png, &png) == CAIRO_STATUS_SUCCESS,
               "overlay of '", in.title, "': PNG encoding failed");
  return png;
}

}  // namespace

bool overlays_available() { return true; }

void write_overlay(const std::string& png_path, const OverlayInput& in) {
  check_shapes(in);
  const std::string png = render(in);
  const fs::path folder = fs::path(png_path).parent_path();
  std::error_code ec;
  if (!folder.empty()) fs::create_directories(folder, ec);
  MEDSEG_CHECK_FILE(!ec, png_path, "cannot create its folder ", folder.string(), ": ", ec.message());
  write_file_atomic(png_path, png);
}

}  // namespace medseg::visualization
