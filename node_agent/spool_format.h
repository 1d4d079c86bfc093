// The spool's on-disk format (spool.h describes the layout), and the file
// primitives its writer and its replay share. Internal to the spool: only
// spool*.cc and their tests include it.
//
// Everything here is a free function over descriptors and text, without the
// Spool's lock or state, so the writer (spool_writer.cc), the opening
// (spool.cc) and the replay (spool_replay.cc) read and write the same format
// through one piece of code.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "node_agent/spool.h"

namespace ix::spool_format {

inline constexpr char kCursor[] = "cursor";     // "SEGMENT OFFSET\n"
inline constexpr char kResults[] = "results";   // the result files' directory
inline constexpr char kTmpPrefix[] = ".tmp-";   // a result's data while it is copied

std::string Errno(int e);

// events-%016llu.jsonl; ParseSegmentName takes exactly that form.
std::string SegmentName(uint64_t n);
bool ParseSegmentName(std::string_view name, uint64_t& n);

// The cursor file's text, and back (`line` is not on disk: left 0). False
// for anything but two unsigned numbers separated by one space.
std::string CursorText(const SpoolPosition& position);
bool ParseCursorText(std::string_view text, SpoolPosition& position);

// results/ID.EXT (ext with its dot: ".data", ".meta").
std::string ResultFile(uint64_t id, const char* ext);
// A result's one-line JSON description (results/N.meta), and back: an Error
// for anything that is not one with this `id` and the protocol's names.
std::string ResultMeta(const SpoolResult& r);
Result<SpoolResult> ParseResultMeta(const std::string& text, uint64_t id);

// The names in the directory open at `fd` (without . and ..).
Result<std::vector<std::string>> ListDir(int fd, const std::string& where);
// Reads exactly `n` bytes at `off` unless the file ends first; the count
// read, or -1 with errno.
ssize_t PreadFull(int fd, char* buf, size_t n, uint64_t off);
// Writes all of `data` at `off`; false with errno on failure.
bool WriteFull(int fd, std::string_view data, uint64_t off);
// The '\n's in [from, to) of `fd`, or -1 on a read error.
int64_t CountLines(int fd, uint64_t from, uint64_t to);
// The length of `fd` up to and including its last '\n' (0 when none).
Result<uint64_t> WholeLinesLength(int fd, uint64_t size);
// A directory only the euid may enter: owned by it, no group or other bits.
Status CheckPrivateDir(int fd, const std::string& where);
// NAME under `dir` replaced at once and durably: NAME.tmp written,
// fsync'd, renamed over NAME, then the directory fsync'd.
Status WriteDurableAt(int dir, const std::string& where, const std::string& name, std::string_view text);

// Moves the whole lines of `buf` (read at batch.end) into `batch` while
// the limits allow; `taken` is the bytes used. True when the batch is full.
bool TakeLines(const std::string& buf, size_t max_records, size_t max_bytes, SpoolBatch& batch, size_t& taken);

}  // namespace ix::spool_format
