#include "pyxis_rootfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <vector>

#include "core/base/unique_fd.h"
#include "pyxis_helper.h"

namespace ixfake::pyxis {
namespace {

std::string CopyTree(int src_dir, int dst_dir, const std::string& where);

// The names in directory fd (without . and ..), read through a duplicate;
// false when it cannot be read.
bool ListDir(int fd, std::vector<std::string>& names) {
  const int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  DIR* dir = dup_fd < 0 ? nullptr : fdopendir(dup_fd);
  if (!dir) {
    if (dup_fd >= 0) close(dup_fd);
    return false;
  }
  while (dirent* e = readdir(dir)) {
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.emplace_back(e->d_name);
  }
  closedir(dir);
  return true;
}

std::string CopyFile(int src_dir, int dst_dir, const char* name, mode_t mode, const std::string& path) {
  const ix::UniqueFd in(openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in.valid()) return Errno("open " + path);
  const ix::UniqueFd out(openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out.valid()) return Errno("create " + path);
  std::string err;
  while (err.empty()) {
    const ssize_t n = sendfile(out.get(), in.get(), nullptr, 1 << 30);
    if (n < 0 && errno != EINTR) err = Errno("copy " + path);
    if (n == 0) break;
  }
  if (err.empty() && fchmod(out.get(), mode & 07777) != 0) err = Errno("chmod " + path);
  return err;
}

std::string CopySymlink(int src_dir, int dst_dir, const char* name, const struct stat& st, const std::string& path) {
  std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
  const ssize_t n = readlinkat(src_dir, name, target.data(), target.size());
  if (n < 0) return Errno("readlink " + path);
  target.resize(static_cast<size_t>(n));
  return symlinkat(target.c_str(), dst_dir, name) == 0 ? "" : Errno("symlink " + path);
}

std::string CopyEntry(int src_dir, int dst_dir, const char* name, const std::string& path) {
  struct stat st {};
  if (fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return Errno("stat " + path);
  if (S_ISREG(st.st_mode)) return CopyFile(src_dir, dst_dir, name, st.st_mode, path);
  if (S_ISLNK(st.st_mode)) return CopySymlink(src_dir, dst_dir, name, st, path);
  if (!S_ISDIR(st.st_mode)) return path + ": unsupported file type in the image (only files, directories, symlinks)";
  if (mkdirat(dst_dir, name, 0700) != 0) return Errno("mkdir " + path);
  const ix::UniqueFd s(openat(src_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  const ix::UniqueFd d(openat(dst_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  std::string err = !s.valid() || !d.valid() ? Errno("open " + path) : CopyTree(s.get(), d.get(), path);
  if (err.empty() && fchmod(d.get(), st.st_mode & 07777) != 0) err = Errno("chmod " + path);
  return err;
}

// Copies the contents of directory src_dir into dst_dir (both fds, left
// open), stopping at the first error.
std::string CopyTree(int src_dir, int dst_dir, const std::string& where) {
  std::vector<std::string> names;
  if (!ListDir(src_dir, names)) return Errno("opendir " + where);
  for (const std::string& n : names) {
    std::string err = CopyEntry(src_dir, dst_dir, n.c_str(), where + "/" + n);
    if (!err.empty()) return err;
  }
  return "";
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
  const ix::UniqueFd fd(openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  std::vector<std::string> names;
  if (!fd.valid() || !ListDir(fd.get(), names)) return Errno("open " + path);
  std::string err;
  for (const std::string& n : names) {
    const std::string e = RemoveAt(fd.get(), n.c_str(), dev, path + "/" + n);
    if (err.empty()) err = e;
  }
  if (err.empty() && unlinkat(dir_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) err = Errno("rmdir " + path);
  return err;
}

}  // namespace

std::string CreateRootfs(const Args& args, const std::string& rootfs, bool reuse) {
  struct stat st {};
  if (reuse && lstat(rootfs.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "";
  const ix::UniqueFd src(open(args.image.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!src.valid()) return Errno("--container-image=" + args.image + " (the double takes a rootfs directory)");
  if (mkdir(rootfs.c_str(), 0700) != 0) return Errno("mkdir " + rootfs);
  const ix::UniqueFd dst(open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dst.valid()) return Errno("open " + rootfs);
  std::string err = CopyTree(src.get(), dst.get(), args.image);
  if (err.empty() && fstat(src.get(), &st) == 0 && fchmod(dst.get(), st.st_mode & 07777) != 0)
    err = Errno("chmod " + rootfs);
  return err;
}

std::string RemoveRootfs(const Job& job, const std::string& rootfs) {
  return RunAsUser(
      job,
      [&](std::vector<int>&) -> std::string {
        const size_t slash = rootfs.rfind('/');
        const std::string parent = rootfs.substr(0, slash), base = rootfs.substr(slash + 1);
        const ix::UniqueFd pfd(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!pfd.valid()) return errno == ENOENT ? "" : Errno("open " + parent);
        struct stat st {};
        return fstat(pfd.get(), &st) != 0 ? Errno("stat " + parent) : RemoveAt(pfd.get(), base.c_str(), st.st_dev, rootfs);
      },
      nullptr);
}

}  // namespace ixfake::pyxis
