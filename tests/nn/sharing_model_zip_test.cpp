// medseg_export_model_zip and medseg_install_model_zip as a user runs them (docs/model_sharing.md):
// a model folder survives export + install byte for byte; a damaged, hostile or foreign zip is
// refused with one line naming the zip's entry, and leaves the results root exactly as it was; an
// installed model never replaces an existing one without --overwrite. The zips the bad-input rows
// start from are rewritten here with libzip and zlib directly, not with medseg's own zip code.
#include <gtest/gtest.h>
#include <signal.h>
#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/json_io.h"
#include "inference_test_util.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

const std::string kZipModel = "Dataset999_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres";
const std::string kManifest = "medseg_model_zip.json";

using Entries = std::vector<std::pair<std::string, std::string>>;  // name -> bytes, in zip order

void write_bytes(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// A trained-looking model folder under RESULTS: folds 0 and 1 with checkpoint_final (fold 0 also
// checkpoint_best), and the side files a training run leaves, exported or not.
std::string make_model(const std::string& results) {
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 5);
  const std::string m = results + "/" + kZipModel;
  test::write_model_folder(m, s, net, {"0", "1"});
  fs::copy_file(m + "/fold_0/checkpoint_final.ckpt", m + "/fold_0/checkpoint_best.ckpt");
  write_bytes(m + "/dataset_fingerprint.json", "{\"spacings\": []}\n");
  write_bytes(m + "/postprocessing.json",
              "{\"keep_largest_component\": [], \"keep_largest_component_per_class\": []}\n");
  write_bytes(m + "/crossval_results_folds_0_1/summary.json", "{\"mean\": {}}\n");
  write_bytes(m + "/crossval_results_folds_0/summary.json", "{\"other folds\": 1}\n");  // not the exported folds
  write_bytes(m + "/fold_0/progress.png", std::string("\x89PNG\r\n\x1a\n fake", 14));
  write_bytes(m + "/fold_0/validation/summary.json", "{\"foreground_mean\": {}}\n");
  write_bytes(m + "/fold_0/validation/case_1.nii.gz", "a prediction, not exported");
  write_bytes(m + "/fold_0/metrics.jsonl", "{}\n");
  write_bytes(m + "/fold_0/training_log.txt", "log\n");
  return m;
}

// What a default export holds (relative to the model folder), written out by hand.
const std::set<std::string> kDefaultFiles = {"plans.json",
                                             "dataset.json",
                                             "dataset_fingerprint.json",
                                             "postprocessing.json",
                                             "crossval_results_folds_0_1/summary.json",
                                             "fold_0/checkpoint_final.ckpt",
                                             "fold_0/progress.png",
                                             "fold_0/validation/summary.json",
                                             "fold_1/checkpoint_final.ckpt"};

Entries read_zip(const std::string& path) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  EXPECT_NE(z, nullptr) << path;
  Entries out;
  if (!z) return out;
  for (zip_int64_t i = 0; i < zip_get_num_entries(z, 0); ++i) {
    zip_stat_t st;
    zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st);
    std::string bytes(st.size, '\0');
    zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
    EXPECT_EQ(zip_fread(f, bytes.data(), bytes.size()), static_cast<zip_int64_t>(bytes.size()));
    zip_fclose(f);
    out.emplace_back(st.name, bytes);
  }
  zip_discard(z);
  return out;
}

void write_zip(const std::string& path, const Entries& entries) {
  fs::remove(path);
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_EXCL, &err);
  ASSERT_NE(z, nullptr);
  for (const auto& [name, bytes] : entries) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    ASSERT_GE(zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8), 0) << name;
  }
  ASSERT_EQ(zip_close(z), 0) << zip_strerror(z);
}

std::string& entry(Entries& e, const std::string& name) {
  for (auto& [n, b] : e)
    if (n == name) return b;
  ADD_FAILURE() << "no entry " << name;
  static std::string none;
  return none;
}

std::string crc_hex(const std::string& bytes) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08lx",
                ::crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
  return buf;
}

