// medseg_serve driven by a real client (scripts/check_serve.py: Python's requests and plain sockets) on a free
// loopback port: two models, uploads as a body and as multipart, concurrent jobs, the queue bound, cancels,
// every error status of docs/serve.md, 1000 idle connections, a dropped upload; each result byte for byte what
// medseg_predict writes for the same file. Then a token-protected server, the refusal of a token-less
// non-loopback bind, and SIGTERM with a job running (exit 0, nothing left in the scratch folder).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <png.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <fstream>
#include <regex>

#include "dicom_test_util.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

const char* kModel1Name = "Dataset901_One/nnUNetTrainer__nnUNetPlans__3d_fullres";

// The one-channel model (labels background, a, b; seed 17) in d/results/<kModel1Name>.
std::string one_channel_model(const test::TempDir& d) {
  test::TinyModelSpec one;
  one.labels = {"background", "a", "b"};
  auto net = test::tiny_network(one, 17);
  const std::string folder = d / ("results/" + std::string(kModel1Name));
  test::write_model_folder(folder, one, net, {"0"});
  return folder;
}

struct ServeFixture {
  std::string model1, model2, image1, slow, expect1, expect2, dicom_zip, expect_dicom;
  std::vector<std::string> image2;
};

// Two model folders (one and two channels), their inputs, and medseg_predict's outputs for them.
ServeFixture make_fixture(const test::TempDir& d) {
  ServeFixture f;
  f.model1 = one_channel_model(d);
  test::TinyModelSpec two;
  two.channels = 2;
  auto net2 = test::tiny_network(two, 23);
  f.model2 = d / "results/two";
  test::write_model_folder(f.model2, two, net2, {"0", "1"});

  fs::create_directories(d / "in1");
  fs::create_directories(d / "in2");
  f.image1 = d / "in1/case_0000.nii.gz";
  io::write_image(f.image1, test::wavy_image({19, 23, 27}, 1));  // odd sizes: edge tiles
  for (int c = 0; c < 2; ++c) {
    f.image2.push_back(d / ("in2/case_000" + std::to_string(c) + ".nii.gz"));
    io::write_image(f.image2.back(), test::wavy_image({17, 21, 25}, 5 + c));
  }
  f.slow = d / "slow_0000.nii.gz";
  io::write_image(f.slow, test::wavy_image({64, 96, 96}, 3));
  for (const auto& [model, in, out] :
       {std::tuple{f.model1, d / "in1", d / "out1"}, {f.model2, d / "in2", d / "out2"}}) {
    const auto r = test::run_cli("medseg_predict",
                                 "-i " + in + " -o " + out + " -m " + model + " --threads 1 --disable_progress_bar");
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  // A DICOM series, zipped by Python's zipfile, and medseg_predict's NIfTI of it.
  test::write_dicom_series(d / "ct", test::ct_series());
  f.dicom_zip = d / "ct.zip";
  const auto z = test::run_cli("/usr/bin/python3",
                               "-c 'import shutil, sys; shutil.make_archive(sys.argv[1], \"zip\", sys.argv[2])' " +
                                   (d / "ct") + " " + (d / "ct"));
  EXPECT_EQ(z.exit_code, 0) << z.output;
  const auto p = test::run_cli("medseg_predict", "-i " + f.dicom_zip + " -o " + (d / "outdcm") + " -m " + f.model1 +
                                                     " --threads 1 --output_format nifti --disable_progress_bar");
  EXPECT_EQ(p.exit_code, 0) << p.output;
  f.expect_dicom = d / "outdcm/ct.nii.gz";
  f.expect1 = d / "out1/case.nii.gz";
  f.expect2 = d / "out2/case.nii.gz";
  return f;
}

std::string python() {
  const char* py = std::getenv("MEDSEG_SERVE_PYTHON");
  return py ? py : "/usr/bin/python3";
}

test::CmdResult client(const std::string& args) {
  return test::run_cli(python(), test::source_path("scripts/check_serve.py") + " " + args);
}

int port_of(const std::string& output) {
  std::smatch m;
  static const std::regex re("listening on http://[^:]+:(\\d+)/");
  return std::regex_search(output, m, re) ? std::stoi(m[1].str()) : -1;
}

// The server's private folder inside `parent` ("" when there is none).
std::string scratch_in(const std::string& parent) {
  for (const auto& e : fs::directory_iterator(parent)) return e.path().string();
  return "";
}

}  // namespace

