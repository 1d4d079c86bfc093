// fake_pyxis.so: a test double for NVIDIA Pyxis 0.24 (spank_pyxis.so), the
// SPANK plugin that runs job steps in enroot containers. Pyxis is not packaged
// for Debian and none of its code is used here; this reproduces what matters
// of it to spank_inferencex.so, written from its documented behaviour:
//
// - plugin_name "pyxis" and the same --container-* options (most accepted and
//   ignored, see tests/fakes/README.md).
// - user_init (slurmstepd, job user): "enroot create" + "enroot start": the
//   image, here a rootfs DIRECTORY (tests/fakes/make_image.sh builds one), is
//   copied into a fresh per-step rootfs owned by the job user under the
//   runtime directory; a helper child makes a user namespace (not when the job
//   user is root: "privileged") and a mount namespace, makes / rprivate, binds
//   the rootfs onto itself, mounts what enroot's default fstab gives (the
//   host's /proc, /dev, /sys, a tmpfs on /tmp, /etc/hosts and the like),
//   applies --container-mounts and pivot_roots into the rootfs. The namespace
//   fds are kept; the helper exits.
// - task_init (task, job user): the image's /etc/environment is imported into
//   the job environment (LANG, LANGUAGE, LC_ALL unset first; names given in
//   --container-env keep the host value), then setns(user) (unless
//   privileged), setns(mnt) (root and cwd become the container's root), chdir
//   to --container-workdir or /.
// - task_exit (slurmstepd): the last local task removes the rootfs on the host
//   as the job user ("enroot remove -f"), which also detaches every mount
//   inside the container. --container-name keeps it for later steps of the
//   job; job_epilog removes the job's named containers.
// Not reproduced: registry images, squashfs, entrypoints, home mounts, enroot
// hooks and configuration, seccomp, cgroup/net/ipc/uts namespaces,
// --container-save. Errors are logged as "fake-pyxis: ..." and fail the hook.
//
// Pieces: pyxis_options (the options), pyxis_helper (running as the job
// user), pyxis_rootfs (copy and removal), pyxis_container (namespaces and
// mounts), pyxis_environment (the image's /etc/environment). This file holds
// the plugin's symbols, its state and the hooks.
#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <string>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include "core/base/text.h"
#include "pyxis_container.h"
#include "pyxis_environment.h"
#include "pyxis_helper.h"
#include "pyxis_options.h"
#include "pyxis_rootfs.h"
#include "pyxis_types.h"

