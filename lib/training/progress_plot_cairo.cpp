#include "training/progress_plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "core/error.h"
#include "core/json_io.h"

namespace medseg::training {
namespace {

struct Rgb {
  double r, g, b;
};
constexpr Rgb kBlue{0.12, 0.35, 0.75}, kRed{0.85, 0.15, 0.15}, kGreen{0.1, 0.6, 0.2}, kBlack{0, 0, 0},
    kGrid{0.88, 0.88, 0.88};

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  // A non-empty range with a little headroom, so flat lines are not drawn on the frame.
  Range padded() const {
    Range r = *this;
    if (!std::isfinite(r.lo)) return {0, 1};
    if (r.hi - r.lo < 1e-12) r.lo -= 0.5 * std::max(std::abs(r.lo), 1e-3), r.hi += 0.5 * std::max(std::abs(r.hi), 1e-3);
    const double pad = 0.05 * (r.hi - r.lo);
    return {r.lo - pad, r.hi + pad};
  }
};

// About `count` round tick values (1, 2, 5 x 10^k) inside [lo, hi].
std::vector<double> ticks(double lo, double hi, int count = 6) {
  const double raw = (hi - lo) / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step)
    out.push_back(std::abs(t) < 1e-12 * step ? 0 : t);
  return out;
}

std::string label(double v) {
  char buf[32];
  const double a = std::abs(v);
  if (a != 0 && (a < 1e-3 || a >= 1e5))
    std::snprintf(buf, sizeof buf, "%.1e", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// One panel: a frame at (x0, y0, w, h) in pixels with a left and optional right value axis.
class Panel {
 public:
  Panel(cairo_t* cr, double x0, double y0, double w, double h, Range xr, Range yl, Range yr = {})
      : cr_(cr), x0_(x0), y0_(y0), w_(w), h_(h), xr_(xr), yl_(yl), yr_(yr) {}

  double px(double x) const { return x0_ + (x - xr_.lo) / (xr_.hi - xr_.lo) * w_; }
  double py(double y, bool right) const {
    const Range& r = right ? yr_ : yl_;
    return y0_ + h_ - (y - r.lo) / (r.hi - r.lo) * h_;
  }

  void frame(const std::string& xlabel, const std::string& ylabel, const std::string& yrlabel) {
    cairo_set_line_width(cr_, 1);
    for (double t : ticks(yl_.lo, yl_.hi)) line_at(x0_, py(t, false), x0_ + w_, py(t, false), kGrid);
    for (double t : ticks(xr_.lo, xr_.hi)) line_at(px(t), y0_, px(t), y0_ + h_, kGrid);
    set(kBlack);
    cairo_rectangle(cr_, x0_, y0_, w_, h_);
    cairo_stroke(cr_);
    cairo_set_font_size(cr_, 14);
    for (double t : ticks(xr_.lo, xr_.hi)) text(label(t), px(t), y0_ + h_ + 18, 0.5);
    for (double t : ticks(yl_.lo, yl_.hi)) text(label(t), x0_ - 8, py(t, false) + 5, 1.0);
    if (!yrlabel.empty())
      for (double t : ticks(yr_.lo, yr_.hi)) text(label(t), x0_ + w_ + 8, py(t, true) + 5, 0.0);
    cairo_set_font_size(cr_, 16);
    text(xlabel, x0_ + w_ / 2, y0_ + h_ + 42, 0.5);
    vertical_text(ylabel, x0_ - 70, y0_ + h_ / 2);
    if (!yrlabel.empty()) vertical_text(yrlabel, x0_ + w_ + 75, y0_ + h_ / 2);
  }

  // A polyline through the finite points; NaN breaks the line.
  void series(const std::vector<double>& x, const std::vector<double>& y, Rgb c, bool right, bool dotted) {
    set(c);
    cairo_set_line_width(cr_, 2.5);
    if (dotted) {
      const double dash[] = {3, 4};
      cairo_set_dash(cr_, dash, 2, 0);
    }
    bool pen = false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(y[i])) {
        pen = false;
        continue;
      }
      if (pen)
        cairo_line_to(cr_, px(x[i]), py(y[i], right));
      else
        cairo_move_to(cr_, px(x[i]), py(y[i], right));
      pen = true;
    }
    if (x.size() == 1 && std::isfinite(y[0])) cairo_arc(cr_, px(x[0]), py(y[0], right), 3, 0, 2 * M_PI);
    cairo_stroke(cr_);
    cairo_set_dash(cr_, nullptr, 0, 0);
  }

  void legend(const std::vector<std::pair<std::string, std::pair<Rgb, bool>>>& entries) {
    const double lx = x0_ + 12, ly = y0_ + 12, row = 22;
    cairo_set_source_rgba(cr_, 1, 1, 1, 0.85);
    cairo_rectangle(cr_, lx, ly, 210, row * entries.size() + 10);
    cairo_fill(cr_);
    cairo_set_font_size(cr_, 14);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const double y = ly + 16 + row * i;
      const auto& [name, style] = entries[i];
      set(style.first);
      cairo_set_line_width(cr_, 2.5);
      if (style.second) {
        const double dash[] = {3, 4};
        cairo_set_dash(cr_, dash, 2, 0);
      }
      cairo_move_to(cr_, lx + 8, y);
      cairo_line_to(cr_, lx + 40, y);
      cairo_stroke(cr_);
      cairo_set_dash(cr_, nullptr, 0, 0);
      set(kBlack);
      text(name, lx + 48, y + 5, 0.0);
    }
  }

 private:
  void set(Rgb c) { cairo_set_source_rgb(cr_, c.r, c.g, c.b); }
  void line_at(double x1, double y1, double x2, double y2, Rgb c) {
    set(c);
    cairo_move_to(cr_, x1, y1);
    cairo_line_to(cr_, x2, y2);
    cairo_stroke(cr_);
  }
  // align: 0 left, 0.5 centre, 1 right
  void text(const std::string& s, double x, double y, double align) {
    cairo_text_extents_t e;
    cairo_text_extents(cr_, s.c_str(), &e);
    cairo_move_to(cr_, x - align * e.x_advance, y);
    cairo_show_text(cr_, s.c_str());
  }
  void vertical_text(const std::string& s, double x, double y) {
    cairo_save(cr_);
    cairo_translate(cr_, x, y);
    cairo_rotate(cr_, -M_PI / 2);
    text(s, 0, 0, 0.5);
    cairo_restore(cr_);
  }

  cairo_t* cr_;
  double x0_, y0_, w_, h_;
  Range xr_, yl_, yr_;
};

