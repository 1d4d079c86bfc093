// ReadFileText: a whole file as a string, for /proc, /sys and config files.
// On failure returns "" and sets *err to the errno (never 0); on success *err
// is 0. WriteFileAtomic: a whole file replaced at once (written to PATH.tmp,
// then renamed), so a reader sees the old text or the new, never half.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/result.h"

namespace ix {

std::string ReadFileText(const std::string& path, int* err);

// Errors name the file and the errno; on error PATH is unchanged.
Status WriteFileAtomic(const std::string& path, const std::string& text, mode_t mode = 0644);

}  // namespace ix