TEST(ServeCli, AClientGetsMedsegPredictsSegmentationsAndEveryErrorAsOneJsonLine) {
  test::TempDir d("serve");
  const ServeFixture f = make_fixture(d);
  fs::create_directories(d / "scratch");
  test::PausedCli server = test::start_cli_until("medseg_serve",
                                                 {"-m",
                                                  f.model1,
                                                  "-m",
                                                  "two=" + f.model2,
                                                  "--port",
                                                  "0",
                                                  "--threads",
                                                  "1",
                                                  "--max_queue",
                                                  "2",
                                                  "--result_ttl_s",
                                                  "1",
                                                  "--read_timeout_s",
                                                  "3",
                                                  "--upload_timeout_s",
                                                  "4",
                                                  "--stop_grace_s",
                                                  "1",
                                                  "--scratch",
                                                  d / "scratch"},
                                                 "listening on");
  ASSERT_TRUE(server.paused) << server.output;
  const int port = port_of(server.output);
  ASSERT_GT(port, 0) << server.output;
  const std::string scratch = scratch_in(d / "scratch");
  struct stat st {};
  ASSERT_EQ(::stat(scratch.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the scratch folder is private";

  const std::string url = "--url http://127.0.0.1:" + std::to_string(port);
  std::string image2 = f.image2[0] + " " + f.image2[1];
  const auto r =
      client(url + " --phase main --model1 " + kModel1Name + " --model2 two --image1 " + f.image1 + " --image2 " +
             image2 + " --expect1 " + f.expect1 + " --expect2 " + f.expect2 + " --slow " + f.slow + " --scratch " +
             scratch + " --dicom_zip " + f.dicom_zip + " --expect_dicom_nifti " + f.expect_dicom);
  EXPECT_EQ(r.exit_code, 0) << r.output;

  // SIGTERM with a job running: it is cancelled after --stop_grace_s, the server exits 0 and leaves nothing.
  const auto running = client(url + " --phase running --model1 " + std::string(kModel1Name) + " --slow " + f.slow);
  EXPECT_EQ(running.exit_code, 0) << running.output;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(test::signal_and_wait(server, SIGTERM), 0) << server.output;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_NE(server.output.find("medseg_serve: stopped"), std::string::npos) << server.output;
  EXPECT_FALSE(fs::exists(scratch)) << "the scratch folder outlived the server";
}

TEST(ServeCli, ATokenGuardsEveryRequestAndOnlyLoopbackIsServedWithoutOne) {
  test::TempDir d("servetok");
  const std::string model = one_channel_model(d);

  const auto open = test::run_cli("medseg_serve", "-m " + model + " --host 0.0.0.0 --port 0");
  EXPECT_NE(open.exit_code, 0);
  EXPECT_NE(open.output.find("not a loopback address: serving it needs --token_file"), std::string::npos)
      << open.output;

  const std::string token = "0123456789abcdef-test-token";
  const std::string token_file = d / "token";
  std::ofstream(token_file) << token << "\n";
  fs::permissions(token_file, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(token_file, fs::perms::group_read, fs::perm_options::add);
  const auto loose = test::run_cli("medseg_serve", "-m " + model + " --token_file " + token_file + " --port 0");
  EXPECT_NE(loose.exit_code, 0);
  EXPECT_NE(loose.output.find("readable by others"), std::string::npos) << loose.output;
  fs::permissions(token_file, fs::perms::group_read, fs::perm_options::remove);

  test::PausedCli server = test::start_cli_until(
      "medseg_serve", {"-m", model, "--port", "0", "--threads", "1", "--token_file", token_file}, "listening on");
  ASSERT_TRUE(server.paused) << server.output;
  const auto r = client("--url http://127.0.0.1:" + std::to_string(port_of(server.output)) +
                        " --phase token --model1 " + kModel1Name + " --token " + token);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::signal_and_wait(server, SIGINT), 0) << server.output;
}

namespace {

struct Rgb {
  int width = 0, height = 0;
  std::vector<uint8_t> px;  // r, g, b per pixel
};

Rgb read_rgb(const std::string& path) {
  Rgb out;
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path.c_str())) return out;
  img.format = PNG_FORMAT_RGB;
  out.px.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.px.data(), 0, nullptr)) return {};
  out.width = static_cast<int>(img.width);
  out.height = static_cast<int>(img.height);
  return out;
}

