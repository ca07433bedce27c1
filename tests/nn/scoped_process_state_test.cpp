// Process-wide state a run needs (intra-op threads, cuDNN and determinism flags, the default
// generator, signal handlers) is applied by scopes that give the process back what they found.
#include <gtest/gtest.h>
#include <signal.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "core_torch/torch_settings.h"
#include "training/interrupt.h"

using namespace medseg;

namespace {

// What the default generator will draw next, without drawing it.
at::Tensor next_draw() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  const at::Tensor state = gen.get_state();
  at::Tensor x = torch::rand({4});
  gen.set_state(state);
  return x;
}

extern "C" void test_handler(int) {}

}  // namespace

TEST(ScopedTorchSettings, AppliesItsSettingsAndRestoresTheCallers) {
  at::set_num_threads(2);
  at::globalContext().setDeterministicAlgorithms(false, false);
  const at::Tensor callers_next = next_draw();
  {
    TorchSettings s;
    s.threads = 1;
    s.deterministic = true;
    s.seed = 5;
    const ScopedTorchSettings scope(s);
    EXPECT_EQ(at::get_num_threads(), 1);
    EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
    EXPECT_TRUE(at::globalContext().deterministicCuDNN());
    at::Generator seeded = at::make_generator<at::CPUGeneratorImpl>(5);
    EXPECT_TRUE(torch::equal(torch::rand({4}), at::rand({4}, seeded))) << "the scope did not seed with 5";
  }
  EXPECT_EQ(at::get_num_threads(), 2);
  EXPECT_FALSE(at::globalContext().deterministicAlgorithms());
  EXPECT_FALSE(at::globalContext().deterministicCuDNN());
  EXPECT_TRUE(torch::equal(torch::rand({4}), callers_next)) << "the caller's random stream was disturbed";
}

TEST(ScopedTorchSettings, NestedScopesUnwindInOrder) {
  at::set_num_threads(2);
  {
    const ScopedTorchSettings outer(TorchSettings{1, false, false, {}});
    {
      const ScopedTorchSettings inner(TorchSettings{3, false, true, uint64_t{1}});
      EXPECT_EQ(at::get_num_threads(), 3);
    }
    EXPECT_EQ(at::get_num_threads(), 1);
    EXPECT_FALSE(at::globalContext().deterministicAlgorithms());
  }
  EXPECT_EQ(at::get_num_threads(), 2);
}

TEST(ScopedTorchSettings, ZeroThreadsAndNoSeedLeaveThemAlone) {
  at::set_num_threads(2);
  const at::Tensor callers_next = next_draw();
  {
    const ScopedTorchSettings scope(TorchSettings{});
    EXPECT_EQ(at::get_num_threads(), 2);
    EXPECT_TRUE(torch::equal(next_draw(), callers_next));
  }
}

TEST(ScopedInterruptHandler, RestoresTheHandlerItReplaced) {
  struct sigaction mine {
  }, seen{};
  mine.sa_handler = test_handler;
  sigemptyset(&mine.sa_mask);
  struct sigaction before_int {
  }, before_term{};
  sigaction(SIGINT, &mine, &before_int);
  sigaction(SIGTERM, &mine, &before_term);
  {
    const training::ScopedInterruptHandler scope;
    sigaction(SIGINT, nullptr, &seen);
    EXPECT_NE(seen.sa_handler, test_handler);
    training::clear_interrupt();
    raise(SIGTERM);  // handled: a flag, not the end of the test process
    EXPECT_TRUE(training::interrupt_requested());
    training::clear_interrupt();
  }
  sigaction(SIGINT, nullptr, &seen);
  EXPECT_EQ(seen.sa_handler, test_handler);
  sigaction(SIGTERM, nullptr, &seen);
  EXPECT_EQ(seen.sa_handler, test_handler);
  sigaction(SIGINT, &before_int, nullptr);
  sigaction(SIGTERM, &before_term, nullptr);
}
