// The batch builder and threaded loader: plan-derived settings, the oversampling rule per batch,
// determinism across worker counts and across a resume, error propagation, shutdown.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <future>
#include <thread>

#include "core/error.h"
#include "data/data_loader.h"
#include "data/patch_sampler.h"
#include "bench_support/synthetic_cases.h"
#include "plans/plans.h"

using namespace medseg;
using namespace medseg::data;

namespace {

planning::ConfigurationPlan plan_3d(std::vector<int> patch, int bs) {
  planning::ConfigurationPlan p;
  p.name = "3d_fullres";
  p.patch_size = std::move(patch);
  p.batch_size = bs;
  p.architecture.strides = {{1, 1, 1}, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}};
  p.use_mask_for_norm = {false};
  return p;
}

std::shared_ptr<InMemoryCaseSource> small_cases(int64_t channels = 1) {
  return bench::make_synthetic_source(5, {16, 24, 24}, {18, 26, 28}, channels, 2, 42);
}

void expect_same(const Batch& a, const Batch& b) {
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.keys, b.keys);
  EXPECT_EQ(a.forced_label, b.forced_label);
  EXPECT_TRUE(a.data.equal(b.data));
  ASSERT_EQ(a.target.size(), b.target.size());
  for (size_t i = 0; i < a.target.size(); ++i) EXPECT_TRUE(a.target[i].equal(b.target[i]));
}

// Fails to read one case, to check that the error reaches the consumer with the case id.
class BrokenSource : public CaseSource {
 public:
  explicit BrokenSource(std::shared_ptr<InMemoryCaseSource> s) : s_(std::move(s)) {}
  int64_t size() const override { return s_->size(); }
  std::string id(int64_t i) const override { return s_->id(i); }
  int64_t channels() const override { return s_->channels(); }
  Shape3 shape(int64_t i) const override { return s_->shape(i); }
  const ClassLocations& class_locations(int64_t i) const override { return s_->class_locations(i); }
  void read_data(int64_t i, const Box& b, float* out, float pad) const override {
    if (i == 2) throw Error("disk on fire");
    s_->read_data(i, b, out, pad);
  }
  void read_seg(int64_t i, const Box& b, int16_t* out, int16_t pad) const override { s_->read_seg(i, b, out, pad); }

 private:
  std::shared_ptr<InMemoryCaseSource> s_;
};

// Counts case reads and makes each one last `delay`, so that a test can catch the workers inside one.
class SlowSource : public CaseSource {
 public:
  SlowSource(std::shared_ptr<InMemoryCaseSource> s, std::chrono::milliseconds delay)
      : s_(std::move(s)), delay_(delay) {}
  int64_t size() const override { return s_->size(); }
  std::string id(int64_t i) const override { return s_->id(i); }
  int64_t channels() const override { return s_->channels(); }
  Shape3 shape(int64_t i) const override { return s_->shape(i); }
  const ClassLocations& class_locations(int64_t i) const override { return s_->class_locations(i); }
  void read_data(int64_t i, const Box& b, float* out, float pad) const override {
    ++reads_;
    ++in_flight_;
    std::this_thread::sleep_for(delay_);
    s_->read_data(i, b, out, pad);
    --in_flight_;
  }
  void read_seg(int64_t i, const Box& b, int16_t* out, int16_t pad) const override { s_->read_seg(i, b, out, pad); }

  int64_t reads() const { return reads_; }
  int64_t in_flight() const { return in_flight_; }
  bool wait_for_in_flight(int64_t n, std::chrono::seconds limit) const {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (in_flight_ < n) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  std::shared_ptr<InMemoryCaseSource> s_;
  std::chrono::milliseconds delay_;
  mutable std::atomic<int64_t> reads_{0}, in_flight_{0};
};

}  // namespace

