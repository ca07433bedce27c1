// Metrics log (JSON lines), EMA, and the progress.png figure.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "support/test_support.h"
#include "training/metrics_log.h"
#include "training/progress_plot.h"

using namespace medseg;
using namespace medseg::training;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<EpochMetrics> fake_log(int n) {
  std::vector<EpochMetrics> log;
  std::optional<double> ema;
  for (int e = 0; e < n; ++e) {
    EpochMetrics m;
    m.epoch = e;
    m.train_loss = -0.2 - 0.6 * (1 - std::exp(-e / 15.0));
    m.val_loss = m.train_loss + 0.05 + 0.02 * std::sin(e);
    m.pseudo_dice = {0.3 + 0.6 * (1 - std::exp(-e / 12.0)), e < 3 ? kNaN : 0.5};
    m.mean_fg_dice = nanmean(m.pseudo_dice);
    ema = update_ema(ema, m.mean_fg_dice);
    m.ema_pseudo_dice = *ema;
    m.lr = 1e-2 * std::pow(1 - e / 100.0, 0.9);
    m.epoch_time = 30 + (e % 7);
    log.push_back(m);
  }
  return log;
}
}  // namespace

TEST(TrainingMetricsLog, EmaAndNanmeanFollowNnUNet) {
  EXPECT_DOUBLE_EQ(update_ema(std::nullopt, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(update_ema(0.5, 1.0), 0.55);  // 0.9 * 0.5 + 0.1 * 1
  EXPECT_DOUBLE_EQ(nanmean({0.2, kNaN, 0.4}), 0.3);
  EXPECT_TRUE(std::isnan(nanmean({kNaN})));
}

TEST(TrainingMetricsLog, JsonLinesRoundTripWithNaN) {
  test::TempDir dir("mlog");
  const std::string path = dir / "logs/metrics.jsonl";
  const auto log = fake_log(4);
  for (const auto& m : log) append_metrics(path, m);
  const auto back = read_metrics(path);
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back[2].epoch, 2);
  EXPECT_DOUBLE_EQ(back[2].train_loss, log[2].train_loss);
  EXPECT_TRUE(std::isnan(back[0].pseudo_dice[1]));  // written as null
  EXPECT_DOUBLE_EQ(back[3].pseudo_dice[1], 0.5);
  EXPECT_DOUBLE_EQ(back[3].ema_pseudo_dice, log[3].ema_pseudo_dice);
  const auto arr = metrics_from_json_array(to_json(log));
  EXPECT_DOUBLE_EQ(arr[1].lr, log[1].lr);

  // One object per line with the documented keys.
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  const auto j = nlohmann::json::parse(first);
  for (const char* k : {"epoch", "train_loss", "val_loss", "pseudo_dice", "ema_pseudo_dice", "lr", "epoch_time"})
    EXPECT_TRUE(j.contains(k)) << k;

  truncate_metrics(path, 2);
  EXPECT_EQ(read_metrics(path).size(), 2u);
}

TEST(TrainingMetricsLog, TornLastLineIsDroppedButBadLinesAreErrors) {
  test::TempDir dir("mlog2");
  const std::string path = dir / "m.jsonl";
  append_metrics(path, fake_log(1)[0]);
  std::ofstream(path, std::ios::app) << "{\"epoch\": 1, \"train_lo";  // killed mid-append
  EXPECT_EQ(read_metrics(path).size(), 1u);
  std::ofstream(path, std::ios::app) << "\n";
  append_metrics(path, fake_log(1)[0]);
  EXPECT_THROW(read_metrics(path), FileError);
}

TEST(TrainingProgressPlot, WritesADecodablePngOfTheExpectedSize) {
  if (!progress_plot_available()) GTEST_SKIP() << "this build has no cairo (MEDSEG_WITH_CAIRO=OFF)";
  test::TempDir dir("plot");
  const std::string path = dir / "progress.png";
  write_progress_plot(path, fake_log(60));
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&img, path.c_str())) << img.message;
  EXPECT_EQ(img.width, 1200u);
  EXPECT_EQ(img.height, 1500u);
  img.format = PNG_FORMAT_RGB;
  std::vector<unsigned char> px(PNG_IMAGE_SIZE(img));
  ASSERT_TRUE(png_image_finish_read(&img, nullptr, px.data(), 0, nullptr)) << img.message;
  // Curves were drawn: strongly blue, red and green pixels exist, and most of the image is white.
  long blue = 0, red = 0, green = 0, white = 0;
  for (std::size_t i = 0; i + 2 < px.size(); i += 3) {
    const int r = px[i], g = px[i + 1], b = px[i + 2];
    blue += b > 150 && r < 80;
    red += r > 180 && g < 80 && b < 80;
    green += g > 120 && r < 60 && b < 90;
    white += r == 255 && g == 255 && b == 255;
  }
  EXPECT_GT(blue, 1000);
  EXPECT_GT(red, 500);
  EXPECT_GT(green, 500);
  EXPECT_GT(white, static_cast<long>(img.width * img.height / 2));
  // The smaller figure and the empty log work too.
  write_progress_plot(dir / "empty.png", {}, PlotSize{600, 300});
  EXPECT_TRUE(std::filesystem::exists(dir / "empty.png"));
  EXPECT_THROW(write_progress_plot(dir / "x.png", {}, PlotSize{10, 10}), Error);
}

TEST(TrainingProgressPlot, WithoutCairoTrainingGoesOnWithoutThePicture) {
  if (progress_plot_available()) GTEST_SKIP() << "this build has cairo";
  test::TempDir dir("plot");
  EXPECT_NO_THROW(write_progress_plot(dir / "progress.png", fake_log(3)));
  EXPECT_FALSE(std::filesystem::exists(dir / "progress.png"));
}
