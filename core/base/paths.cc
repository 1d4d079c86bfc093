#include "core/base/paths.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ix {
namespace {

Status MakeEach(const std::string& path, size_t first, bool with_leaf, mode_t mode, mode_t parent_mode,
                const std::string& what) {
  for (size_t slash = path.find('/', first);; slash = path.find('/', slash + 1)) {
    const bool leaf = slash == std::string::npos;
    if (leaf && !with_leaf) break;
    const std::string part = path.substr(0, slash);
    if (::mkdir(part.c_str(), leaf ? mode : parent_mode) != 0 && errno != EEXIST) {
      return Error{(what.empty() ? "" : what + " ") + path + ": cannot create " + part + ": " + std::strerror(errno)};
    }
    if (leaf) break;
  }
  return Ok{};
}

}  // namespace

Status MakeDirs(const std::string& path, mode_t mode, mode_t parent_mode, const std::string& what) {
  return MakeEach(path, 1, true, mode, parent_mode, what);
}

Status MakeParentDirs(const std::string& path, mode_t mode) { return MakeEach(path, 1, false, mode, mode, ""); }

std::vector<std::string> ExecCandidates(const std::string& name, std::string_view path) {
  if (name.find('/') != std::string::npos) return {name};
  std::vector<std::string> out;
  if (path.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t colon = path.find(':', start);
    std::string dir(path.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (dir.empty()) dir.push_back('.');  // as execvp: an empty entry is the working directory
    if (dir.back() != '/') dir += '/';
    dir += name;
    out.push_back(std::move(dir));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return out;
}

}  // namespace ix