TEST(DataLoader, PipelineFollowsThePlan) {
  const auto tr = training_pipeline(plan_3d({32, 48, 48}, 2));
  EXPECT_EQ(tr.final_patch, (Shape3{32, 48, 48}));
  EXPECT_EQ(tr.loader_patch, (Shape3{60, 77, 67}));  // get_patch_size, see data_sampler_test
  EXPECT_FALSE(tr.aug.dummy_2d);
  EXPECT_NEAR(tr.aug.rotation_max, M_PI / 6, 1e-12);
  ASSERT_EQ(tr.ds_scales.size(), 3u);
  EXPECT_EQ(tr.ds_scales[2], (augment::Scale3{0.25, 0.25, 0.25}));
  // max(patch) / patch[0] = 64 / 16 = 4 > 3: dummy 2D, +-180 deg, z kept.
  const auto d2 = training_pipeline(plan_3d({16, 64, 64}, 2));
  EXPECT_TRUE(d2.aug.dummy_2d);
  EXPECT_NEAR(d2.aug.rotation_max, M_PI, 1e-12);
  EXPECT_EQ(d2.loader_patch, (Shape3{16, 75, 75}));
  auto p2 = plan_3d({56, 40}, 12);
  p2.architecture.strides = {{1, 1}, {2, 2}, {2, 2}};
  const auto two = training_pipeline(p2);
  EXPECT_TRUE(two.is_2d);
  EXPECT_NEAR(two.aug.rotation_max, M_PI, 1e-12);  // aspect 56 / 40 = 1.4 <= 1.5: +-180 deg
  EXPECT_EQ(two.final_patch, (Shape3{1, 56, 40}));
  EXPECT_EQ(two.aug.mirror_axes, (std::vector<int>{1, 2}));
  p2.patch_size = {64, 40};  // aspect 1.6: +-15 deg
  EXPECT_NEAR(training_pipeline(p2).aug.rotation_max, M_PI / 12, 1e-12);
  // nnUNetTrainerDA5: get_patch_size with its scale range (0.7, 1.43). The rotated extents of (32, 48, 48)
  // by 30 degrees are (32 c + 48 s, 48 c + 48 s, 32 s + 48 c) = (51.71, 65.57, 57.57); / 0.7, floored.
  AugmentChoice da5;
  da5.da5 = true;
  const auto strong = training_pipeline(plan_3d({32, 48, 48}, 2), true, 0.33, da5);
  EXPECT_EQ(strong.loader_patch, (Shape3{73, 93, 82}));
  EXPECT_DOUBLE_EQ(strong.aug.p_rotation, 0.4);
  EXPECT_EQ(strong.aug.order.size(), augment::kDA5Order.size());
  EXPECT_NEAR(strong.aug.rotation_max, M_PI / 6, 1e-12) << "DA5 keeps nnU-Net's rotation ranges";
  // nnUNetTrainer_noDummy2DDA: the anisotropic patch gets the 3D rotation and a 3D loader patch.
  AugmentChoice no_dummy;
  no_dummy.dummy_2d = false;
  const auto flat = training_pipeline(plan_3d({16, 64, 64}, 2), true, 0.33, no_dummy);
  EXPECT_FALSE(flat.aug.dummy_2d);
  EXPECT_NEAR(flat.aug.rotation_max, M_PI / 6, 1e-12);
  EXPECT_GT(flat.loader_patch[0], 16);
  const auto val = validation_pipeline(plan_3d({32, 48, 48}, 2));
  EXPECT_EQ(val.loader_patch, val.final_patch);
  EXPECT_FALSE(val.augment);
}

