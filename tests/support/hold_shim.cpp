// An LD_PRELOAD library for the tests that interrupt a command at a known step (test::start_held_cli): the
// command runs as built, and this library holds it where MEDSEG_TEST_HOLD says, so that the test's signal
// arrives there and not at a race's mercy. Nothing of it is in the library or the commands.
//   MEDSEG_TEST_HOLD=syncfs         the first syncfs() (an install syncs its staged files before naming them)
//   MEDSEG_TEST_HOLD=rename:<path>  the rename() or renameat2() that moves something to <path> (a committed output)
// It prints "medseg-test: held at <spec>" on stderr, waits up to a minute (the test signals it meanwhile), then
// makes the call.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void hold_if(const char* call, const char* path) {
  const char* spec = std::getenv("MEDSEG_TEST_HOLD");
  if (!spec) return;
  const std::size_t n = std::strlen(call);
  if (std::strncmp(spec, call, n) != 0) return;
  if (spec[n] == ':' ? !path || std::strcmp(spec + n + 1, path) != 0 : spec[n] != '\0') return;
  static std::atomic<bool> held{false};
  if (held.exchange(true)) return;  // once per process
  std::fprintf(stderr, "medseg-test: held at %s\n", spec);
  std::fflush(stderr);
  for (int i = 0; i < 600; ++i) ::usleep(100000);
}

template <class Fn>
Fn real(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" int syncfs(int fd) {
  hold_if("syncfs", nullptr);
  static const auto fn = real<int (*)(int)>("syncfs");
  return fn(fd);
}

extern "C" int rename(const char* from, const char* to) {
  hold_if("rename", to);
  static const auto fn = real<int (*)(const char*, const char*)>("rename");
  return fn(from, to);
}

extern "C" int renameat2(int from_dir, const char* from, int to_dir, const char* to, unsigned int flags) {
  hold_if("rename", to);
  static const auto fn = real<int (*)(int, const char*, int, const char*, unsigned int)>("renameat2");
  return fn(from_dir, from, to_dir, to, flags);
}
