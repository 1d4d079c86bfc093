#include "submitter/sweep/sweep_token.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/unique_fd.h"
#include "submitter/collector/token_file.h"

namespace ix {
namespace {

Error Failed(const std::string& what, const std::string& path, int err) {
  return Error{"cannot " + what + " the collector token " + path + ": " +
               (err == EEXIST ? "a file (or link) is already there; remove it" : std::strerror(err))};
}

// The directory entry durable too, so a crash after the jobs were submitted
// cannot lose the file they read.
void SyncParent(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) ::fsync(fd.get());
}

}  // namespace

std::string SweepTokenPath(const std::string& sweep_dir) { return sweep_dir + "/" + kTokenFileName; }

Result<std::string> NewSweepToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{std::string("cannot make the collector token: getrandom: ") + std::strerror(errno)};
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

Status WriteTokenFile(const std::string& path, const std::string& token) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Failed("create", path, errno);
  const std::string text = token + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Failed("write", path, n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  // 0600 whatever the umask took away or left.
  if (::fchmod(fd.get(), 0600) != 0 || ::fsync(fd.get()) != 0) return Failed("write", path, errno);
  SyncParent(path);
  return Ok{};
}

Result<std::string> CreateSweepToken(const std::string& sweep_dir) {
  Result<std::string> token = NewSweepToken();
  if (!token) return token;
  const std::string path = SweepTokenPath(sweep_dir);
  // An earlier sweep's, in a directory taken over: unlink never follows a link.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Failed("replace", path, errno);
  if (Status s = WriteTokenFile(path, token.value()); !s) return s.error();
  return token;
}

Result<std::string> ReadSweepToken(const std::string& path) {
  Result<std::string> token = ReadTokenFile(path);
  if (!token) {
    return Error{"the sweep's collector " + token.error().message +
                 " (its jobs hand this file to the node agents; it must be the submitting user's, mode 0600)"};
  }
  return token;
}

}  // namespace ix