TEST(DataLoader, BatchHasTheRightShapesAndForcedSamplesPerTheRule) {
  auto cases = small_cases(2);
  auto cfg = validation_pipeline(plan_3d({8, 16, 16}, 5));
  for (int64_t k = 0; k < 6; ++k) {
    Batch b = build_batch(*cases, cfg, 7, 0, k);
    EXPECT_EQ(b.data.sizes(), (std::vector<int64_t>{5, 2, 8, 16, 16}));
    ASSERT_EQ(b.target.size(), 3u);
    EXPECT_EQ(b.target[1].sizes(), (std::vector<int64_t>{5, 1, 4, 8, 8}));
    EXPECT_EQ(b.target[0].scalar_type(), at::kShort);
    // bs 5: samples 3 and 4 (j >= round(5 * 0.67) = 3) are centred on a foreground voxel.
    for (int64_t j = 0; j < 5; ++j) {
      if (j < 3) {
        EXPECT_EQ(b.forced_label[static_cast<size_t>(j)], -1);
      } else {
        const int label = b.forced_label[static_cast<size_t>(j)];
        ASSERT_GE(label, 1);
        EXPECT_GT(b.target[0][j].eq(label).sum().item<int64_t>(), 0);
      }
    }
    EXPECT_EQ(b.target[0].lt(0).sum().item<int64_t>(), 0);  // -1 became 0
  }
}

TEST(DataLoader, TwoDimensionalAndDummy2DBatches) {
  auto cases = small_cases(2);
  auto p2 = plan_3d({16, 16}, 3);
  p2.architecture.strides = {{1, 1}, {2, 2}, {2, 2}};
  auto cfg = training_pipeline(p2);
  cfg.aug.p_rotation = cfg.aug.p_scaling = cfg.aug.p_lowres = cfg.aug.p_blur = 1.0;
  for (int64_t k = 0; k < 3; ++k) {
    Batch b = build_batch(*cases, cfg, 11, 0, k);
    EXPECT_EQ(b.data.sizes(), (std::vector<int64_t>{3, 2, 16, 16}));
    ASSERT_EQ(b.target.size(), 2u);
    EXPECT_EQ(b.target[1].sizes(), (std::vector<int64_t>{3, 1, 8, 8}));
    EXPECT_TRUE(b.data.isfinite().all().item<bool>());
  }
  auto pd = plan_3d({4, 16, 16}, 2);  // 16 / 4 > 3: dummy 2D
  pd.architecture.strides = {{1, 1, 1}, {1, 2, 2}, {2, 2, 2}};
  auto d2 = training_pipeline(pd);
  ASSERT_TRUE(d2.aug.dummy_2d);
  d2.aug.p_rotation = d2.aug.p_scaling = d2.aug.p_lowres = 1.0;
  Batch b = build_batch(*cases, d2, 11, 0, 0);
  EXPECT_EQ(b.data.sizes(), (std::vector<int64_t>{2, 2, 4, 16, 16}));
  EXPECT_EQ(b.target[0].lt(0).sum().item<int64_t>(), 0);
}

TEST(DataLoader, SameBatchesWithOneOrThreeWorkersOrNone) {
  auto cases = small_cases();
  auto cfg = training_pipeline(plan_3d({8, 16, 16}, 2));
  cfg.aug.p_rotation = cfg.aug.p_scaling = 0.5;  // exercise the heavy paths often
  LoaderOptions o;
  o.batches_per_epoch = 4;
  std::vector<Batch> ref;
  {
    o.num_workers = 1;
    DataLoader dl(cases, cfg, o, {123, 0, 0});
    for (int i = 0; i < 7; ++i) ref.push_back(dl.next());
    EXPECT_EQ(dl.state(), (LoaderState{123, 1, 3}));
  }
  EXPECT_EQ(ref[5].epoch, 1);
  EXPECT_EQ(ref[5].index, 1);
  for (int workers : {3, 0}) {
    o.num_workers = workers;
    o.num_cached = 2;  // smaller than the worker count: the window grows to fit
    DataLoader dl(cases, cfg, o, {123, 0, 0});
    for (int i = 0; i < 7; ++i) expect_same(ref[static_cast<size_t>(i)], dl.next());
  }
  // A different seed gives different batches.
  o.num_workers = 2;
  DataLoader other(cases, cfg, o, {124, 0, 0});
  EXPECT_FALSE(other.next().data.equal(ref[0].data));
}