// The manifest entry rewritten so that it agrees with `file`'s current bytes.
void refresh_manifest(Entries& e, const std::string& file) {
  json m = json::parse(entry(e, kManifest));
  for (auto& f : m["files"])
    if (f["path"] == file) {
      f["size"] = entry(e, file).size();
      f["crc32"] = crc_hex(entry(e, file));
    }
  entry(e, kManifest) = m.dump();
}

// A new entry, listed in the manifest with its true size and CRC: the zip and the manifest agree.
void add_listed(Entries& e, const std::string& name, const std::string& bytes) {
  e.insert(e.end() - 1, {name, bytes});  // before the manifest, which stays last
  json m = json::parse(entry(e, kManifest));
  m["files"].push_back({{"path", name}, {"size", bytes.size()}, {"crc32", crc_hex(bytes)}});
  entry(e, kManifest) = m.dump();
}

// The zip with the name of the entry `from` spelled `to` in its headers (same length): libzip cannot
// write a zip that holds a name twice, so the bytes are patched.
void rename_in_bytes(const std::string& zip_path, const std::string& from, const std::string& to) {
  std::string bytes = test::read_text(zip_path);
  for (auto at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1))
    bytes.replace(at, to.size(), to);
  write_bytes(zip_path, bytes);
}

void edit_manifest(Entries& e, const std::function<void(json&)>& fn) {
  json m = json::parse(entry(e, kManifest));
  fn(m);
  entry(e, kManifest) = m.dump();
}

