#include "core/file_text.h"

#include <sys/stat.h>
#include <unistd.h>

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

}  // namespace ix
