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
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

extern "C" {
extern const char plugin_name[] = "pyxis";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

// ---------------------------------------------------------------- state

struct MountSpec {
  std::string src, dst;
  bool readonly = false;
};

// What the --container-* options asked for.
struct Args {
  std::string image, workdir, name;
  std::vector<MountSpec> mounts;
  std::vector<std::string> keep_env;  // --container-env
  bool remap_root = false;
  bool readonly = false;
};

struct Job {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> gids;
  uint32_t id = 0, step = 0, local_tasks = 0;
};

// The container of this step (slurmstepd; inherited by the forked tasks).
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

struct State {
  std::string runtime_dir = "/run/fake-pyxis";
  Args args;
  std::string option_error;
  Job job;
  Container c;
};
State g;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// ---------------------------------------------------------------- options

enum OptionId {
  kImage = 1, kMounts, kWorkdir, kName, kSave, kMountHome, kNoMountHome, kRemapRoot, kNoRemapRoot,
  kEntrypoint, kNoEntrypoint, kEntrypointLog, kWritable, kReadonly, kEnv, kUnshare
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

// "SRC:DST[:FLAGS],..." with FLAGS joined by '+' (ro, rw; others accepted).
std::string ParseMounts(const std::string& value, std::vector<MountSpec>& out) {
  for (const std::string& item : Split(value, ',')) {
    const std::vector<std::string> parts = Split(item, ':');
    if (parts.size() > 3 || parts[0].empty()) return "--container-mounts: bad entry '" + item + "'";
    MountSpec m{parts[0], parts.size() > 1 ? parts[1] : parts[0], false};
    if (m.src.front() != '/' || m.dst.empty() || m.dst.front() != '/')
      return "--container-mounts: '" + item + "': source and destination must be absolute paths";
    if (parts.size() == 3) {
      for (const std::string& flag : Split(parts[2], '+')) m.readonly = flag == "ro" || (m.readonly && flag != "rw");
    }
    out.push_back(m);
  }
  return "";
}

int OnOption(int val, const char* optarg, int /*remote*/) noexcept {
  try {
    const std::string v = optarg ? optarg : "";
    std::string err;
    switch (val) {
      case kImage: g.args.image = v; break;
      case kMounts:  // Slurm may deliver an option twice: the last value wins
        g.args.mounts.clear();
        err = ParseMounts(v, g.args.mounts);
        break;
      case kWorkdir:
        if (v.empty() || v.front() != '/') err = "--container-workdir must be an absolute path";
        g.args.workdir = v;
        break;
      case kName:
        if (v.empty() || v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                             std::string::npos)
          err = "--container-name=" + v + ": use letters, digits, '.', '_' and '-' only";
        g.args.name = v;
        break;
      case kRemapRoot: g.args.remap_root = true; break;
      case kNoRemapRoot: g.args.remap_root = false; break;
      case kWritable: g.args.readonly = false; break;
      case kReadonly: g.args.readonly = true; break;
      case kEnv:
        g.args.keep_env.clear();
        for (const std::string& n : Split(v, ',')) g.args.keep_env.push_back(n);
        break;
      default: break;  // accepted, not reproduced (README.md)
    }
    if (err.empty()) return 0;
    g.option_error = err;
    slurm_error("fake-pyxis: %s", err.c_str());
    return -1;
  } catch (...) {
    slurm_error("fake-pyxis: internal error while parsing an option");
    return -1;
  }
}

char* C(const char* s) { return const_cast<char*>(s); }
#define IX_OPT(name, arginfo, usage, has_arg, id) {C(name), C(arginfo), C("[fake pyxis] " usage), has_arg, id, OnOption}
struct spank_option kOptions[] = {
    IX_OPT("container-image", "DIR", "rootfs directory of the container (the double takes no registry images)", 1,
           kImage),
    IX_OPT("container-mounts", "SRC:DST[:FLAGS][,SRC:DST...]", "bind mount[s] inside the container (flags: ro)", 1,
           kMounts),
    IX_OPT("container-workdir", "PATH", "working directory inside the container", 1, kWorkdir),
    IX_OPT("container-name", "NAME", "keep the container for later steps of the job", 1, kName),
    IX_OPT("container-save", "PATH", "accepted, ignored", 1, kSave),
    IX_OPT("container-mount-home", nullptr, "accepted, ignored", 0, kMountHome),
    IX_OPT("no-container-mount-home", nullptr, "do not mount home (the double never does)", 0, kNoMountHome),
    IX_OPT("container-remap-root", nullptr, "be root inside the container (user namespace)", 0, kRemapRoot),
    IX_OPT("no-container-remap-root", nullptr, "keep your uid inside the container", 0, kNoRemapRoot),
    IX_OPT("container-entrypoint", nullptr, "accepted, ignored (no entrypoint is run)", 0, kEntrypoint),
    IX_OPT("no-container-entrypoint", nullptr, "do not run the entrypoint (the double never does)", 0,
           kNoEntrypoint),
    IX_OPT("container-entrypoint-log", nullptr, "accepted, ignored", 0, kEntrypointLog),
    IX_OPT("container-writable", nullptr, "writable container filesystem (default)", 0, kWritable),
    IX_OPT("container-readonly", nullptr, "read-only container filesystem", 0, kReadonly),
    IX_OPT("container-env", "NAME[,NAME...]", "variables that keep the host value over the image's", 1, kEnv),
    IX_OPT("container-unshare", "NS[,NS...]", "accepted, ignored", 1, kUnshare),
};
#undef IX_OPT

// plugstack.conf arguments: runtime_dir=DIR (also Pyxis's runtime_path=DIR);
// Pyxis's other arguments are accepted and ignored.
std::string ParsePluginArgs(int ac, char** av) {
  for (int i = 0; i < ac; ++i) {
    const std::string a = av[i];
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "runtime_dir" || key == "runtime_path") {
      if (value.empty() || value.front() != '/') return a + ": must be an absolute path";
      g.runtime_dir = value;
    } else if (key != "container_scope" && key != "remap_root" && key != "execute_entrypoint" &&
               key != "container_image_save" && key != "sbatch_support" && key != "use_enroot_load") {
      return "unknown plugstack.conf argument '" + a + "' (known: runtime_dir=DIR)";
    }
  }
  return "";
}

// ---------------------------------------------------------------- helpers in a child process

// The job user, entirely (uid, gid and groups). slurmstepd has only dropped
// its effective ids in user_init (real uid root): setres*id to the effective
// ids is allowed there; as root, the groups are set first.
std::string BecomeUser(const Job& job) {
  if (geteuid() == 0 && setgroups(job.gids.size(), job.gids.data()) != 0) return Errno("setgroups");
  if (setresgid(job.gid, job.gid, job.gid) != 0) return Errno("setresgid");
  if (setresuid(job.uid, job.uid, job.uid) != 0) return Errno("setresuid");
  return "";
}

// Runs fn in a child process as the job user; fn's error (or its fds, passed
// back with SCM_RIGHTS) come back over a socket. Used where Pyxis runs enroot.
std::string RunAsUser(const Job& job, const std::function<std::string(std::vector<int>&)>& fn,
                      std::vector<int>* fds_out) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return Errno("socketpair");
  const pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return Errno("fork");
  }
  if (pid == 0) {
    close(sv[0]);
    std::vector<int> fds;
    std::string err;
    try {
      err = BecomeUser(job);
      if (err.empty()) err = fn(fds);
    } catch (...) {
      err = "internal error in the helper";
    }
    const std::string msg = err.empty() ? std::string("K") : "E" + err;
    iovec iov{const_cast<char*>(msg.data()), msg.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 4)] = {};
    if (err.empty() && !fds.empty() && fds.size() <= 4) {
      mh.msg_control = ctl;
      mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* cm = CMSG_FIRSTHDR(&mh);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
    }
    const bool sent = sendmsg(sv[1], &mh, 0) >= 0;
    _exit(err.empty() && sent ? 0 : 1);
  }
  close(sv[1]);
  char buf[4096];
  iovec iov{buf, sizeof(buf)};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 4)] = {};
  mh.msg_control = ctl;
  mh.msg_controllen = sizeof(ctl);
  ssize_t n;
  do n = recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  close(sv[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    std::vector<int> fds(count);
    std::memcpy(fds.data(), CMSG_DATA(cm), sizeof(int) * count);
    if (fds_out) {
      fds_out->insert(fds_out->end(), fds.begin(), fds.end());
    } else {
      for (int fd : fds) close(fd);
    }
  }
  if (n <= 0) return "helper process ended without an answer (wait status " + std::to_string(status) + ")";
  if (buf[0] == 'K') return "";
  return std::string(buf + 1, static_cast<size_t>(n - 1));
}