extern "C" {
extern const char plugin_name[] = "pyxis";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace ixfake::pyxis {

State g;

namespace {

// ---------------------------------------------------------------- hooks' bodies

std::string GetJob(spank_t sp, Job& job) {
  if (spank_get_item(sp, S_JOB_UID, &job.uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_GID, &job.gid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_ID, &job.id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &job.step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &job.local_tasks) != ESPANK_SUCCESS)
    return "cannot read the job's uid, gid, ids and task count";
  gid_t* gids = nullptr;
  int ngids = 0;
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) == ESPANK_SUCCESS && gids) {
    job.gids.assign(gids, gids + ngids);
  }
  return "";
}

std::string UserDir(uid_t uid) { return g.runtime_dir + "/" + std::to_string(uid); }

// mkdir -p as root: the runtime directory (0755), then the user's own (0700).
std::string MakeRuntimeDirs(const Job& job) {
  std::string path;
  for (std::string_view p : ix::Split(g.runtime_dir, '/')) {
    if (p.empty()) continue;
    path += '/';
    path += p;
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir " + path);
  }
  const std::string dir = UserDir(job.uid);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Errno("mkdir " + dir);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return dir + ": not a directory";
  if (chown(dir.c_str(), job.uid, job.gid) != 0) return Errno("chown " + dir);
  return "";
}

std::string RootfsPath(const Job& job, const Args& args) {
  const std::string id = "pyxis_" + std::to_string(job.id);
  return UserDir(job.uid) + "/" + (args.name.empty() ? id + "." + std::to_string(job.step) : id + "_" + args.name);
}

std::string InitPostOpt(spank_t sp) {
  if (std::string err = GetJob(sp, g.job); !err.empty()) return err;
  if (g.job.step == SLURM_EXTERN_CONT) return "";
  if (std::string err = MakeRuntimeDirs(g.job); !err.empty()) return err;
  g.c.active = true;
  g.c.privileged = g.job.uid == 0;
  g.c.rootfs = RootfsPath(g.job, g.args);
  return "";
}

std::string UserInit() {
  const auto t0 = std::chrono::steady_clock::now();
  const bool named = !g.args.name.empty();
  struct stat st {};
  if (!named && lstat(g.c.rootfs.c_str(), &st) == 0) {  // left by a crashed step of an earlier cluster run
    slurm_info("fake-pyxis: removing stale container filesystem %s", g.c.rootfs.c_str());
    if (std::string err = RemoveRootfs(g.job, g.c.rootfs); !err.empty()) return err;
  }
  std::vector<int> fds;
  std::string err = RunAsUser(
      g.job,
      [&](std::vector<int>& out) {
        std::string e = CreateRootfs(g.args, g.c.rootfs, named);
        return e.empty() ? StartContainer(g.job, g.args, g.c.privileged, g.c.rootfs, out) : e;
      },
      &fds);
  if (err.empty() && fds.size() != (g.c.privileged ? 1u : 2u)) err = "the helper passed no namespace descriptors";
  if (!err.empty()) {
    for (int fd : fds) close(fd);
    if (!named) RemoveRootfs(g.job, g.c.rootfs);
    g.c.removed = true;
    return "container " + g.c.rootfs + ": " + err;
  }
  g.c.userns_fd = g.c.privileged ? -1 : fds[0];
  g.c.mntns_fd = fds.back();
  g.c.env = ReadEnvironment(g.c.rootfs + "/etc/environment");
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  slurm_info("fake-pyxis: step %u.%u: container %s started (%s, %.1f ms)", g.job.id, g.job.step, g.c.rootfs.c_str(),
             g.c.privileged ? "privileged" : (g.args.remap_root ? "user namespace, remapped to root" : "user namespace"),
             ms);
  return "";
}

std::string TaskInit(spank_t sp) {
  if (std::string err = ImportEnvironment(sp, g.c.env, g.args.keep_env); !err.empty()) return err;
  if (!g.c.privileged && setns(g.c.userns_fd, CLONE_NEWUSER) != 0) return Errno("join the user namespace");
  if (setns(g.c.mntns_fd, CLONE_NEWNS) != 0) return Errno("join the mount namespace");
  const std::string dir = g.args.workdir.empty() ? "/" : g.args.workdir;
  if (chdir(dir.c_str()) != 0) return Errno("chdir " + dir + " in the container");
  return "";
}

void CloseNamespaces() {
  for (int* fd : {&g.c.userns_fd, &g.c.mntns_fd}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

// The rootfs goes with the last local task (or at the step's exit when no
// task ran); a named one stays until the job's epilog.
std::string Cleanup() {
  CloseNamespaces();
  if (g.c.removed || !g.args.name.empty()) return "";
  g.c.removed = true;
  const std::string err = RemoveRootfs(g.job, g.c.rootfs);
  if (err.empty()) slurm_info("fake-pyxis: removed container filesystem %s", g.c.rootfs.c_str());
  return err;
}

// job_epilog (root): every container of the job left under the user's
// directory: the named ones, and unnamed ones of steps that crashed.
std::string JobEpilog(spank_t sp) {
  Job job;
  if (spank_get_item(sp, S_JOB_UID, &job.uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_ID, &job.id) != ESPANK_SUCCESS)
    return "epilog: cannot read the job's uid and id";
  struct stat st {};
  if (stat(UserDir(job.uid).c_str(), &st) != 0) return "";
  job.gid = st.st_gid;  // the group the user's directory was given
  DIR* dir = opendir(UserDir(job.uid).c_str());
  if (!dir) return "";
  const std::string prefix = "pyxis_" + std::to_string(job.id);
  std::vector<std::string> victims;
  while (dirent* e = readdir(dir)) {
    const std::string n = e->d_name;
    if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() && (n[prefix.size()] == '_' || n[prefix.size()] == '.'))
      victims.push_back(UserDir(job.uid) + "/" + n);
  }
  closedir(dir);
  std::string err;
  for (const std::string& v : victims) {
    const std::string e = RemoveRootfs(job, v);
    if (e.empty()) slurm_info("fake-pyxis: epilog: removed container filesystem %s", v.c_str());
    if (err.empty()) err = e;
  }
  return err;
}

// Runs a hook body, turning its error (or an exception) into slurm_error + -1.
template <class Body>
int Hook(const char* name, Body&& body) noexcept {
  try {
    const std::string err = body();
    if (err.empty()) return 0;
    slurm_error("fake-pyxis: %s", err.c_str());
  } catch (const std::exception& e) {
    slurm_error("fake-pyxis: internal error in %s: %s", name, e.what());
  } catch (...) {
    slurm_error("fake-pyxis: internal error in %s", name);
  }
  return -1;
}

}  // namespace
}  // namespace ixfake::pyxis

// The hooks Slurm looks up (fake_pyxis.map exports only these and the
// plugin_* symbols).
using namespace ixfake::pyxis;

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
  return Hook("init", [&]() -> std::string {
    const spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE) return "";
    if (std::string err = ParsePluginArgs(ac, av); !err.empty()) return err;
    return RegisterOptions(sp);
  });
}

int slurm_spank_init_post_opt(spank_t sp, int /*ac*/, char** /*av*/) {
  return Hook("init_post_opt", [&]() -> std::string {
    if (!g.option_error.empty()) return g.option_error;
    if (g.args.image.empty() || spank_context() != S_CTX_REMOTE) return "";
    return InitPostOpt(sp);
  });
}

// An error of user_init is logged, but returning it would make srun exit 0
// (Slurm bug 7573); like Pyxis, the step fails in task_init instead.
int slurm_spank_user_init(spank_t /*sp*/, int /*ac*/, char** /*av*/) {
  g.c.user_init_failed = Hook("user_init", [&]() -> std::string { return g.c.active ? UserInit() : ""; }) != 0;
  return 0;
}

int slurm_spank_task_init(spank_t sp, int /*ac*/, char** /*av*/) {
  if (g.c.user_init_failed) return -1;
  return Hook("task_init", [&]() -> std::string { return g.c.active ? TaskInit(sp) : ""; });
}

int slurm_spank_task_exit(spank_t /*sp*/, int /*ac*/, char** /*av*/) {
  return Hook("task_exit", [&]() -> std::string {
    if (!g.c.active || ++g.c.exited_tasks < g.job.local_tasks) return "";
    return Cleanup();
  });
}

int slurm_spank_exit(spank_t /*sp*/, int /*ac*/, char** /*av*/) {
  return Hook("exit", [&]() -> std::string {
    if (!g.c.active || spank_context() != S_CTX_REMOTE) return "";
    return Cleanup();
  });
}

int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  return Hook("job_epilog", [&]() -> std::string {
    if (std::string err = ParsePluginArgs(ac, av); !err.empty()) return err;
    return JobEpilog(sp);
  });
}

}  // extern "C"
