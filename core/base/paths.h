// Paths: creating a directory with its missing parents, and the files
// execvp would try for a command name. Pure string work apart from mkdir.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

// Creates every missing directory of absolute `path`: the parents with
// `parent_mode`, `path` itself with `mode` (existing ones are left as they
// are). Errors: "WHAT PATH: cannot create PART: strerror" ("WHAT " left out
// when `what` is empty).
Status MakeDirs(const std::string& path, mode_t mode, mode_t parent_mode, const std::string& what);

// Creates the missing directories above `path` (not `path` itself), each
// with `mode`.
Status MakeParentDirs(const std::string& path, mode_t mode);

// The files execvp tries for `name`, in order: `name` itself when it has a
// '/', else NAME under each entry of `path` (colon-separated; an empty
// entry is the working directory, "."). Empty when `path` is empty.
std::vector<std::string> ExecCandidates(const std::string& name, std::string_view path);

}  // namespace ix