// ---------------------------------------------------------------- rootfs copy and removal

std::string CopyTree(int src_dir, int dst_dir, const std::string& where);

std::string CopyFile(int src_dir, int dst_dir, const char* name, mode_t mode, const std::string& path) {
  const int in = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) return Errno("open " + path);
  const int out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0) {
    close(in);
    return Errno("create " + path);
  }
  std::string err;
  while (err.empty()) {
    const ssize_t n = sendfile(out, in, nullptr, 1 << 30);
    if (n < 0 && errno != EINTR) err = Errno("copy " + path);
    if (n == 0) break;
  }
  if (err.empty() && fchmod(out, mode & 07777) != 0) err = Errno("chmod " + path);
  close(in);
  close(out);
  return err;
}

std::string CopyEntry(int src_dir, int dst_dir, const char* name, const std::string& path) {
  struct stat st {};
  if (fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return Errno("stat " + path);
  if (S_ISREG(st.st_mode)) return CopyFile(src_dir, dst_dir, name, st.st_mode, path);
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    const ssize_t n = readlinkat(src_dir, name, target.data(), target.size());
    if (n < 0) return Errno("readlink " + path);
    target.resize(static_cast<size_t>(n));
    return symlinkat(target.c_str(), dst_dir, name) == 0 ? "" : Errno("symlink " + path);
  }
  if (!S_ISDIR(st.st_mode)) return path + ": unsupported file type in the image (only files, directories, symlinks)";
  if (mkdirat(dst_dir, name, 0700) != 0) return Errno("mkdir " + path);
  const int s = openat(src_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const int d = openat(dst_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  std::string err = s < 0 || d < 0 ? Errno("open " + path) : CopyTree(s, d, path);
  if (err.empty() && fchmod(d, st.st_mode & 07777) != 0) err = Errno("chmod " + path);
  if (s >= 0) close(s);
  if (d >= 0) close(d);
  return err;
}

// Copies the contents of directory src_dir into dst_dir (both fds; src_dir
// is consumed by fdopendir's duplicate, not closed).
std::string CopyTree(int src_dir, int dst_dir, const std::string& where) {
  const int dup_fd = fcntl(src_dir, F_DUPFD_CLOEXEC, 0);
  DIR* dir = dup_fd < 0 ? nullptr : fdopendir(dup_fd);
  if (!dir) return Errno("opendir " + where);
  std::string err;
  while (dirent* e = readdir(dir)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    err = CopyEntry(src_dir, dst_dir, e->d_name, where + "/" + e->d_name);
    if (!err.empty()) break;
  }
  closedir(dir);
  return err;
}

// rm -rf NAME in dir_fd, without following symlinks and without entering a
// mount (a directory on another device or the root of a mount is left and
// reported). Directories the user cannot write are made writable first.
std::string RemoveAt(int dir_fd, const char* name, dev_t dev, const std::string& path) {
  struct statx sx {};
  if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE | STATX_MODE, &sx) != 0) {
    return errno == ENOENT ? "" : Errno("stat " + path);
  }
  if (!S_ISDIR(sx.stx_mode)) return unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT ? "" : Errno("unlink " + path);
  if ((sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) || makedev(sx.stx_dev_major, sx.stx_dev_minor) != dev)
    return path + ": a mount point, not removed";
  if ((sx.stx_mode & S_IRWXU) != S_IRWXU) fchmodat(dir_fd, name, (sx.stx_mode & 07777) | S_IRWXU, 0);
  const int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR* dir = fd < 0 ? nullptr : fdopendir(fd);
  if (!dir) {
    if (fd >= 0) close(fd);
    return Errno("open " + path);
  }
  std::string err;
  std::vector<std::string> names;
  while (dirent* e = readdir(dir)) {
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.emplace_back(e->d_name);
  }
  for (const std::string& n : names) {
    const std::string e = RemoveAt(fd, n.c_str(), dev, path + "/" + n);
    if (err.empty()) err = e;
  }
  closedir(dir);
  if (err.empty() && unlinkat(dir_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) err = Errno("rmdir " + path);
  return err;
}

// "enroot remove -f": the rootfs tree on the host, as the job user.
std::string RemoveRootfs(const Job& job, const std::string& rootfs) {
  return RunAsUser(
      job,
      [&](std::vector<int>&) -> std::string {
        const size_t slash = rootfs.rfind('/');
        const std::string parent = rootfs.substr(0, slash), base = rootfs.substr(slash + 1);
        const int pfd = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0) return errno == ENOENT ? "" : Errno("open " + parent);
        struct stat st {};
        std::string err = fstat(pfd, &st) != 0 ? Errno("stat " + parent) : RemoveAt(pfd, base.c_str(), st.st_dev, rootfs);
        close(pfd);
        return err;
      },
      nullptr);
}

