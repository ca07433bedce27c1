#include "core/test_pause.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace medseg {

void test_pause_point(const char* point) {
  const char* at = std::getenv("MEDSEG_TEST_PAUSE_AT");
  if (!at || std::strcmp(at, point) != 0) return;
  std::fprintf(stderr, "medseg: paused at %s\n", point);
  std::fflush(stderr);
  for (int i = 0; i < 600; ++i) ::usleep(100 * 1000);  // sleep() may end early on a handled signal
}

}  // namespace medseg
