// Messages that lost their context (issue 15): a JSON number overflow reported without the file, an
// integer out of range silently wrapped, a checkpoint header that disagrees with its data accepted
// (or refused with a torch backtrace), a file_ending mismatch reported as "the dataset has no cases".
// Each row: one bad file, the CLI that reads it, and what its single error line must say.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "support/bad_input.h"
#include "checkpoint/container.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

struct Row {
  std::string name;
  std::string app;
  // Writes the bad file(s) into `dir` and returns the CLI's arguments.
  std::function<std::string(const test::TempDir& dir)> prepare;
  std::vector<std::string> fragments;
  bool whole_output_one_line = false;  // nothing else printed at all (medseg_checkpoint)
};

bool app_built(const std::string& app) {
  const char* bin = std::getenv("MEDSEG_BIN_DIR");
  return bin && fs::exists(fs::path(bin) / app);
}

void run_rows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    SCOPED_TRACE(row.app + ": " + row.name);
    if (!app_built(row.app)) continue;  // ITK apps in a build without ITK
    test::TempDir dir("badmsg");
    const std::string args = row.prepare(dir);
    const auto r =
        test::run_cli(row.app, args,
                      "MEDSEG_RAW=" + (dir / "raw") + " MEDSEG_PREPROCESSED=" + (dir / "pp") + " MEDSEG_NUM_THREADS=1");
    test::expect_refused(r, row.app, row.fragments);
    if (row.whole_output_one_line) { EXPECT_EQ(test::lines_of(r.output).size(), 1u) << r.output; }
  }
}

// The JSON text of `j` with the number `marker` spelled as `spelling` (1e400, 99999999999999999999):
// nlohmann::json cannot hold these values, so they are put into the text.
void write_with_number(const std::string& path, const json& j, const std::string& marker, const std::string& spelling) {
  std::string text = j.dump(2);
  const auto p = text.find(marker);
  ASSERT_NE(p, std::string::npos);
  text.replace(p, marker.size(), spelling);
  std::ofstream(path) << text;
}

std::string plans_with_batch(const test::TempDir& dir, const std::string& spelling) {
  json plans = read_json(test::source_path("tests/data/planning/nnUNetPlans_hippocampus.json"));
  plans["configurations"]["3d_fullres"]["batch_size"] = 123456789;
  write_with_number(dir / "plans.json", plans, "123456789", spelling);
  write_json(dir / "dataset.json", {{"channel_names", {{"0", "MRI"}}},
                                    {"labels", {{"background", 0}, {"Anterior", 1}, {"Posterior", 2}}},
                                    {"numTraining", 5},
                                    {"file_ending", ".nii.gz"}});
  return "--plans " + (dir / "plans.json") + " --dataset-json " + (dir / "dataset.json") +
         " -c 3d_fullres --no-forward";
}

std::string trainer_with_epochs(const test::TempDir& dir, const std::string& spelling) {
  write_with_number(dir / "cfg.json", {{"name", "Tiny"}, {"num_epochs", 123456789}}, "123456789", spelling);
  return "901 3d_fullres 0 --tr " + (dir / "cfg.json");
}

// A small valid archive: a float32 [4, 3] tensor and an int64 [1] one.
std::string write_checkpoint(const test::TempDir& dir) {
  checkpoint::TensorArchive a;
  a.meta = {{"kind", "test"}};
  a.tensors.emplace_back("weights/w", torch::arange(12, torch::kFloat).reshape({4, 3}));
  a.tensors.emplace_back("steps", torch::tensor({int64_t{7}}));
  const std::string path = dir / "ck.ckpt";
  checkpoint::write_archive(path, a);
  return path;
}

// Rewrites a checkpoint's JSON header with `edit` and lays the file out again exactly as the writer
// does (64-byte aligned data, payload size and CRC32 in the trailer): the result is a checksum-valid
// file whose header disagrees with its data, as an editing tool or a hostile file would make it.
void rewrite_header(const std::string& path, const std::function<void(json&)>& edit) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data() + 16, 8);
  const auto align = [](uint64_t v) { return (v + 63) / 64 * 64; };
  json header = json::parse(bytes.substr(24, header_size));
  const std::string data = bytes.substr(align(24 + header_size), bytes.size() - 16 - align(24 + header_size));
  edit(header);
  const std::string text = header.dump();
  std::string out = bytes.substr(0, 16);
  const uint64_t size = text.size();
  out.append(reinterpret_cast<const char*>(&size), 8);
  out += text;
  out.resize(align(out.size()), '\0');
  out += data;
  const uint64_t payload = out.size();
  const auto crc = static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size())));
  out.append(reinterpret_cast<const char*>(&payload), 8);
  out.append(reinterpret_cast<const char*>(&crc), 4);
  out += "CKOK";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << out;
}

std::string tampered(const test::TempDir& dir, const std::function<void(json& tensor)>& edit) {
  const std::string path = write_checkpoint(dir);
  rewrite_header(path, [&](json& h) { edit(h["tensors"][0]); });
  return path;
}

