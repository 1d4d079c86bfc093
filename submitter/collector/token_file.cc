#include "submitter/collector/token_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/base/text.h"
#include "core/base/unique_fd.h"

namespace ix {
namespace {

Error Fail(const std::string& path, const std::string& why) { return Error{"token file " + path + ": " + why}; }

std::string OpenError(int err) {
  if (err == ELOOP) return "is a symbolic link; give the file itself";
  return std::string("cannot open: ") + std::strerror(err);
}

// The whole file behind `fd`, at most kMaxTokenFileBytes (checked by fstat
// before and by the read itself after).
Result<std::string> ReadAll(int fd, const std::string& path) {
  std::string text(kMaxTokenFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail(path, std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxTokenFileBytes) return Fail(path, "larger than 4096 bytes; it must hold the token only");
  text.resize(got);
  return text;
}

}  // namespace

Status CheckToken(const std::string& token) {
  if (token.size() < kMinTokenBytes || token.size() > kMaxTokenBytes) {
    return Error{"the token must be 16 to 1024 characters (e.g. `openssl rand -hex 32`)"};
  }
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) return Error{"the token must be printable ASCII without spaces"};
  }
  return Ok{};
}

Result<std::string> ReadTokenFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return Fail(path, OpenError(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Fail(path, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Fail(path, "not a regular file");
  if ((st.st_mode & 077) != 0) {
    return Fail(path, "readable or writable by group or others; run chmod 600 " + path);
  }
  if (st.st_size == 0) return Fail(path, "empty; put the token on its first line");
  if (st.st_size > static_cast<off_t>(kMaxTokenFileBytes)) {
    return Fail(path, "larger than 4096 bytes; it must hold the token only");
  }
  Result<std::string> text = ReadAll(fd.get(), path);
  if (!text) return text.error();
  const std::string_view all = text.value();
  const std::string token(Trim(all.substr(0, all.find('\n'))));
  if (token.empty()) return Fail(path, "the first line is empty; put the token on it");
  if (Status ok = CheckToken(token); !ok) return Fail(path, ok.error().message);
  return token;
}

}  // namespace ix