TEST(DataLoader, ResumeFromSavedStateReproducesTheBatches) {
  auto cases = small_cases();
  auto cfg = training_pipeline(plan_3d({8, 16, 16}, 2));
  LoaderOptions o;
  o.batches_per_epoch = 3;
  o.num_workers = 2;
  std::vector<Batch> first;
  json saved;
  {
    DataLoader dl(cases, cfg, o, {99, 0, 0});
    for (int i = 0; i < 4; ++i) first.push_back(dl.next());
    saved = dl.state().to_json();
    for (int i = 0; i < 3; ++i) first.push_back(dl.next());
  }
  const LoaderState st = LoaderState::from_json(json::parse(saved.dump()));
  EXPECT_EQ(st, (LoaderState{99, 1, 1}));
  DataLoader resumed(cases, cfg, o, st);
  for (int i = 4; i < 7; ++i) expect_same(first[static_cast<size_t>(i)], resumed.next());
}

TEST(DataLoader, WorkerErrorsReachTheConsumerWithTheCaseId) {
  auto cases = std::make_shared<BrokenSource>(small_cases());
  auto cfg = training_pipeline(plan_3d({8, 16, 16}, 2));
  LoaderOptions o;
  o.num_workers = 2;
  DataLoader dl(cases, cfg, o, {5, 0, 0});
  bool thrown = false;
  for (int i = 0; i < 50 && !thrown; ++i) {
    try {
      dl.next();
    } catch (const Error& e) {
      thrown = true;
      EXPECT_NE(std::string(e.what()).find("case_002"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("disk on fire"), std::string::npos);
    }
  }
  ASSERT_TRUE(thrown);
  EXPECT_THROW(dl.next(), Error);  // stays failed
}

// The loader is destroyed while every worker is inside a (slow) case read. The destructor must
// return in bounded time (a hang fails here after kDeadline instead of blocking ctest), the workers
// may only finish the batches they hold (none goes on into the large free window), and no worker
// may still run once the destructor has returned.
TEST(DataLoader, DestructorStopsBusyWorkers) {
  constexpr int kWorkers = 3, kBatch = 2;
  constexpr auto kDeadline = std::chrono::seconds(30);
  auto cases = std::make_shared<SlowSource>(small_cases(), std::chrono::milliseconds(40));
  auto cfg = training_pipeline(plan_3d({8, 16, 16}, kBatch));
  LoaderOptions o;
  o.num_workers = kWorkers;
  o.num_cached = 64;  // plenty of room: only the stop request can keep a worker from going on
  struct Outcome {
    bool all_busy = false;
    int64_t reads_while_stopping = -1, in_flight_after = -1;
    double seconds = -1;
  };
  std::packaged_task<Outcome()> task([cases, cfg, o] {
    Outcome r;
    auto dl = std::make_unique<DataLoader>(cases, cfg, o, LoaderState{1, 0, 0});
    r.all_busy = cases->wait_for_in_flight(kWorkers, std::chrono::seconds(20));
    const int64_t before = cases->reads();
    const auto t0 = std::chrono::steady_clock::now();
    dl.reset();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.reads_while_stopping = cases->reads() - before;
    r.in_flight_after = cases->in_flight();
    return r;
  });
  auto result = task.get_future();
  std::thread runner(std::move(task));
  if (result.wait_for(kDeadline) != std::future_status::ready) {
    runner.detach();  // still stuck in the destructor; it owns copies of everything it touches
    FAIL() << "DataLoader's destructor did not return within " << kDeadline.count() << " s";
  }
  runner.join();
  const Outcome r = result.get();
  ASSERT_TRUE(r.all_busy) << "the workers never were all inside a read at once";
  EXPECT_EQ(r.in_flight_after, 0) << "a worker was still reading after the destructor returned";
  // Each worker finishes the batch it holds (at most kBatch reads; the bound allows one claimed in
  // the instant between the count and the stop). A worker that went on into the free window
  // would read up to 2 * 64 more.
  EXPECT_LE(r.reads_while_stopping, kWorkers * kBatch);
  EXPECT_LT(r.seconds, 10.0);  // one 40 ms read per worker is left; 10 s only absorbs a loaded machine
  const int64_t reads_after = cases->reads();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(cases->reads(), reads_after) << "a worker kept reading after the destructor returned";
  EXPECT_EQ(cases->in_flight(), 0);
}

// Data parallelism: the shares of the ranks, concatenated in rank order, are the global batch
// sample for sample (the same cases, patches, augmentation and forced foreground), for batch sizes
// that do and do not divide by the number of ranks.
TEST(DataLoader, RankSharesTileTheGlobalBatch) {
  const auto cases = small_cases();
  for (const auto& [batch, ranks] : std::vector<std::pair<int64_t, int>>{{4, 2}, {3, 2}, {5, 3}, {2, 2}}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + ", " + std::to_string(ranks) + " ranks");
    PipelineConfig whole = training_pipeline(plan_3d({16, 16, 16}, static_cast<int>(batch)));
    for (int64_t index = 0; index < 3; ++index) {
      const Batch all = build_batch(*cases, whole, 7, 1, index);
      std::vector<at::Tensor> data, seg0;
      std::vector<std::string> keys;
      std::vector<int> forced;
      for (int r = 0; r < ranks; ++r) {
        const BatchShare s = batch_share(batch, r, ranks);
        EXPECT_GE(s.size(), batch / ranks);
        EXPECT_LE(s.size(), batch / ranks + 1);
        PipelineConfig mine = whole;
        mine.share_begin = s.begin;
        mine.share_end = s.end;
        const Batch b = build_batch(*cases, mine, 7, 1, index);
        ASSERT_EQ(b.data.size(0), s.size());
        data.push_back(b.data);
        seg0.push_back(b.target[0]);
        keys.insert(keys.end(), b.keys.begin(), b.keys.end());
        forced.insert(forced.end(), b.forced_label.begin(), b.forced_label.end());
      }
      EXPECT_TRUE(at::cat(data).equal(all.data));
      EXPECT_TRUE(at::cat(seg0).equal(all.target[0]));
      EXPECT_EQ(keys, all.keys);
      EXPECT_EQ(forced, all.forced_label);
    }
  }
}

