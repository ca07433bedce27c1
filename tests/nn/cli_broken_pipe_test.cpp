// A command whose output or connection has lost its reader says so or goes on; it is never ended silently by
// SIGPIPE (apps/cli_common.cpp). The fact checked is the kernel's: a write into a pipe without a reader raises
// SIGPIPE, and a process that neither catches nor ignores it dies of it (status 128 + 13 in a shell).
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "support/test_support.h"

namespace {

// Runs `program` with stdout and stderr on a pipe whose read end is already closed; its wait status.
int run_into_a_closed_pipe(const std::string& program) {
  int ends[2];
  if (pipe(ends) != 0) return -1;
  close(ends[0]);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(ends[1], 1);
    dup2(ends[1], 2);
    close(ends[1]);
    signal(SIGPIPE, SIG_DFL);  // as a shell starts it, whatever this test process does
    execl(program.c_str(), program.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(ends[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST(CliSignals, AWriteWithoutAReaderDoesNotKillTheCommand) {
  // The control: a program without the handler dies of the signal here, so the check below can fail.
  const int plain = run_into_a_closed_pipe("/bin/echo");
  ASSERT_TRUE(WIFSIGNALED(plain) && WTERMSIG(plain) == SIGPIPE) << "status " << plain;
  const int status = run_into_a_closed_pipe(medseg::test::bin_dir() + "/medseg_version");
  EXPECT_FALSE(WIFSIGNALED(status)) << "medseg_version died of signal " << WTERMSIG(status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 127) << "status " << status;
}
