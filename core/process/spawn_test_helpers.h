// Helpers for the tests that start real processes (spawn, stop, watch),
// instead of a copy in each test file.
#pragma once

#include <sys/wait.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "core/base/file_text.h"
#include "core/process/process.h"

namespace ix::test {

// The whole environment the tests' children get.
inline const std::vector<std::string> kSpawnEnv = {"PATH=/usr/bin:/bin"};

// A spec named `name` that runs `argv` in kSpawnEnv, its output to `log`
// ("" = /dev/null).
inline SpawnSpec TestSpec(std::string name, std::vector<std::string> argv, std::string log = "") {
  SpawnSpec s;
  s.name = std::move(name);
  s.argv = std::move(argv);
  s.env = kSpawnEnv;
  s.log_path = std::move(log);
  return s;
}

// Waits for a spawned child and returns its wait status.
inline int Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// A file's text; "" when it cannot be read.
inline std::string Slurp(const std::string& path) {
  int err = 0;
  return ReadFileText(path, &err);
}

// Whether `pid` is gone: no such process, or a zombie.
inline bool Gone(pid_t pid) {
  Result<ProcessInfo> p = ReadProcessInfo(pid);
  return !p || p.value().exited();
}

}  // namespace ix::test