// dataset.json says .nii.gz; the files are .nii (empty: the listing fails before any image is read).
std::string nii_dataset(const test::TempDir& dir) {
  const std::string ds = dir / "raw/Dataset901_Endings";
  fs::create_directories(ds + "/imagesTr");
  fs::create_directories(ds + "/labelsTr");
  for (const char* c : {"case_000", "case_001"}) {
    std::ofstream(ds + "/imagesTr/" + c + "_0000.nii");
    std::ofstream(ds + "/labelsTr/" + c + ".nii");
  }
  write_json(ds + "/dataset.json", {{"channel_names", {{"0", "CT"}}},
                                    {"labels", {{"background", 0}, {"a", 1}}},
                                    {"numTraining", 2},
                                    {"file_ending", ".nii.gz"}});
  return ds;
}

const std::vector<std::string> kEndingFragments = {
    "imagesTr",
    "no CASE_XXXX.nii.gz images (file_ending is '.nii.gz') and no DICOM series folders, found: "
    "case_000_0000.nii, case_001_0000.nii"};

}  // namespace

TEST(BadInputMessages, JsonNumbersNameFileAndKey) {
  run_rows({
      {"1e400 in plans",
       "medseg_model_info",
       [](const test::TempDir& d) { return plans_with_batch(d, "1e400"); },
       {"plans.json: invalid JSON (number overflow parsing '1e400')"}},
      {"99999999999999999999 as batch_size",
       "medseg_model_info",
       [](const test::TempDir& d) { return plans_with_batch(d, "99999999999999999999"); },
       {"plans.json: configuration '3d_fullres': key 'batch_size' is 1e+20 (expected an integer"}},
      {"1e400 in a trainer config",
       "medseg_train",
       [](const test::TempDir& d) { return trainer_with_epochs(d, "1e400"); },
       {"cfg.json: invalid JSON (number overflow parsing '1e400')"}},
      {"99999999999999999999 as num_epochs",
       "medseg_train",
       [](const test::TempDir& d) { return trainer_with_epochs(d, "99999999999999999999"); },
       {"cfg.json: key 'num_epochs' is 1e+20 (must be 1..1000000)"}},
      {"1e400 in dataset.json",
       "medseg_verify_dataset",
       [](const test::TempDir& d) {
         const std::string ds = nii_dataset(d);
         json j = read_json(ds + "/dataset.json");
         j["numTraining"] = 123456789;
         write_with_number(ds + "/dataset.json", j, "123456789", "1e400");
         return "-i " + ds;
       },
       {"dataset.json: invalid JSON (number overflow parsing '1e400')"}},
  });
}

TEST(BadInputMessages, CheckpointHeaderMustMatchItsData) {
  const std::string app = "medseg_checkpoint";
  run_rows({
      {"dtype float64 over a float32 blob",
       app,
       [](const test::TempDir& d) { return "info " + tampered(d, [](json& t) { t["dtype"] = "float64"; }); },
       {"ck.ckpt: tensor 'weights/w': header says dtype float64 but its data blob holds float32"},
       true},
      {"dtype int32 over a float32 blob (same item size)",
       app,
       [](const test::TempDir& d) { return "info " + tampered(d, [](json& t) { t["dtype"] = "int32"; }); },
       {"tensor 'weights/w': header says dtype int32 but its data blob holds float32"},
       true},
      {"unknown dtype",
       app,
       [](const test::TempDir& d) { return "info " + tampered(d, [](json& t) { t["dtype"] = "float33"; }); },
       {"tensor 'weights/w': unknown dtype 'float33'"},
       true},
      {"shape beyond the blob",
       app,
       [](const test::TempDir& d) { return "info " + tampered(d, [](json& t) {
                                             t["shape"] = {9, 3};
                                           }); },
       {"ck.ckpt: tensor 'weights/w': shape [9,3] with strides [3,1] and offset 0 needs more than the 48 bytes"},
       true},
      {"offset beyond the blob",
       app,
       [](const test::TempDir& d) { return "info " + tampered(d, [](json& t) { t["storage_offset"] = 1; }); },
       {"tensor 'weights/w'", "needs more than the 48 bytes"},
       true},
      {"negative stride",
       app,
       [](const test::TempDir& d) { return "info " + tampered(d, [](json& t) {
                                             t["strides"] = {-3, 1};
                                           }); },
       {"tensor 'weights/w': negative shape or stride"},
       true},
      {"dtype mismatch read by diff",
       app,
       [](const test::TempDir& d) {
         const std::string bad = tampered(d, [](json& t) { t["dtype"] = "float64"; });
         return "diff " + bad + " " + bad;
       },
       {"ck.ckpt: tensor 'weights/w': header says dtype float64"},
       true},
  });
}

TEST(BadInputMessages, FileEndingMismatchSaysWhatWasExpectedAndFound) {
  run_rows({
      {"fingerprint", "medseg_extract_fingerprint",
       [](const test::TempDir& d) {
         nii_dataset(d);
         return std::string("-d 901");
       },
       kEndingFragments},
      {"plan and preprocess", "medseg_plan_and_preprocess",
       [](const test::TempDir& d) {
         nii_dataset(d);
         return "-d 901 --no-progress";
       },
       kEndingFragments},
  });
}
