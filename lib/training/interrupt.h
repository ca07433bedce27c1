#pragma once
// Ctrl-C (SIGINT) and SIGTERM become a flag the training loop polls between iterations, so an
// interrupted run saves checkpoint_latest and exits cleanly instead of dying mid-write.
#include <signal.h>

#include <csignal>

namespace medseg::training {

// Installs the handlers for as long as it lives and puts back the ones it found: signal handlers
// belong to the process, and a trainer must not keep them after its run (tests, embedding code).
class ScopedInterruptHandler {
 public:
  ScopedInterruptHandler();
  ~ScopedInterruptHandler();
  ScopedInterruptHandler(const ScopedInterruptHandler&) = delete;
  ScopedInterruptHandler& operator=(const ScopedInterruptHandler&) = delete;

 private:
  struct sigaction previous_int_ {
  }, previous_term_{};
};

bool interrupt_requested();
void clear_interrupt();  // tests

}  // namespace medseg::training
