// Spawn: starting one program exactly as a launch plan says (fork +
// execve, no shell), and the environment it gets. docs/PROCESS.md.
//
// Spawn prepares everything in the parent (argv/envp arrays, PATH
// candidates, the log and /dev/null descriptors, the groups array, the
// binding masks); the child between fork and execve only makes
// async-signal-safe system calls and allocates nothing (spawn_child.h). A
// failure there comes back through a close-on-exec pipe as (step, errno),
// so Spawn returns an Error that says which step failed and why.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/proc_fs.h"  // ProcessId
#include "core/base/result.h"
#include "core/node/binding.h"
#include "core/recipe/launch_plan.h"

namespace ix {

// ---- environment ------------------------------------------------------------

// This process's environment as NAME=VALUE strings, in order.
std::vector<std::string> CurrentEnvironment();
// `base` (NAME=VALUE strings) with `adds` applied in order: an entry whose
// name is already present replaces that value in place, a new name is
// appended; later entries win. Names are unique in the result (a name
// repeated in `base` keeps its first position and the last value).
std::vector<std::string> BuildEnvironment(const std::vector<std::string>& base, const EnvList& adds);
// The value of NAME in an environment, as getenv would find it (first entry).
std::optional<std::string> FindEnv(const std::vector<std::string>& env, std::string_view name);

// ---- spawning ---------------------------------------------------------------

// Who the child runs as. Applied only when the caller is root (setgroups,
// then setresgid, then setresuid, each checked); a non-root caller may ask
// only for its own uid and gid, which changes nothing.
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups; empty = none
};

// One program to start. Invariants checked by Spawn: argv is non-empty and
// argv[0] is not empty; no string holds a NUL byte; every env entry has a
// NAME before its '='.
struct SpawnSpec {
  std::string name;                // "engine": prefixes every error
  std::vector<std::string> argv;   // exact; argv[0] is looked up in env's PATH unless it has a '/'
  std::vector<std::string> env;    // the whole environment of the child (BuildEnvironment)
  std::string cwd;                 // "" = the caller's working directory
  int cwd_fd = -1;                 // else this directory (a descriptor), if >= 0
  std::string log_path;            // stdout and stderr, appended; "" = /dev/null
  int log_dir_fd = AT_FDCWD;       // a relative log_path is under this directory (a descriptor)
  std::optional<Credentials> credentials;
  const PreparedBinding* binding = nullptr;  // applied before exec; must outlive Spawn
  bool binding_best_effort = false;  // true: a failed binding is recorded, the child runs unbound
  int parent_death_signal = 0;       // e.g. SIGKILL: PR_SET_PDEATHSIG; 0 = off
};

// A started process. It leads its own process group (pgid == id.pid) and
// is a child of the caller until someone reaps it.
struct SpawnedProcess {
  std::string name;
  ProcessId id;
  std::string binding_error;  // set only when binding_best_effort and the binding failed
};

// Starts spec.argv. The child: default signal dispositions and an empty
// signal mask, its own process group, stdin from /dev/null, stdout and stderr
// to the log (opened O_APPEND|O_CREAT 0644 by the caller, chowned to the
// target user when switching; a symlink, FIFO or anything but a regular file
// there is refused, without blocking), every other descriptor closed, the binding,
// the credentials, the working directory (entered as the target user), the
// parent-death signal, then execve of the first PATH candidate that runs.
// Errors read like `engine: cannot execute 'vllm': No such file or directory
// (PATH=/usr/bin:/bin)`.
Result<SpawnedProcess> Spawn(const SpawnSpec& spec);

}  // namespace ix