cairo_status_t append_png(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

std::vector<double> column(const std::vector<EpochMetrics>& log, const std::function<double(const EpochMetrics&)>& f) {
  std::vector<double> v;
  for (const auto& m : log) v.push_back(f(m));
  return v;
}

}  // namespace

bool progress_plot_available() { return true; }

void write_progress_plot(const std::string& png_path, const std::vector<EpochMetrics>& log, PlotSize size) {
  MEDSEG_CHECK(size.width >= 400 && size.panel_height >= 200, "progress plot: image too small");
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, size.width, 3 * size.panel_height), cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr(cairo_create(surface.get()), cairo_destroy);
  cairo_set_source_rgb(cr.get(), 1, 1, 1);
  cairo_paint(cr.get());
  cairo_select_font_face(cr.get(), "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

  const auto epoch = column(log, [](const EpochMetrics& m) { return static_cast<double>(m.epoch); });
  const auto train = column(log, [](const EpochMetrics& m) { return m.train_loss; });
  const auto val = column(log, [](const EpochMetrics& m) { return m.val_loss; });
  const auto dice = column(log, [](const EpochMetrics& m) { return m.mean_fg_dice; });
  const auto ema = column(log, [](const EpochMetrics& m) { return m.ema_pseudo_dice; });
  const auto time = column(log, [](const EpochMetrics& m) { return m.epoch_time; });
  const auto lr = column(log, [](const EpochMetrics& m) { return m.lr; });

  Range xr;
  for (double e : epoch) xr.add(e);
  xr = xr.padded();
  auto range_of = [](std::initializer_list<const std::vector<double>*> cols) {
    Range r;
    for (const auto* c : cols)
      for (double v : *c) r.add(v);
    return r.padded();
  };

  const double left = 110, right = 110, top = 50, bottom = 70;
  const double w = size.width - left - right, h = size.panel_height - top - bottom;
  auto panel_top = [&](int i) { return i * size.panel_height + top; };

  Panel losses(cr.get(), left, panel_top(0), w, h, xr, range_of({&train, &val}), range_of({&dice, &ema}));
  losses.frame("epoch", "loss", "pseudo dice");
  losses.series(epoch, train, kBlue, false, false);
  losses.series(epoch, val, kRed, false, false);
  losses.series(epoch, dice, kGreen, true, true);
  losses.series(epoch, ema, kGreen, true, false);
  losses.legend({{"loss_tr", {kBlue, false}},
                 {"loss_val", {kRed, false}},
                 {"pseudo dice", {kGreen, true}},
                 {"pseudo dice (mov. avg.)", {kGreen, false}}});

  Panel times(cr.get(), left, panel_top(1), w, h, xr, range_of({&time}));
  times.frame("epoch", "time [s]", "");
  times.series(epoch, time, kBlue, false, false);
  times.legend({{"epoch duration", {kBlue, false}}});

  Panel rates(cr.get(), left, panel_top(2), w, h, xr, range_of({&lr}));
  rates.frame("epoch", "learning rate", "");
  rates.series(epoch, lr, kBlue, false, false);
  rates.legend({{"learning rate", {kBlue, false}}});

  cairo_surface_flush(surface.get());
  std::string png;
  MEDSEG_CHECK_FILE(cairo_surface_write_to_png_stream(surface.get(), append_png, &png) == CAIRO_STATUS_SUCCESS,
                    png_path, "PNG encoding failed");
  write_file_atomic(png_path, png);
}

}  // namespace medseg::training