// Lines of output that are not empty.
int line_count(const std::string& s) {
  int n = 0;
  std::size_t start = 0;
  while (start < s.size()) {
    const std::size_t end = s.find('\n', start);
    if (s.substr(start, end - start).find_first_not_of(" \r") != std::string::npos) ++n;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return n;
}

class ModelZip : public ::testing::Test {
 protected:
  void SetUp() override {
    model = make_model(d / "results");
    const auto r = test::run_cli("medseg_export_model_zip", "-m " + model + " -o " + zip);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // Installs `zip_path` into `root`, which already holds `root/occupant` (a folder of someone else's),
  // and checks the refusal every such case shares: non-zero exit, one line, `root` untouched.
  test::CmdResult install_refused(const std::string& zip_path, const std::string& root, const std::string& occupant,
                                  const std::string& extra_args = "") {
    write_bytes(root + "/" + occupant + "/notes.txt", "someone else's");
    const auto before = test::folder_snapshot(root);
    auto r = test::run_cli("medseg_install_model_zip", zip_path + " -o " + root + extra_args);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_EQ(line_count(r.output), 1) << r.output;
    EXPECT_EQ(test::folder_snapshot(root), before);
    return r;
  }
  test::TempDir d{"zip"};
  std::string model;
  std::string zip = d / "model.zip";
};

}  // namespace

TEST_F(ModelZip, ExportHoldsTheModelFilesAndAManifestOfThem) {
  std::set<std::string> names, expected;
  for (const auto& [n, b] : read_zip(zip)) names.insert(n);
  for (const auto& f : kDefaultFiles) expected.insert(kZipModel + "/" + f);
  expected.insert(kManifest);
  EXPECT_EQ(names, expected);

  Entries entries = read_zip(zip);
  const json m = json::parse(entry(entries, kManifest));
  EXPECT_EQ(m.at("format"), "medseg-model-zip");
  EXPECT_EQ(m.at("format_version"), 1);
  EXPECT_EQ(m.at("model_folder"), kZipModel);
  EXPECT_EQ(m.at("folds"), json({"0", "1"}));
  EXPECT_EQ(m.at("checkpoints"), json({"checkpoint_final.ckpt"}));
  ASSERT_EQ(m.at("files").size(), kDefaultFiles.size());
  for (const auto& f : m.at("files")) {  // sizes and CRCs of the files on disk, computed here
    const std::string rel = f.at("path").get<std::string>().substr(kZipModel.size() + 1);
    const std::string bytes = test::read_text(model + "/" + rel);
    EXPECT_EQ(f.at("size"), bytes.size()) << rel;
    EXPECT_EQ(f.at("crc32"), crc_hex(bytes)) << rel;
  }
}

TEST_F(ModelZip, InstallGivesTheSameFilesByteForByte) {
  const std::string root = d / "elsewhere/results";  // does not exist yet
  const auto r = test::run_cli("medseg_install_model_zip", zip + " -o " + root);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto installed = test::folder_snapshot(root + "/" + kZipModel);
  std::set<std::string> files;
  for (const auto& [rel, what] : installed)
    if (what != "<dir>") files.insert(rel);
  EXPECT_EQ(files, kDefaultFiles);
  for (const auto& rel : kDefaultFiles)
    EXPECT_TRUE(test::read_text(root + "/" + kZipModel + "/" + rel) == test::read_text(model + "/" + rel)) << rel;
  // Nothing else: no staging folder, no manifest file, nothing beside the model folder.
  EXPECT_EQ(test::folder_snapshot(root).size(), installed.size() + 2);  // + Dataset999_Tiny, the model folder
}

TEST_F(ModelZip, ExportByDatasetFoldAndCheckpointNames) {
  const std::string out = d / "f1.zip";
  const auto r = test::run_cli("medseg_export_model_zip",
                               "-d 999 -c 3d_fullres -f 0 -chk checkpoint_best checkpoint_final -o " + out,
                               "MEDSEG_RESULTS=" + d / "results");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> names;
  for (const auto& [n, b] : read_zip(out)) names.insert(n);
  const std::set<std::string> expected = {kManifest,
                                          kZipModel + "/plans.json",
                                          kZipModel + "/dataset.json",
                                          kZipModel + "/dataset_fingerprint.json",
                                          kZipModel + "/postprocessing.json",
                                          kZipModel + "/fold_0/checkpoint_best.ckpt",
                                          kZipModel + "/fold_0/checkpoint_final.ckpt",
                                          kZipModel + "/fold_0/progress.png",
                                          kZipModel + "/fold_0/validation/summary.json",
                                          kZipModel + "/crossval_results_folds_0/summary.json"};
  EXPECT_EQ(names, expected);
  // Installed into the default results root ($MEDSEG_RESULTS), like medseg_predict finds it.
  const std::string root = d / "root2";
  const auto i = test::run_cli("medseg_install_model_zip", out, "MEDSEG_RESULTS=" + root);
  ASSERT_EQ(i.exit_code, 0) << i.output;
  EXPECT_TRUE(test::read_text(root + "/" + kZipModel + "/fold_0/checkpoint_best.ckpt") ==
              test::read_text(model + "/fold_0/checkpoint_best.ckpt"));
}

TEST_F(ModelZip, ExistingModelFolderIsKeptWithoutOverwrite) {
  const std::string root = d / "root2";
  const std::string dest = root + "/" + kZipModel;
  write_bytes(dest + "/fold_0/checkpoint_final.ckpt", "the user's own model");
  write_bytes(dest + "/notes.txt", "keep me");
  const auto before = test::folder_snapshot(root);
  const auto r = test::run_cli("medseg_install_model_zip", zip + " -o " + root);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(line_count(r.output), 1) << r.output;
  EXPECT_NE(r.output.find(dest + ": already exists; pass --overwrite"), std::string::npos) << r.output;
  EXPECT_EQ(test::folder_snapshot(root), before);

  const auto o = test::run_cli("medseg_install_model_zip", zip + " -o " + root + " --overwrite");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_FALSE(fs::exists(dest + "/notes.txt"));
  EXPECT_TRUE(test::read_text(dest + "/fold_0/checkpoint_final.ckpt") ==
              test::read_text(model + "/fold_0/checkpoint_final.ckpt"));
  EXPECT_EQ(test::folder_snapshot(root).size(), test::folder_snapshot(dest).size() + 2);  // no old copy left aside
}

// ---- bad zips: one row per input ----

struct BadZip {
  std::string name;
  std::function<void(const std::string& good_zip, const std::string& bad_zip)> make;
  std::string expected;  // in the one error line, after "<bad zip>: "
};

void rewrite(const std::string& good, const std::string& bad, const std::function<void(Entries&)>& fn) {
  Entries e = read_zip(good);
  fn(e);
  write_zip(bad, e);
}

std::string raw(const std::string& path) { return test::read_text(path); }

const std::string kCk = kZipModel + "/fold_0/checkpoint_final.ckpt";

std::vector<BadZip> bad_zips() {
  return {
      {"DotDotEntry", [](auto& g, auto& b) { rewrite(g, b, [](Entries& e) { e.emplace_back("../evil", "x"); }); },
       "entry '../evil' climbs out of the destination"},
      {"NestedDotDotEntry",
       [](auto& g, auto& b) { rewrite(g, b, [](Entries& e) { e.emplace_back(kZipModel + "/../../../evil", "x"); }); },
       "entry '" + kZipModel + "/../../../evil' climbs out of the destination"},
      {"AbsoluteEntry",
       [](auto& g, auto& b) { rewrite(g, b, [](Entries& e) { e.emplace_back("/tmp/medseg_evil", "x"); }); },
       "entry '/tmp/medseg_evil' is an absolute path"},
      {"EntryNotInManifest",
       [](auto& g, auto& b) { rewrite(g, b, [](Entries& e) { e.emplace_back(kZipModel + "/extra.txt", "x"); }); },
       "entry '" + kZipModel + "/extra.txt' is not listed in the manifest"},
      {"ListedFileMissing",
       [](auto& g, auto& b) {
         rewrite(g, b, [](Entries& e) {
           e.erase(
               std::find_if(e.begin(), e.end(), [](const auto& x) { return x.first == kZipModel + "/dataset.json"; }));
         });
       },
       "entry '" + kZipModel + "/dataset.json' is listed in the manifest but missing"},
      {"MissingManifest", [](auto& g, auto& b) { rewrite(g, b, [](Entries& e) { e.pop_back(); }); },
       "no medseg_model_zip.json manifest"},
      {"ManifestNotJson",
       [](auto& g, auto& b) { rewrite(g, b, [](Entries& e) { entry(e, kManifest) = "{not json"; }); },
       "(medseg_model_zip.json): invalid JSON"},
      {"ManifestNewerVersion",
       [](auto& g, auto& b) {
         rewrite(g, b, [](Entries& e) { edit_manifest(e, [](json& m) { m["format_version"] = 2; }); });
       },
       "(medseg_model_zip.json): format version 2 is not one this medseg reads"},
      {"ManifestModelFolderEscapes",
       [](auto& g, auto& b) {
         rewrite(g, b, [](Entries& e) { edit_manifest(e, [](json& m) { m["model_folder"] = "Dataset999_Tiny/.."; }); });
       },
       "(medseg_model_zip.json): model_folder 'Dataset999_Tiny/..' is not of the form"},
      {"FlippedCheckpointByteManifestCrc",  // the zip's own CRC agrees with the damaged bytes
       [](auto& g, auto& b) { rewrite(g, b, [](Entries& e) { entry(e, kCk)[300] ^= 0x10; }); },
       "entry '" + kCk + "': checksum mismatch (the manifest says"},
      {"FlippedCheckpointByteContainerCrc",  // zip and manifest both agree with the damaged bytes
       [](auto& g, auto& b) {
         rewrite(g, b, [](Entries& e) {
           std::string& ck = entry(e, kCk);
           ck[ck.size() - 100] ^= 0x10;
           refresh_manifest(e, kCk);
         });
       },
       "entry '" + kCk + "': checksum mismatch: the checkpoint is corrupt or was modified"},
      {"TruncatedCheckpoint",
       [](auto& g, auto& b) {
         rewrite(g, b, [](Entries& e) {
           std::string& ck = entry(e, kCk);
           ck.resize(ck.size() / 2);
           refresh_manifest(e, kCk);
         });
       },
       "entry '" + kCk + "': truncated"},
      {"FlippedByteInZipData",  // libzip's CRC check of the stored entry
       [](auto& g, auto& b) {
         std::string bytes = raw(g);
         const auto at = bytes.find("MEDSEGCK");
         ASSERT_NE(at, std::string::npos);
         bytes[at + 1000] ^= 0x01;
         write_bytes(b, bytes);
       },
       "entry '" + kZipModel + "/fold_0/checkpoint_final.ckpt': cannot read (CRC error)"},
      {"TruncatedZip", [](auto& g, auto& b) { write_bytes(b, raw(g).substr(0, raw(g).size() / 2)); },
       "not a readable zip file"},
      {"NotAZip", [](auto&, auto& b) { write_bytes(b, "plans.json, dataset.json and some weights\n"); },
       "not a readable zip file"},
      {"EmptyFile", [](auto&, auto& b) { write_bytes(b, ""); }, "not a readable zip file"},
      // Issue 26: a zip that holds a name twice is refused naming it (libzip said "File already exists").
      {"NameTwice",
       [](auto& g, auto& b) {
         rewrite(g, b, [](Entries& e) { e.insert(e.begin(), {kZipModel + "/plans.jsoX", "{}"}); });
         rename_in_bytes(b, kZipModel + "/plans.jsoX", kZipModel + "/plans.json");
       },
       "entry '" + kZipModel + "/plans.json' appears twice"},
  };
}

class BadModelZip : public ModelZip, public ::testing::WithParamInterface<BadZip> {};

TEST_P(BadModelZip, IsRefusedNamingTheEntryAndWritesNothing) {
  const BadZip& row = GetParam();
  const std::string bad = d / "bad.zip";
  row.make(zip, bad);
  const auto r = install_refused(bad, d / "root2", "Dataset001_Other");
  EXPECT_NE(r.output.find(bad), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(row.expected), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists("/tmp/medseg_evil"));
  EXPECT_FALSE(fs::exists(d / "evil"));
}

INSTANTIATE_TEST_SUITE_P(Rows, BadModelZip, ::testing::ValuesIn(bad_zips()),
                         [](const auto& row_info) { return row_info.param.name; });

// Issue 26: only what a model folder holds is installed (model_files.h), even when the manifest lists
// more: the zip and the manifest agree on every row below.
TEST_F(ModelZip, OnlyWhatAModelFolderHoldsIsInstalled) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {kZipModel + "/fold_0/checkpoint_final.pth", "is not a file a model folder holds"},  // a pickle
      {kZipModel + "/run.sh", "is not a file a model folder holds"},
      {kZipModel + "/fold_0/checkpoint_latest.ckpt", "is a checkpoint the manifest's checkpoints do not list"},
      {kZipModel + "/fold_7/checkpoint_final.ckpt", "is in fold_7, which the manifest's folds do not list"},
  };
  const std::string bad = d / "bad.zip";
  for (const auto& [name, says] : rows) {
    SCOPED_TRACE(name);
    rewrite(zip, bad, [&, n = name](Entries& e) { add_listed(e, n, entry(e, kCk)); });
    const auto r = install_refused(bad, d / "root2", "Dataset001_Other");
    EXPECT_NE(r.output.find(bad + ": entry '" + name + "' " + says), std::string::npos) << r.output;
  }
}

