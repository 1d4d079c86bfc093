// Directories handled through descriptors, for root working next to
// directories a job user owns: nothing here follows a symlink or resolves a
// path the user could change between a check and its use.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "core/base/result.h"

namespace ix {

// Opens DIR (an absolute path) that root keeps its state in, creating it
// (and missing parents, 0755) with `mode` when missing, and checks it as the
// lease directory is checked: a directory, not reached through a symlink at
// its last component, owned by the caller, not writable by group or others.
// Returns its descriptor (close-on-exec). `what` names it in errors
// ("run_dir").
Result<int> OpenOwnedDir(const std::string& dir, mode_t mode, const std::string& what);

// Removes NAME under directory descriptor PARENT and everything below it,
// without following a symlink (a link is removed, not its target) and
// without leaving the file system tree it started in; gives up after
// `max_entries` entries (a tree a user filled on purpose). ENOENT is not an
// error. The error names `where`/NAME and the failing entry.
Status RemoveTreeAt(int parent, const std::string& where, const std::string& name, size_t max_entries = 100000);

}  // namespace ix
