// The child of Spawn between fork and execve: what it does, as plain data
// the parent prepared (ChildPlan), and how it tells the parent which step
// failed (ChildReport records on a close-on-exec pipe: EOF means the exec
// happened). Internal to Spawn (spawn.cc); docs/PROCESS.md.
//
// Invariant: ChildMain is async-signal-safe: system calls on data the
// parent prepared, no allocation, no locks, no stdio. The parent may have
// had threads, and fork copied only the one that called it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "core/node/binding.h"

namespace ix {

// The steps of the child, in order, as a ChildReport names them.
enum class ChildStep : int32_t {
  kSignals = 1,
  kProcessGroup,
  kStdio,
  kCloseFds,
  kBinding,
  kSetgroups,
  kSetgid,
  kSetuid,
  kCredentialCheck,
  kChdir,
  kDeathSignal,
  kParentGone,
  kExec,
};

// One record on the report pipe. Smaller than PIPE_BUF, so it is written
// and read whole; `call` is NUL-terminated (the parent makes sure).
struct ChildReport {
  int32_t step = 0;   // a ChildStep
  int32_t err = 0;    // errno, or 0 when the step failed without one
  int32_t fatal = 0;  // 1: the child exits after this; 0: a note, it goes on
  char call[36] = {};  // the system call that failed, where a step has several
};

// What the child does, as plain pointers into the parent's prepared data,
// which outlives the fork (the child's copy of it, that is).
struct ChildPlan {
  int report_fd = -1, stdin_fd = -1, out_fd = -1;  // each >= 3 (never a stdio target)
  const char* cwd = nullptr;  // nullptr = stay
  int cwd_fd = -1;            // else fchdir here when >= 0
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* const* candidates = nullptr;  // the files execve tries, in order
  size_t candidate_count = 0;
  bool switch_credentials = false;
  uid_t uid = 0;
  gid_t gid = 0;
  const gid_t* groups = nullptr;
  size_t group_count = 0;
  const PreparedBinding* binding = nullptr;
  bool binding_fatal = true;
  int death_signal = 0;
  pid_t parent = 0;
};

// The child's whole life up to execve: default signal dispositions and an
// empty mask, its own process group, stdio, every other descriptor
// close-on-exec, the binding, the credentials, the working directory, the
// parent-death signal, then execve of the first candidate that runs. A
// failed step is reported on plan.report_fd and ends the child (127).
[[noreturn]] void ChildMain(const ChildPlan& plan) noexcept;

}  // namespace ix