// Issue 26: an entry that would inflate to an absurd size is refused before anything is written: a
// progress.png of 65 MiB (zeros, 64 KiB deflated), a checkpoint of zeros 1000-fold deflated.
TEST_F(ModelZip, EntriesOfAbsurdSizeAreRefusedBeforeWriting) {
  const std::vector<std::tuple<std::string, std::size_t, std::string>> rows = {
      {kZipModel + "/fold_0/progress.png", 65u << 20,
       "would inflate to 65.0 MiB, more than such a file holds (64.0 MiB)"},
      {kCk, 16u << 20, "would inflate"},
  };
  const std::string bad = d / "bad.zip";
  for (const auto& [name, size, says] : rows) {
    SCOPED_TRACE(name);
    rewrite(zip, bad, [&, n = name, k = size](Entries& e) {
      entry(e, n) = std::string(k, '\0');
      refresh_manifest(e, n);
    });
    const auto r = install_refused(bad, d / "root2", "Dataset001_Other");
    EXPECT_NE(r.output.find(bad + ": entry '" + name + "' " + says), std::string::npos) << r.output;
  }
}

// A zip that is not there, or a folder where the zip belongs (issue 26: it said "zip file not found").
TEST(ModelZipInstall, MissingZipOrAFolderIsNamed) {
  test::TempDir d("zip");
  fs::create_directories(d / "m.zip");
  const std::vector<std::pair<std::string, std::string>> rows = {
      {d / "nope.zip", d / "nope.zip: zip file not found"},
      {d / "m.zip", d / "m.zip: is a folder, not a zip file"},
  };
  for (const auto& [path, says] : rows) {
    const auto r = test::run_cli("medseg_install_model_zip", path + " -o " + d / "root");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(line_count(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(d / "root"));
  }
}

// ---- interrupted (issue 26): SIGTERM or SIGINT in the middle leaves nothing behind ----

TEST_F(ModelZip, InstallEndedBySigtermLeavesTheResultsRootAsItWas) {
  const std::string root = d / "root2";
  write_bytes(root + "/Dataset001_Other/notes.txt", "someone else's");
  const auto before = test::folder_snapshot(root);
  test::PausedCli cli = test::start_held_cli("medseg_install_model_zip", {zip, "-o", root}, "syncfs");
  ASSERT_TRUE(cli.paused) << cli.output;
  EXPECT_EQ(test::signal_and_wait(cli, SIGTERM), 128 + SIGTERM) << cli.output;
  EXPECT_EQ(test::folder_snapshot(root), before);  // no hidden staging folder, no Dataset999_Tiny
}

TEST_F(ModelZip, ExportEndedBySigintLeavesNoZipAndNoTemporaryFile) {
  const std::string out = d / "out/again.zip";
  const auto before = test::folder_snapshot(d.path());
  test::PausedCli cli = test::start_held_cli("medseg_export_model_zip", {"-m", model, "-o", out}, "rename:" + out);
  ASSERT_TRUE(cli.paused) << cli.output;
  EXPECT_EQ(test::signal_and_wait(cli, SIGINT), 128 + SIGINT) << cli.output;
  EXPECT_EQ(test::folder_snapshot(d.path()), before);  // no out/, no again.zip.XXXXXX
}

// What a SIGKILL leaves (it cannot be caught) goes with the next install into that folder.
TEST_F(ModelZip, StagingLeftByAKilledInstallIsRemovedByTheNextOne) {
  const std::string root = d / "root2";
  const auto r0 = test::run_cli("medseg_install_model_zip", zip + " -o " + root);
  ASSERT_EQ(r0.exit_code, 0) << r0.output;
  const auto clean = test::folder_snapshot(root);
  test::PausedCli cli = test::start_held_cli("medseg_install_model_zip", {zip, "-o", root, "--overwrite"}, "syncfs");
  ASSERT_TRUE(cli.paused) << cli.output;
  EXPECT_EQ(test::signal_and_wait(cli, SIGKILL), 128 + SIGKILL) << cli.output;
  ASSERT_NE(test::folder_snapshot(root), clean);  // the killed install's staging folder
  const auto r = test::run_cli("medseg_install_model_zip", zip + " -o " + root + " --overwrite");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::folder_snapshot(root), clean);
}

