// ReadFileText: a whole file as a string, for /proc, /sys and config files.
// On failure returns "" and sets *err to the errno (never 0); on success *err
// is 0.
#pragma once

#include <string>

namespace ix {

std::string ReadFileText(const std::string& path, int* err);

}  // namespace ix
