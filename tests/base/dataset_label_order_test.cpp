// dataset.json's labels in the file's order, as nnU-Net's LabelManager reads them: a region dataset's
// outputs (and regions_class_order) follow the order "labels" lists them in, whatever their names.
// The dataset.json texts are nnU-Net's documented examples, verbatim.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/ordered_json_io.h"
#include "evaluation/evaluate_folder.h"
#include "io/dataset.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

// A raw dataset folder holding only dataset.json with `labels_and_more` (the text after "labels":).
std::string write_dataset(const test::TempDir& root, const std::string& labels_and_more) {
  const fs::path ds = root / "Dataset001_Order";
  fs::create_directories(ds);
  std::ofstream(ds / "dataset.json") << R"({"channel_names": {"0": "MRI"}, "labels": )" << labels_and_more
                                     << R"(, "numTraining": 0, "file_ending": ".nii.gz"})";
  return ds.string();
}

std::vector<std::string> names(const std::vector<io::LabelDef>& labels) {
  std::vector<std::string> out;
  for (const auto& l : labels) out.push_back(l.name);
  return out;
}

}  // namespace

// documentation/region_based_training.md: refused before with "region labels must be listed sorted by name".
TEST(DatasetLabelOrder, NnUNetRegionExampleKeepsTheFilesOrder) {
  test::TempDir root("label_order");
  const io::DatasetInfo info = io::load_dataset_info(write_dataset(
      root,
      R"({"background": 0, "whole_tumor": [1, 2, 3], "tumor_core": [2, 3], "enhancing_tumor": 3}, "regions_class_order": [1, 2, 3])"));
  EXPECT_EQ(names(info.labels),
            (std::vector<std::string>{"background", "whole_tumor", "tumor_core", "enhancing_tumor"}));
  EXPECT_TRUE(info.has_regions());
  EXPECT_EQ(io::network_outputs(info), 3);
  // Output k is the k-th region as listed: whole tumour, tumour core, enhancing tumour.
  EXPECT_EQ(io::foreground_regions(info.labels), (std::vector<std::vector<int>>{{1, 2, 3}, {2, 3}, {3}}));
  EXPECT_EQ(info.raw.at("regions_class_order"), ordered_json({1, 2, 3}));
  // The raw copy keeps the file's key order too, so every copy written from it does.
  std::vector<std::string> keys;
  for (const auto& [k, v] : info.raw.items()) keys.push_back(k);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"channel_names", "labels", "regions_class_order", "numTraining", "file_ending"}));
}

// dataset_format.md's plain example: outputs follow the label values.
TEST(DatasetLabelOrder, NnUNetPlainExample) {
  test::TempDir root("label_order");
  const io::DatasetInfo info =
      io::load_dataset_info(write_dataset(root, R"({"background": 0, "left": 1, "right": 2})"));
  EXPECT_EQ(names(info.labels), (std::vector<std::string>{"background", "left", "right"}));
  EXPECT_FALSE(info.has_regions());
  EXPECT_EQ(io::network_outputs(info), 3);
  EXPECT_EQ(io::foreground_labels(info.labels), (std::vector<int>{1, 2}));
}

// Not alphabetical: class 1 stays "zeta", listed first, as in the file.
TEST(DatasetLabelOrder, PlainLabelsOutOfNameOrderKeepTheirValues) {
  test::TempDir root("label_order");
  const io::DatasetInfo info =
      io::load_dataset_info(write_dataset(root, R"({"background": 0, "zeta": 1, "alpha": 2})"));
  ASSERT_EQ(names(info.labels), (std::vector<std::string>{"background", "zeta", "alpha"}));
  EXPECT_EQ(info.labels[1].values, (std::vector<int>{1}));
  EXPECT_EQ(info.labels[2].values, (std::vector<int>{2}));
}

