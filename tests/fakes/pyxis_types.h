// What the Pyxis double's pieces share: what the --container-* options
// asked for, the job, the step's container, and the plugin's one state `g`
// (a SPANK plugin is called through plain functions, so it lives in a
// global, as in Pyxis). Errors are strings: "" is success.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace ixfake::pyxis {

// One --container-mounts entry. Invariant (ParseMounts): src and dst are
// absolute paths.
struct MountSpec {
  std::string src, dst;
  bool readonly = false;
};

// What the --container-* options asked for (the last of a repeated option
// wins). Nothing is containerized while image is empty.
struct Args {
  std::string image, workdir, name;
  std::vector<MountSpec> mounts;
  std::vector<std::string> keep_env;  // --container-env
  bool remap_root = false;
  bool readonly = false;
};

// The job user and the step, as slurmstepd reports them.
struct Job {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> gids;
  uint32_t id = 0, step = 0, local_tasks = 0;
};

// The container of this step (slurmstepd; inherited by the forked tasks).
// Invariant: the namespace fds are open from a successful user_init until
// the cleanup; userns_fd stays -1 when privileged.
struct Container {
  bool active = false;
  bool privileged = false;  // job user is root: no user namespace
  std::string rootfs;
  int userns_fd = -1, mntns_fd = -1;
  std::vector<std::pair<std::string, std::string>> env;  // the image's /etc/environment
  uint32_t exited_tasks = 0;
  bool removed = false;
  bool user_init_failed = false;
};

// Everything the hooks keep between calls in one process (srun or
// slurmstepd, and the tasks it forks).
struct State {
  std::string runtime_dir = "/run/fake-pyxis";
  Args args;
  std::string option_error;  // the first bad option, reported by init_post_opt
  Job job;
  Container c;
};
extern State g;

// "what: strerror(errno)".
inline std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace ixfake::pyxis