// ---------------------------------------------------------------- the container (helper child, job user)

std::string WriteFile(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Errno(std::string("open ") + path);
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const std::string err = ok ? "" : Errno(std::string("write ") + path);
  close(fd);
  return err;
}

// The job user as `inside` (0 with --container-remap-root, else itself).
std::string MapUser(const Job& job, uid_t inside) {
  std::string err = WriteFile("/proc/self/setgroups", "deny");
  if (err.empty()) err = WriteFile("/proc/self/uid_map", std::to_string(inside) + " " + std::to_string(job.uid) + " 1");
  const gid_t gin = inside == 0 ? 0 : job.gid;
  if (err.empty()) err = WriteFile("/proc/self/gid_map", std::to_string(gin) + " " + std::to_string(job.gid) + " 1");
  return err;
}

// Opens (creating what is missing, without following symlinks) the mount
// point `dst` inside the rootfs: a directory, or an empty file when the
// source is not a directory. Returns an O_PATH fd or -1 with err set.
int OpenMountPoint(int root_fd, const std::string& dst, bool dir, std::string& err) {
  int cur = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
  std::vector<std::string> parts;
  for (const std::string& p : Split(dst, '/')) {
    if (p == "..") {
      err = dst + ": '..' is not allowed";
      close(cur);
      return -1;
    }
    if (!p.empty() && p != ".") parts.push_back(p);
  }
  for (size_t i = 0; i < parts.size() && cur >= 0; ++i) {
    const bool last = i + 1 == parts.size();
    const char* name = parts[i].c_str();
    if (last && !dir) {
      const int f = openat(cur, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (f >= 0) close(f);
    } else if (mkdirat(cur, name, 0755) != 0 && errno != EEXIST) {
      err = Errno("mkdir " + dst);
      close(cur);
      return -1;
    }
    const int next = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | (last && !dir ? 0 : O_DIRECTORY));
    if (next < 0) err = Errno("open " + dst + " in the container (symlinks are not followed)");
    close(cur);
    cur = next;
  }
  return cur;
}

