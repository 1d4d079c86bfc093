#include "core/file_text.h"

#include <cerrno>
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

}  // namespace ix