// ---- bad exports: one row per input ----

struct BadExport {
  std::string name;
  std::function<void(const std::string& model)> prepare;
  std::string args;      // after "-m MODEL -o OUT"
  std::string expected;  // in the one error line; "MODEL" stands for the model folder
};

class BadModelExport : public ::testing::TestWithParam<BadExport> {};

TEST_P(BadModelExport, IsRefusedAndWritesNoZip) {
  const BadExport& row = GetParam();
  test::TempDir d("zipx");
  const std::string model = make_model(d / "results");
  row.prepare(model);
  const std::string out = d / "out/model.zip";
  const auto r = test::run_cli("medseg_export_model_zip", "-m " + model + " -o " + out + " " + row.args);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(line_count(r.output), 1) << r.output;
  std::string expected = row.expected;
  if (expected.rfind("MODEL", 0) == 0) expected = model + expected.substr(5);
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "out")) << "output folder left behind";
}

INSTANTIATE_TEST_SUITE_P(
    Rows, BadModelExport,
    ::testing::Values(
        BadExport{"MissingFold", [](auto&) {}, "-f 0 3", "MODEL/fold_3: fold folder not found (-f 3)"},
        BadExport{"BadFoldName", [](auto&) {}, "-f ../x", "../x"},
        BadExport{"MissingCheckpoint", [](auto&) {}, "-chk checkpoint_latest",
                  "MODEL/fold_0/checkpoint_latest.ckpt: checkpoint not found"},
        BadExport{"CorruptCheckpoint",
                  [](auto& m) {
                    std::string b = test::read_text(m + "/fold_1/checkpoint_final.ckpt");
                    b[b.size() - 100] ^= 0x10;
                    write_bytes(m + "/fold_1/checkpoint_final.ckpt", b);
                  },
                  "", "MODEL/fold_1/checkpoint_final.ckpt: checksum mismatch"},
        BadExport{"MissingPlans", [](auto& m) { fs::remove(m + "/plans.json"); }, "", "MODEL/plans.json: not found"},
        BadExport{"PlansNotJson", [](auto& m) { write_bytes(m + "/plans.json", "{\"configurations\": "); }, "",
                  "MODEL/plans.json: invalid JSON"},
        BadExport{"DatasetJsonNotJson", [](auto& m) { write_bytes(m + "/dataset.json", "labels: 0, 1\n"); }, "",
                  "MODEL/dataset.json: invalid JSON"},
        BadExport{"FoldSummaryNotJson", [](auto& m) { write_bytes(m + "/fold_0/validation/summary.json", ""); }, "",
                  "MODEL/fold_0/validation/summary.json: empty JSON file"},
        BadExport{"NoFolds",
                  [](auto& m) {
                    fs::remove_all(m + "/fold_0");
                    fs::remove_all(m + "/fold_1");
                  },
                  "", "MODEL: no fold_K folders"}),
    [](const auto& row_info) { return row_info.param.name; });

