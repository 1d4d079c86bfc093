#include "pyxis_container.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/base/text.h"
#include "core/base/unique_fd.h"

namespace ixfake::pyxis {
namespace {

std::string WriteFile(const char* path, const std::string& text) {
  const ix::UniqueFd fd(open(path, O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Errno(std::string("open ") + path);
  const bool ok = write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ok ? "" : Errno(std::string("write ") + path);
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
  std::vector<std::string> parts;
  for (std::string_view p : ix::Split(dst, '/')) {
    if (p == "..") {
      err = dst + ": '..' is not allowed";
      return -1;
    }
    if (!p.empty() && p != ".") parts.emplace_back(p);
  }
  int cur = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
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

// The flags a read-only remount of a bind of `src` must keep: those a user
// namespace cannot drop.
unsigned long LockedFlags(const std::string& src) {
  struct statvfs vfs {};
  if (statvfs(src.c_str(), &vfs) != 0) return 0;
  // The flags as unsigned long: MS_* and ST_* are enumerators in glibc's
  // headers, and GCC 14 and later warn (-Wextra) of `f ? MS_X : 0`, an enum
  // and an int in one conditional.
  const auto keep = [&](unsigned long st_flag, unsigned long ms_flag) { return vfs.f_flag & st_flag ? ms_flag : 0UL; };
  return keep(ST_NOSUID, MS_NOSUID) | keep(ST_NODEV, MS_NODEV) | keep(ST_NOEXEC, MS_NOEXEC);
}

std::string BindMount(int root_fd, const std::string& rootfs, const std::string& src, const std::string& dst,
                      bool readonly) {
  struct stat st {};
  if (stat(src.c_str(), &st) != 0) return Errno("mount source " + src);
  std::string err;
  const ix::UniqueFd target(OpenMountPoint(root_fd, dst, S_ISDIR(st.st_mode), err));
  if (!target.valid()) return err;
  const std::string at = "/proc/self/fd/" + std::to_string(target.get());
  if (mount(src.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return Errno("bind mount " + src + " on " + dst);
  if (!readonly) return "";
  // The fd is the mount point under the new mount: remount by path (its
  // components were just checked not to be symlinks).
  const std::string path = rootfs + dst;
  if (mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | LockedFlags(src), nullptr) != 0)
    return Errno("remount " + dst + " read-only");
  return "";
}

std::string MountTmpfs(int root_fd, const std::string& dst) {
  std::string err;
  const ix::UniqueFd target(OpenMountPoint(root_fd, dst, true, err));
  if (!target.valid()) return err;
  const std::string at = "/proc/self/fd/" + std::to_string(target.get());
  if (mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") != 0) return Errno("tmpfs on " + dst);
  return "";
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

// New namespaces for this process (the user mapped unless privileged); their
// fds appended to `fds`.
std::string Unshare(const Job& job, const Args& args, bool privileged, std::vector<int>& fds) {
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
  return "";
}

// Every mount of the container onto `rootfs` (bound onto itself first); on
// success the working directory is the rootfs.
std::string MountRootfs(const Args& args, const std::string& rootfs) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Errno("make / rprivate");
  if (mount(rootfs.c_str(), rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) return Errno("bind " + rootfs);
  const ix::UniqueFd root(open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return Errno("open " + rootfs);
  if (std::string err = SystemMounts(root.get(), rootfs); !err.empty()) return err;
  for (const MountSpec& mnt : args.mounts) {
    if (std::string err = BindMount(root.get(), rootfs, mnt.src, mnt.dst, mnt.readonly); !err.empty()) return err;
  }
  if (args.readonly && mount(nullptr, rootfs.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0)
    return Errno("remount the rootfs read-only");
  if (fchdir(root.get()) != 0) return Errno("chdir " + rootfs);
  return "";
}

}  // namespace

std::string StartContainer(const Job& job, const Args& args, bool privileged, const std::string& rootfs,
                           std::vector<int>& fds) {
  if (std::string err = Unshare(job, args, privileged, fds); !err.empty()) return err;
  if (std::string err = MountRootfs(args, rootfs); !err.empty()) return err;
  // pivot_root(".", "."): the old root ends up on top of the new one and is
  // detached at once; no put_old directory is needed.
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return Errno("detach the host's root");
  if (chdir("/") != 0) return Errno("chdir /");
  return "";
}

}  // namespace ixfake::pyxis