namespace {

// Every thread of this process: its id and niceness, from /proc/self/task/TID/stat (field 19).
std::map<long, int> thread_niceness() {
  std::map<long, int> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream rest(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
    std::string field;
    for (int i = 3; i < 19 && rest >> field;) ++i;  // fields 3..18
    int nice = 0;
    if (rest >> nice) out[std::stol(e.path().filename().string())] = nice;
  }
  return out;
}

}  // namespace

// worker_nice raises the workers' niceness by that much and nobody else's (training on the CPU sets 5); the
// batches are the same either way.
TEST(DataLoader, WorkerNiceLowersTheWorkersPriorityAlone) {
  auto cases = small_cases();
  auto cfg = training_pipeline(plan_3d({8, 16, 16}, 2));
  LoaderOptions o;
  o.batches_per_epoch = 2;
  o.num_workers = 2;
  const auto before = thread_niceness();
  const int base = before.begin()->second;
  Batch plain;
  {
    DataLoader dl(cases, cfg, o, {5, 0, 0});
    plain = dl.next();
  }
  o.worker_nice = 3;
  DataLoader dl(cases, cfg, o, {5, 0, 0});
  expect_same(plain, dl.next());
  // Each worker lowers its own priority as it starts; a worker may start after the first batches are built.
  int lowered = 0;
  for (int tries = 0; tries < 200 && lowered < 2; ++tries) {
    if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    lowered = 0;
    for (const auto& [tid, nice] : thread_niceness()) {
      if (nice == std::min(19, base + 3)) {
        ++lowered;
      } else {
        EXPECT_EQ(nice, base) << "thread " << tid;
      }
    }
  }
  if (base + 3 <= 19) { EXPECT_EQ(lowered, 2); }
}