// Issue 26: a link among the model's files would ship its target, from outside the model folder; a
// folder where a checkpoint belongs is no checkpoint. Each is refused naming it, and no zip is written.
TEST(ModelZipExport, LinksAndFoldersAmongTheModelFilesAreRefused) {
  const std::vector<BadExport> rows = {
      {"SymlinkedFile",
       [](auto& m) {
         write_bytes(m + "/../../secret.png", "not the model's");
         fs::remove(m + "/fold_0/progress.png");
         fs::create_symlink(m + "/../../secret.png", m + "/fold_0/progress.png");
       },
       "", "MODEL/fold_0/progress.png: is a symbolic link"},
      {"SymlinkedFoldFolder",
       [](auto& m) {
         fs::rename(m + "/fold_1", m + "/../../fold_1_elsewhere");
         fs::create_directory_symlink(m + "/../../fold_1_elsewhere", m + "/fold_1");
       },
       "", "MODEL/fold_1: is a symbolic link"},
      {"CheckpointIsAFolder",
       [](auto& m) {
         fs::remove(m + "/fold_1/checkpoint_final.ckpt");
         fs::create_directories(m + "/fold_1/checkpoint_final.ckpt");
       },
       "", "MODEL/fold_1/checkpoint_final.ckpt: is a folder where a file belongs (-chk checkpoint_final)"},
  };
  for (const BadExport& row : rows) {
    SCOPED_TRACE(row.name);
    test::TempDir d("zipx");
    const std::string model = make_model(d / "results");
    row.prepare(model);
    const auto r = test::run_cli("medseg_export_model_zip", "-m " + model + " -o " + d / "out/model.zip");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_EQ(line_count(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(model + row.expected.substr(5)), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(d / "out")) << "output folder left behind";
  }
}

TEST(ModelZipExport, FolderOutsideADatasetFolderIsRefused) {
  test::TempDir d("zipx");
  const std::string model = make_model(d / "results");
  fs::rename(model, d / "loose");
  const auto r = test::run_cli("medseg_export_model_zip", "-m " + d / "loose -o " + d / "out.zip");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(d / "loose: cannot be exported"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "out.zip"));
}

