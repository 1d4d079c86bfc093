#include "core/base/file_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ix {

std::string ReadFileText(const std::string& path, int* err) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *err = errno ? errno : ENOENT;
    return {};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  *err = 0;
  return ss.str();
}

std::string ReadFileTextAt(int dir, const std::string& name, int* err, size_t max_bytes) {
  const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return {};
  }
  struct stat st{};
  std::string out;
  *err = ::fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
  char buf[4096];
  while (*err == 0) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) *err = errno;
      break;
    }
    if (out.size() + static_cast<size_t>(n) > max_bytes) *err = EFBIG;
    else out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (*err) out.clear();
  return out;
}

Status WriteFileAtomicAt(int dir, const std::string& where, const std::string& name, const std::string& text,
                         mode_t mode) {
  const std::string tmp = name + ".tmp";
  auto fail = [&](const std::string& what, int e) {
    ::unlinkat(dir, tmp.c_str(), 0);
    return Error{"cannot write " + where + "/" + what + ": " + std::strerror(e)};
  };
  ::unlinkat(dir, tmp.c_str(), 0);  // a leftover (or a planted link): unlinkat never follows
  const int fd = ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return Error{"cannot write " + where + "/" + tmp + ": " + std::strerror(errno)};
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      ::close(fd);
      return fail(tmp, e);
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);  // whatever the umask
  ::close(fd);
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) return fail(name, errno);
  return Ok{};
}

Status WriteFileAtomic(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << text;
    if (!out.flush()) {
      const int e = errno;
      ::unlink(tmp.c_str());
      return Error{"cannot write " + tmp + ": " + std::strerror(e)};
    }
  }
  ::chmod(tmp.c_str(), mode);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Error{"cannot write " + path + ": " + std::strerror(e)};
  }
  return Ok{};
}

namespace {

// NAME under DIR opened for reading: a regular file, never through a link,
// never blocking on a FIFO; -1 otherwise.
int OpenRegularAt(int dir, const std::string& name, struct stat& st) {
  const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

}  // namespace

off_t FileSizeAt(int dir, const std::string& name) {
  struct stat st{};
  const int fd = OpenRegularAt(dir, name, st);
  if (fd < 0) return -1;
  ::close(fd);
  return st.st_size;
}

std::string ReadFileFromAt(int dir, const std::string& name, off_t from, size_t cap) {
  struct stat st{};
  const int fd = OpenRegularAt(dir, name, st);
  if (fd < 0) return "";
  std::string out;
  if (from >= 0 && st.st_size > from) out.resize(std::min(cap, static_cast<size_t>(st.st_size - from)));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + got, out.size() - got, from + static_cast<off_t>(got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

std::string TailLinesAt(int dir, const std::string& name, int lines) {
  // Only the end of the file: a server log can be large.
  constexpr off_t kTail = 64 * 1024;
  const off_t size = FileSizeAt(dir, name);
  std::string text = size > 0 ? ReadFileFromAt(dir, name, size > kTail ? size - kTail : 0, kTail) : "";
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int n = 0; n < lines && pos > 0; ++n) {
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  return text.substr(pos == 0 ? 0 : pos + 1);
}


}  // namespace ix