std::string BindMount(int root_fd, const std::string& rootfs, const std::string& src, const std::string& dst,
                      bool readonly) {
  struct stat st {};
  if (stat(src.c_str(), &st) != 0) return Errno("mount source " + src);
  std::string err;
  const int target = OpenMountPoint(root_fd, dst, S_ISDIR(st.st_mode), err);
  if (target < 0) return err;
  const std::string at = "/proc/self/fd/" + std::to_string(target);
  if (mount(src.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    err = Errno("bind mount " + src + " on " + dst);
  } else if (readonly) {
    // A remount must keep the flags a user namespace cannot drop.
    struct statvfs vfs {};
    unsigned long keep = 0;
    if (statvfs(src.c_str(), &vfs) == 0) {
      keep = (vfs.f_flag & ST_NOSUID ? MS_NOSUID : 0) | (vfs.f_flag & ST_NODEV ? MS_NODEV : 0) |
             (vfs.f_flag & ST_NOEXEC ? MS_NOEXEC : 0);
    }
    // The fd is the mount point under the new mount: remount by path (its
    // components were just checked not to be symlinks).
    const std::string path = rootfs + dst;
    if (mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, nullptr) != 0)
      err = Errno("remount " + dst + " read-only");
  }
  close(target);
  return err;
}

