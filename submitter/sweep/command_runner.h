// RunCommand: runs one program by argv (no shell) with exactly the
// environment given, waits for it within a time limit, and captures what
// it prints. Both pipes are read together (poll), so a program filling one
// never deadlocks on it. What the sweep runs Slurm's tools, srun --help and
// image imports with.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/base/result.h"

namespace ix {

// How a program ended and what it printed. Invariant: signal != 0 only
// when the program was killed by that signal (exit_code is then -1).
struct CommandOutput {
  int exit_code = 0;
  int signal = 0;
  std::string out;
  std::string err;
  bool ok() const { return signal == 0 && exit_code == 0; }
  // "exit status 1" or "killed by signal 9 (Killed)".
  std::string Describe() const;
};

// Runs argv (argv[0] looked up in env's PATH unless it holds a '/'; no
// shell) with `env` as its whole environment, stdin from /dev/null, in its
// own process group, and waits for it. A non-zero exit is not an error here:
// it is in the output. Errors: an empty argv, a program that cannot be
// started ("cannot execute 'x': No such file or directory (PATH=...)"), and
// one still running after `timeout` (its process group is killed; the
// message holds the end of its stderr). `echo`: also copy what it prints,
// as it arrives, to this process's stdout and stderr (a long program, such
// as an image import, shows its progress and is still captured).
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60), bool echo = false);

}  // namespace ix