TEST_F(ModelZip, ExistingOutputIsKeptWithoutOverwrite) {
  const std::string before = test::read_text(zip);
  write_bytes(model + "/fold_1/progress.png", "new");  // the next export would differ
  const auto r = test::run_cli("medseg_export_model_zip", "-m " + model + " -o " + zip);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(zip + ": already exists; pass --overwrite"), std::string::npos) << r.output;
  EXPECT_TRUE(test::read_text(zip) == before);
  const auto o = test::run_cli("medseg_export_model_zip", "-m " + model + " -o " + zip + " --overwrite");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  bool has = false;
  for (const auto& [n, b] : read_zip(zip)) has |= n == kZipModel + "/fold_1/progress.png";
  EXPECT_TRUE(has);
}

// --overwrite replaces a zip written before, and nothing else (issue 26: "-o MODEL/fold_0/checkpoint_final.ckpt
// --overwrite" replaced the trained checkpoint with the zip).
TEST_F(ModelZip, OverwriteNeverReplacesAFileOfTheModelFolderNorAFolder) {
  write_bytes(d / "a_folder/notes.txt", "keep me");
  write_bytes(d / "notes.txt", "not a zip");
  const std::vector<std::pair<std::string, std::string>> rows = {
      {model + "/fold_0/checkpoint_final.ckpt", "is inside the model folder being exported"},
      {model + "/plans.json", "is inside the model folder being exported"},
      {model + "/fold_1/../fold_0/checkpoint_final.ckpt", "is inside the model folder being exported"},
      {model + "/new.zip", "is inside the model folder being exported"},
      {model, "is inside the model folder being exported"},
      {d / "a_folder", "is a folder; --overwrite replaces only a zip file"},
      {d / "notes.txt", "is not a zip file; --overwrite replaces only a zip file"},
  };
  const auto before = test::folder_snapshot(d.path());
  for (const auto& [out, says] : rows) {
    SCOPED_TRACE(out);
    const auto r = test::run_cli("medseg_export_model_zip", "-m " + model + " -o " + out + " --overwrite");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_EQ(line_count(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(out + ": " + says), std::string::npos) << r.output;
    EXPECT_EQ(test::folder_snapshot(d.path()), before);
  }
  // Inside the model folder also without --overwrite, where the file is new.
  const auto r = test::run_cli("medseg_export_model_zip", "-m " + model + " -o " + model + "/fold_0/model.zip");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("is inside the model folder being exported"), std::string::npos) << r.output;
  EXPECT_EQ(test::folder_snapshot(d.path()), before);
}

// A second DatasetXXX_* folder with the same id would make "-d 999" ambiguous for every later command.
TEST_F(ModelZip, InstallBesideADatasetWithTheSameIdIsRefused) {
  const std::string root = d / "root2";
  const auto r = install_refused(zip, root, "Dataset999_Other");
  EXPECT_NE(r.output.find(root + "/Dataset999_Other: dataset id 999 is taken by this folder; Dataset999_Tiny beside it "
                                 "would make -d 999 ambiguous"),
            std::string::npos)
      << r.output;
  // --overwrite replaces a model folder, never makes a dataset id ambiguous.
  install_refused(zip, root, "Dataset999_Other", " --overwrite");
}