std::string MountTmpfs(int root_fd, const std::string& dst) {
  std::string err;
  const int target = OpenMountPoint(root_fd, dst, true, err);
  if (target < 0) return err;
  const std::string at = "/proc/self/fd/" + std::to_string(target);
  if (mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") != 0) err = Errno("tmpfs on " + dst);
  close(target);
  return err;
}

// What enroot's default mounts.d/10-system.fstab gives every container: the
// host's /proc, /dev (rbind) and /sys (rbind, read-only), a fresh tmpfs on
// /tmp, and the host's /etc/hosts, /etc/hostname, /etc/resolv.conf and
// /etc/machine-id read-only (those the host has). Its /var/run and /var/lock
// tmpfs and mount flags (nosuid, noexec, rslave) are left out.
std::string SystemMounts(int root_fd, const std::string& rootfs) {
  std::string err = BindMount(root_fd, rootfs, "/proc", "/proc", false);
  if (err.empty()) err = BindMount(root_fd, rootfs, "/dev", "/dev", false);
  if (err.empty()) err = BindMount(root_fd, rootfs, "/sys", "/sys", true);
  if (err.empty()) err = MountTmpfs(root_fd, "/tmp");
  for (const char* file : {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/etc/machine-id"}) {
    if (err.empty() && access(file, F_OK) == 0) err = BindMount(root_fd, rootfs, file, file, true);
  }
  return err;
}

// Everything "enroot start" does to the namespaces, in the helper child:
// returns the namespace fds (user ns first when there is one, then mnt).
std::string StartContainer(const Job& job, const Args& args, bool privileged, const std::string& rootfs,
                           std::vector<int>& fds) {
  // slurmstepd is not dumpable (it changed its euid), nor is this fork of
  // it: its /proc files would be root's and uid_map could not be written.
  if (prctl(PR_SET_DUMPABLE, 1) != 0) return Errno("prctl(PR_SET_DUMPABLE)");
  if (unshare(CLONE_NEWNS | (privileged ? 0 : CLONE_NEWUSER)) != 0) return Errno("unshare");
  if (!privileged) {
    if (std::string err = MapUser(job, args.remap_root ? 0 : job.uid); !err.empty()) return err;
    const int u = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
    if (u < 0) return Errno("open /proc/self/ns/user");
    fds.push_back(u);
  }
  const int m = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (m < 0) return Errno("open /proc/self/ns/mnt");
  fds.push_back(m);
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Errno("make / rprivate");
  if (mount(rootfs.c_str(), rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) return Errno("bind " + rootfs);
  const int root = open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return Errno("open " + rootfs);
  std::string err;
  if (err.empty()) err = SystemMounts(root, rootfs);
  for (const MountSpec& mnt : args.mounts) {
    if (err.empty()) err = BindMount(root, rootfs, mnt.src, mnt.dst, mnt.readonly);
  }
  if (err.empty() && args.readonly &&
      mount(nullptr, rootfs.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0)
    err = Errno("remount the rootfs read-only");
  if (err.empty() && fchdir(root) != 0) err = Errno("chdir " + rootfs);
  close(root);
  if (!err.empty()) return err;
  // pivot_root(".", "."): the old root ends up on top of the new one and is
  // detached at once; no put_old directory is needed.
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return Errno("detach the host's root");
  if (chdir("/") != 0) return Errno("chdir /");
  return "";
}

// "enroot create": a fresh copy of the image directory (a named container
// that already exists is reused as it is).
std::string CreateRootfs(const Args& args, const std::string& rootfs, bool reuse) {
  struct stat st {};
  if (reuse && lstat(rootfs.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "";
  const int src = open(args.image.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (src < 0) return Errno("--container-image=" + args.image + " (the double takes a rootfs directory)");
  std::string err;
  if (mkdir(rootfs.c_str(), 0700) != 0) err = Errno("mkdir " + rootfs);
  const int dst = err.empty() ? open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
  if (err.empty() && dst < 0) err = Errno("open " + rootfs);
  if (err.empty()) err = CopyTree(src, dst, args.image);
  if (err.empty() && fstat(src, &st) == 0 && fchmod(dst, st.st_mode & 07777) != 0) err = Errno("chmod " + rootfs);
  close(src);
  if (dst >= 0) close(dst);
  return err;
}

// NAME=value lines of the image's /etc/environment ("export " and quotes
// around the value allowed; blank lines and # comments skipped).
std::vector<std::pair<std::string, std::string>> ReadEnvironment(const std::string& file) {
  std::vector<std::pair<std::string, std::string>> env;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    line = line.substr(b);
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    const size_t eq = line.find('=');
    if (eq == 0 || eq == std::string::npos) continue;
    std::string name = line.substr(0, eq), value = line.substr(eq + 1);
    if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
      continue;
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ' || value.back() == '\t')) value.pop_back();
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    env.emplace_back(name, value);
  }
  return env;
}

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
  for (const std::string& p : Split(g.runtime_dir, '/')) {
    if (p.empty()) continue;
    path += "/" + p;
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

bool KeepHostValue(const std::string& name) {
  for (const std::string& k : g.args.keep_env) {
    if (k == name) return true;
  }
  return false;
}

std::string TaskInit(spank_t sp) {
  for (const char* name : {"LANG", "LANGUAGE", "LC_ALL"}) spank_unsetenv(sp, name);
  for (const auto& [name, value] : g.c.env) {
    if (KeepHostValue(name)) continue;
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) return "cannot set " + name;
  }
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

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
  return Hook("init", [&]() -> std::string {
    const spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE) return "";
    if (std::string err = ParsePluginArgs(ac, av); !err.empty()) return err;
    for (auto& opt : kOptions) {
      if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) return std::string("cannot register --") + opt.name;
    }
    return "";
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
