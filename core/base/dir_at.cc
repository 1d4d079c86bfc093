#include "core/base/dir_at.h"

#include "core/base/paths.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace ix {
namespace {

std::string Errno(int e) { return std::strerror(e); }

// Removes what is inside the open directory `fd` (dev = its device).
Status EmptyDir(int fd, dev_t dev, const std::string& where, size_t& budget) {
  const int list = ::dup(fd);
  DIR* d = list >= 0 ? ::fdopendir(list) : nullptr;
  if (!d) {
    if (list >= 0) ::close(list);
    return Error{"cannot list " + where + ": " + Errno(errno)};
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (names.size() >= budget) {  // without reading a huge directory whole
      ::closedir(d);
      return Error{"cannot remove " + where + ": more entries than allowed"};
    }
    names.push_back(n);
  }
  ::closedir(d);
  for (const std::string& n : names) {
    if (budget == 0) return Error{"cannot remove " + where + ": more entries than allowed"};
    --budget;
    if (::unlinkat(fd, n.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR) return Error{"cannot remove " + where + "/" + n + ": " + Errno(errno)};
    const int sub = ::openat(fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st{};
    if (sub < 0 || ::fstat(sub, &st) != 0 || st.st_dev != dev) {
      if (sub >= 0) ::close(sub);
      return Error{"cannot remove " + where + "/" + n + ": not a directory of this file system"};
    }
    Status s = EmptyDir(sub, dev, where + "/" + n, budget);
    ::close(sub);
    if (!s) return s;
    if (::unlinkat(fd, n.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return Error{"cannot remove " + where + "/" + n + ": " + Errno(errno)};
    }
  }
  return Ok{};
}

}  // namespace

Result<int> OpenOwnedDir(const std::string& dir, mode_t mode, const std::string& what) {
  if (dir.empty() || dir[0] != '/') return Error{what + " '" + dir + "': must be an absolute path"};
  if (Status made = MakeDirs(dir, mode, 0755, what); !made) return made.error();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Error{what + " " + dir + ": " + Errno(errno)};
  struct stat st{};
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    char m[8];
    std::snprintf(m, sizeof m, "%04o", st.st_mode & 07777);
    ::close(fd);
    return Error{what + " " + dir + ": owned by uid " + std::to_string(st.st_uid) + " with mode " + m +
                 "; it must be owned by uid " + std::to_string(::geteuid()) + " and not writable by group or others"};
  }
  return fd;
}

Status RemoveTreeAt(int parent, const std::string& where, const std::string& name, size_t max_entries) {
  const std::string path = where + "/" + name;
  if (::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT) return Ok{};
  if (errno != EISDIR) return Error{"cannot remove " + path + ": " + Errno(errno)};
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    return Error{"cannot remove " + path + ": " + Errno(e)};
  }
  Status s = EmptyDir(fd, st.st_dev, path, max_entries);
  ::close(fd);
  if (!s) return s;
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return Error{"cannot remove " + path + ": " + Errno(errno)};
  }
  return Ok{};
}

}  // namespace ix
