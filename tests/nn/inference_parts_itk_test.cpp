// medseg_predict -num_parts N -part_id K (nnU-Net's way of splitting one prediction over processes or
// GPUs): part K takes the sorted cases i with i % N == K. Two parts together must write exactly the
// files of one full run, with no case in both, and the same segmentations.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <set>

#include "core/error.h"
#include "inference/case_inputs.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

std::set<std::string> files_in(const std::string& folder) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(folder)) out.insert(e.path().filename().string());
  return out;
}

std::vector<inference::CaseInput> named(const std::vector<std::string>& ids) {
  std::vector<inference::CaseInput> v;
  for (const auto& id : ids) v.push_back({id, {id + "_0000.nii.gz"}, "", {}, ""});
  return v;
}

std::vector<std::string> ids(const std::vector<inference::CaseInput>& cases) {
  std::vector<std::string> v;
  for (const auto& c : cases) v.push_back(c.id);
  return v;
}

}  // namespace

TEST(InferenceParts, SelectPartIsPythonsStridedSlice) {
  const auto cases = named({"a", "b", "c", "d", "e"});
  // Python: ['a','b','c','d','e'][0::2] == ['a','c','e'], [1::2] == ['b','d'], [2::3] == ['c']
  EXPECT_EQ(ids(inference::select_part(cases, 2, 0)), (std::vector<std::string>{"a", "c", "e"}));
  EXPECT_EQ(ids(inference::select_part(cases, 2, 1)), (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(ids(inference::select_part(cases, 3, 2)), (std::vector<std::string>{"c"}));
  EXPECT_EQ(ids(inference::select_part(cases, 1, 0)), ids(cases));
  EXPECT_TRUE(inference::select_part(cases, 7, 6).empty());  // more parts than cases: some get none
  EXPECT_THROW(inference::select_part(cases, 2, 2), Error);
  EXPECT_THROW(inference::select_part(cases, 2, -1), Error);
  EXPECT_THROW(inference::select_part(cases, 0, 0), Error);
}

TEST(InferenceParts, TwoPartsWriteExactlyTheFilesOfOneRun) {
  test::TempDir d("parts");
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 5);
  const std::string model = d / "model";
  test::write_model_folder(model, s, net, {"0"});
  const std::string in = d / "in";
  fs::create_directories(in);
  Geometry g;
  g.spacing = {1.0, 1.0, 1.0};
  for (int c = 0; c < 5; ++c) {
    Volume v(PixelType::Float32, {12, 14, 13}, g);
    float* p = v.data<float>();
    for (int64_t i = 0; i < v.numel(); ++i) p[i] = static_cast<float>((i * (c + 3)) % 17);
    io::write_image(in + "/case" + std::to_string(c) + "_0000.nii.gz", v);
  }
  const std::string common =
      " -m " + model + " --disable_tta --save_probabilities -npp 0 -nps 0 --threads 1 --disable_progress_bar";
  auto r = test::run_cli("medseg_predict", "-i " + in + " -o " + (d / "all") + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_predict", "-i " + in + " -o " + (d / "p0") + common + " -num_parts 2 -part_id 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 case(s) written"), std::string::npos) << r.output;
  r = test::run_cli("medseg_predict", "-i " + in + " -o " + (d / "p1") + common + " --num_parts 2 --part_id 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 case(s) written"), std::string::npos) << r.output;

  const auto all = files_in(d / "all"), p0 = files_in(d / "p0"), p1 = files_in(d / "p1");
  const std::set<std::string> shared{"dataset.json", "plans.json"};  // every run writes these
  std::set<std::string> both;
  for (const auto& f : p0)
    if (p1.count(f) && !shared.count(f)) both.insert(f);
  EXPECT_TRUE(both.empty()) << *both.begin();
  std::set<std::string> together = p0;
  together.insert(p1.begin(), p1.end());
  EXPECT_EQ(together, all);
  EXPECT_EQ(all.size(), 5u * 3u + 2u);  // seg + probabilities .npy/.json per case, the two JSON copies
  // Sorted ids case0..case4: part 0 = case0, case2, case4.
  EXPECT_TRUE(p0.count("case0.nii.gz") && p0.count("case2.nii.gz") && p0.count("case4.nii.gz"));
  EXPECT_TRUE(p1.count("case1.nii.gz") && p1.count("case3.nii.gz"));
  for (const auto& f : all) {
    if (f.size() < 7 || f.substr(f.size() - 7) != ".nii.gz") continue;
    const Volume a = io::read_image((d / "all") + "/" + f);
    const Volume b = io::read_image((p0.count(f) ? d / "p0" : d / "p1") + "/" + f);
    ASSERT_EQ(a.shape(), b.shape()) << f;
    EXPECT_EQ(a.to_float(), b.to_float()) << f;
  }
}

TEST(InferenceParts, BadPartsAreOneClearLine) {
  test::TempDir d("parts");
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 5);
  test::write_model_folder(d / "model", s, net, {"0"});
  auto r = test::run_cli("medseg_predict", "-i " + (d / "in") + " -o " + (d / "out") + " -m " + (d / "model") +
                                               " -num_parts 2 -part_id 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("-part_id must be in 0..1"), std::string::npos) << r.output;
  r = test::run_cli("medseg_predict",
                    "-i " + (d / "in") + " -o " + (d / "out") + " -m " + (d / "model") + " -num_parts 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("-num_parts must be >= 1"), std::string::npos) << r.output;
}