// The evaluation (summary.json) scores regions in the order dataset.json lists them, under nnU-Net's keys.
TEST(DatasetLabelOrder, EvaluationScoresRegionsInTheFilesOrder) {
  const ordered_json ds = ordered_json::parse(
      R"({"labels": {"background": 0, "whole_tumor": [1, 2, 3], "tumor_core": [2, 3], "enhancing_tumor": 3},
          "regions_class_order": [1, 2, 3], "file_ending": ".nii.gz"})");
  evaluation::EvaluateOptions o;
  evaluation::labels_from_dataset_json(ds, o, "dataset.json");
  EXPECT_EQ(o.label_keys, (std::vector<std::string>{"(1, 2, 3)", "(2, 3)", "3"}));
  EXPECT_EQ(o.labels, (std::vector<std::vector<int>>{{1, 2, 3}, {2, 3}, {3}}));
  EXPECT_EQ(o.declared, (std::vector<int>{0, 1, 2, 3}));
}

// A copy written with write_ordered_json reads back in the same order (model folders, exports).
TEST(DatasetLabelOrder, OrderedJsonRoundTripsThroughAFile) {
  test::TempDir root("label_order");
  const ordered_json j = ordered_json::parse(R"({"labels": {"background": 0, "zeta": 1, "alpha": 2}, "b": 1, "a": 2})");
  write_ordered_json(root / "dataset.json", j);
  const ordered_json back = read_ordered_json(root / "dataset.json");
  EXPECT_EQ(back, j);
  EXPECT_EQ(back.dump(), R"({"labels":{"background":0,"zeta":1,"alpha":2},"b":1,"a":2})");
}

// Plain labels are scored by value (LabelManager.foreground_labels), whatever order the file lists them in.
TEST(DatasetLabelOrder, EvaluationScoresPlainLabelsByValue) {
  const ordered_json ds =
      ordered_json::parse(R"({"labels": {"background": 0, "b": 2, "a": 1}, "file_ending": ".nii.gz"})");
  evaluation::EvaluateOptions o;
  evaluation::labels_from_dataset_json(ds, o, "dataset.json");
  EXPECT_EQ(o.label_keys, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(o.labels, (std::vector<std::vector<int>>{{1}, {2}}));
}

// documentation/ignore_label.md's two examples (its Python tuples written as JSON lists): the ignore
// label is no output, and one-element regions such as (3, ) are regions like 3.
TEST(DatasetLabelOrder, NnUNetIgnoreLabelExamples) {
  test::TempDir root("label_order");
  const io::DatasetInfo plain = io::load_dataset_info(write_dataset(
      root, R"({"background": 0, "edema": 1, "non_enhancing_and_necrosis": 2, "enhancing_tumor": 3, "ignore": 4})"));
  EXPECT_EQ(io::network_outputs(plain), 4);
  EXPECT_EQ(io::ignore_label(plain.labels), 4);
  for (const char* enhancing : {"3", "[3]"}) {
    SCOPED_TRACE(enhancing);
    const io::DatasetInfo regions = io::load_dataset_info(write_dataset(
        root, std::string(R"({"background": 0, "whole_tumor": [1, 2, 3], "tumor_core": [2, 3], "enhancing_tumor": )") +
                  enhancing + R"(, "ignore": 4}, "regions_class_order": [1, 2, 3])"));
    EXPECT_EQ(io::network_outputs(regions), 3);
    EXPECT_EQ(io::foreground_regions(regions.labels), (std::vector<std::vector<int>>{{1, 2, 3}, {2, 3}, {3}}));
    EXPECT_EQ(io::ignore_label(regions.labels), 4);
  }
}

// LabelManager's rule: "If you use the ignore label it must have the highest label value! It cannot be 0
// or in between other labels." A list is no ignore label either.
TEST(DatasetLabelOrder, IgnoreLabelMustBeTheHighestInteger) {
  test::TempDir root("label_order");
  for (const char* labels :
       {R"({"background": 0, "ignore": 1, "a": 2})", R"({"background": 0, "a": 1, "ignore": 3})",
        R"({"background": 0, "whole": [1, 2], "ignore": 2})", R"({"background": 0, "a": 1, "ignore": [2]})"}) {
    SCOPED_TRACE(labels);
    const std::string folder = write_dataset(root, labels);
    try {
      io::load_dataset_info(folder);
      ADD_FAILURE() << "accepted";
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find("ignore"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("dataset.json"), std::string::npos) << e.what();
    }
  }
}
