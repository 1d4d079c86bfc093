// The collector's bearer token, read from a file an administrator made:
// through one descriptor (O_NOFOLLOW, no blocking on a FIFO), refused unless
// it is a regular file that neither group nor others may read, not empty and
// at most kMaxTokenFileBytes. The token is the first line, trimmed; it must
// be 16 to 1024 printable ASCII characters without spaces (it travels in an
// HTTP header). Errors name the file, never the token.
#pragma once

#include <cstddef>
#include <string>

#include "core/base/result.h"

namespace ix {

inline constexpr size_t kMaxTokenFileBytes = 4096;
inline constexpr size_t kMinTokenBytes = 16;
inline constexpr size_t kMaxTokenBytes = 1024;

Result<std::string> ReadTokenFile(const std::string& path);

// Whether `token` may be a bearer token (the rule above); an error saying
// what is allowed otherwise.
Status CheckToken(const std::string& token);

}  // namespace ix