// The most frequent strongly coloured pixel value of `p` (a label's colour, not the grey image), and its count.
std::pair<std::array<int, 3>, int64_t> main_label_colour(const Rgb& p) {
  std::map<std::array<int, 3>, int64_t> n;
  for (std::size_t i = 0; i + 2 < p.px.size(); i += 3) {
    const int r = p.px[i], g = p.px[i + 1], b = p.px[i + 2];
    if (std::max({r, g, b}) - std::min({r, g, b}) > 80) ++n[{r, g, b}];
  }
  std::pair<std::array<int, 3>, int64_t> best{{0, 0, 0}, 0};
  for (const auto& [c, k] : n)
    if (k > best.second) best = {c, k};
  return best;
}

int64_t pixels_near(const Rgb& p, const std::array<int, 3>& c, int tolerance) {
  int64_t n = 0;
  for (std::size_t i = 0; i + 2 < p.px.size(); i += 3)
    n += std::abs(p.px[i] - c[0]) <= tolerance && std::abs(p.px[i + 1] - c[1]) <= tolerance &&
         std::abs(p.px[i + 2] - c[2]) <= tolerance;
  return n;
}

}  // namespace

// The page for people, in Debian's headless Chromium: a user's path (choose the model, set the file, press
// Segment) ends with the job done and its overlay picture on screen, seen in the screenshot's pixels.
TEST(ServeCli, ThePageUploadsWatchesAndShowsTheOverlay) {
  const std::string chromium = "/usr/bin/chromium-headless-shell";
  if (!fs::exists(chromium)) GTEST_SKIP() << "no " << chromium << " (scripts/install_deps.sh installs it)";
  test::TempDir d("servepage");
  const std::string model = one_channel_model(d);
  const std::string image = d / "page_0000.nii.gz";
  io::write_image(image, test::wavy_image({20, 40, 44}, 2));

  test::PausedCli server =
      test::start_cli_until("medseg_serve", {"-m", model, "--port", "0", "--threads", "1"}, "listening on");
  ASSERT_TRUE(server.paused) << server.output;
  const std::string shot = d / "page.png", overlay = d / "overlay.png";
  const auto r = test::run_cli(python(), test::source_path("scripts/check_serve_page.py") +
                                             " --url http://127.0.0.1:" + std::to_string(port_of(server.output)) +
                                             " --model " + kModel1Name + " --image " + image + " --chromium " +
                                             chromium + " --screenshot " + shot + " --overlay " + overlay);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::signal_and_wait(server, SIGTERM), 0) << server.output;

  // The overlay's main label colour covers on screen about what it covers in the picture (the page may scale
  // the picture down to its width: 1000 px into about 936).
  const Rgb page = read_rgb(shot), picture = read_rgb(overlay);
  ASSERT_GT(page.width, 0) << shot;
  ASSERT_GT(picture.width, 0) << overlay;
  const auto [colour, count] = main_label_colour(picture);
  ASSERT_GT(count, 200) << "the overlay shows no label";
  const double scale = std::min(1.0, 936.0 / picture.width);
  EXPECT_GT(pixels_near(page, colour, 40), static_cast<int64_t>(0.5 * count * scale * scale))
      << "the screenshot does not show the overlay's label colour (" << colour[0] << "," << colour[1] << ","
      << colour[2] << ")";
}

// The contract check: schemathesis (scripts/check_serve_contract.sh, from its venv: MEDSEG_SERVE_PYTHON, set by
// scripts/test.sh) generates requests from the served OpenAPI document and checks every answer against it.
TEST(ServeCli, EveryAnswerMatchesTheServedOpenApiDocument) {
  if (!std::getenv("MEDSEG_SERVE_PYTHON")) GTEST_SKIP() << "MEDSEG_SERVE_PYTHON unset (scripts/test.sh sets it)";
  test::TempDir d("servecontract");
  const std::string model = one_channel_model(d);
  const std::string token = "contract-token-0123456789abcdef";
  const std::string token_file = d / "token";
  std::ofstream(token_file) << token << "\n";
  fs::permissions(token_file, fs::perms::owner_read | fs::perms::owner_write);
  test::PausedCli server = test::start_cli_until(
      "medseg_serve", {"-m", model, "--port", "0", "--threads", "1", "--token_file", token_file}, "listening on");
  ASSERT_TRUE(server.paused) << server.output;
  const auto r = test::run_cli("/bin/bash", test::source_path("scripts/check_serve_contract.sh") +
                                                " http://127.0.0.1:" + std::to_string(port_of(server.output)) + " " +
                                                token + " 20");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::signal_and_wait(server, SIGTERM), 0) << server.output;
}
