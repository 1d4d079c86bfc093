// ReadFileText: a whole file as a string, for /proc, /sys and config files.
// On failure returns "" and sets *err to the errno (never 0); on success *err
// is 0. WriteFileAtomic: a whole file replaced at once (written to PATH.tmp,
// then renamed), so a reader sees the old text or the new, never half.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/base/result.h"

namespace ix {

std::string ReadFileText(const std::string& path, int* err);

// ReadFileTextAt: the regular file NAME under the directory descriptor DIR
// (AT_FDCWD: the working directory), for files in a directory someone else
// may write: opened O_NOFOLLOW | O_NONBLOCK, so a symlink (ELOOP), FIFO or
// device (EINVAL) is refused without blocking, and more than max_bytes is
// EFBIG. Errors as ReadFileText.
std::string ReadFileTextAt(int dir, const std::string& name, int* err, size_t max_bytes = size_t{1} << 20);

// Errors name the file and the errno; on error PATH is unchanged.
Status WriteFileAtomic(const std::string& path, const std::string& text, mode_t mode = 0644);
// The same under the directory descriptor DIR, never following a link:
// NAME.tmp is unlinked, created O_EXCL | O_NOFOLLOW, then renamed over NAME.
// Works while DIR is no longer reachable by any path (a container's removed
// rootfs). `where` names DIR in errors.
Status WriteFileAtomicAt(int dir, const std::string& where, const std::string& name, const std::string& text,
                         mode_t mode = 0644);

// The size of the regular file NAME under DIR (opened O_NOFOLLOW |
// O_NONBLOCK, as ReadFileTextAt), or -1 when it cannot be read.
off_t FileSizeAt(int dir, const std::string& name);

// At most `cap` bytes of the regular file NAME under DIR from byte `from`
// on ("" when there are none or it cannot be read).
std::string ReadFileFromAt(int dir, const std::string& name, off_t from, size_t cap);

// The last `lines` lines of the regular file NAME under DIR, read from its
// last 64 KiB only (a server's log can be large); "" when unreadable.
std::string TailLinesAt(int dir, const std::string& name, int lines);

}  // namespace ix
