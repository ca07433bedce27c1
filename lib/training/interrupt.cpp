#include "training/interrupt.h"

namespace medseg::training {
namespace {
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int) {
  // A second Ctrl-C while saving falls back to the default action (the checkpoint write is atomic).
  if (g_interrupted) std::signal(SIGINT, SIG_DFL);
  g_interrupted = 1;
}
}  // namespace

ScopedInterruptHandler::ScopedInterruptHandler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &previous_int_);
  sigaction(SIGTERM, &sa, &previous_term_);
}

ScopedInterruptHandler::~ScopedInterruptHandler() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
}

bool interrupt_requested() { return g_interrupted != 0; }
void clear_interrupt() { g_interrupted = 0; }

}  // namespace medseg::training
