// Test helper: runs `promtool check metrics` (the Prometheus project's own
// parser and linter, Debian package prometheus) on a text, for the tests of
// prometheus_text and metrics_server. promtool is a required tool of the
// test suite (scripts/bootstrap.sh installs it); when it is missing the
// result says so, and the tests fail with that message rather than pass
// unchecked.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/test.h"

extern char** environ;

namespace ix::test {

// What promtool said. `ran` is false when it could not be run (`output`
// says why); `exit_code` is its status (0: parsed, no lint problem).
struct PromtoolResult {
  bool ran = false;
  int exit_code = -1;
  std::string output;  // stdout and stderr together: the problems found
};

// $IX_PROMTOOL, else promtool on PATH, else /usr/bin/promtool; "" when
// none is executable.
inline std::string FindPromtool() {
  if (const char* env = std::getenv("IX_PROMTOOL"); env && *env) return ::access(env, X_OK) == 0 ? env : "";
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/promtool";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return ::access("/usr/bin/promtool", X_OK) == 0 ? "/usr/bin/promtool" : "";
}

// Runs `promtool check metrics` with `text` on its standard input.
inline PromtoolResult PromtoolCheckMetrics(const std::string& text) {
  PromtoolResult r;
  const std::string promtool = FindPromtool();
  if (promtool.empty()) {
    r.output = "promtool not found (on PATH, /usr/bin/promtool or $IX_PROMTOOL): it is required; install the "
               "Debian package prometheus (scripts/bootstrap.sh does)";
    return r;
  }
  TempDir dir("ix-promtool");
  const std::string in = dir.path() + "/metrics.txt", out = dir.path() + "/output.txt";
  std::ofstream(in, std::ios::binary) << text;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  char* argv[] = {const_cast<char*>(promtool.c_str()), const_cast<char*>("check"), const_cast<char*>("metrics"),
                  nullptr};
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, promtool.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    r.output = "cannot run " + promtool + ": " + std::to_string(err);
    return r;
  }
  int status = 0;
  const bool done = WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, std::chrono::seconds(60));
  if (!done) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    r.output = promtool + " did not finish in 60 s";
    return r;
  }
  std::stringstream said;
  said << std::ifstream(out, std::ios::binary).rdbuf();
  r.ran = true;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.output = said.str();
  return r;
}

}  // namespace ix::test
