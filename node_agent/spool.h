// Spool: the agent's durable FIFO of stamped events, and the result files
// still to upload, in a directory only root (the agent's euid) can read.
// What is in the spool survives a crash or a restart of the agent and is
// delivered at least once: a record leaves the queue only when the delivery
// thread acknowledges it, after the collector said 200.
//
// On disk (DIR is 0700, owned by the agent's euid; every file 0600, opened
// through DIR's descriptor with O_NOFOLLOW):
//   events-%016llu.jsonl  segments of records, one compact JSON a line,
//                         numbered from 1; a new one once the last reaches
//                         SpoolOptions::segment_bytes (4 MiB)
//   cursor                "SEGMENT OFFSET\n": where delivery stands (written
//                         to cursor.tmp, fsync'd, renamed, DIR fsync'd)
//   results/N.data        a result file's content (N: its id)
//   results/N.meta        its one-line JSON description (sweep, entry, name,
//                         sha256, size); a result is pending while both exist
// Segments wholly before the cursor are deleted as it passes them.
//
// The code follows the concepts: spool_format.{h,cc} the names and lines of
// that format (and the file primitives), spool.cc opening and recovery,
// spool_writer.cc the appending side, spool_replay.cc the delivering side.
//
// Threads: exactly one thread appends (the poll loop: Append, and AddResult
// may run there or on any thread), exactly one delivers (ReadBatch,
// Acknowledge, PendingResults, OpenResult, ResultDone); Stats and notes
// are safe from any thread. One mutex guards the shared state; no fsync
// and no file I/O is done while holding it. Nothing here waits on another
// thread beyond that mutex's short critical sections.
//
// Invariants: records are non-empty single lines of at most
// kMaxSpoolRecordBytes; the bytes a reader sees were written whole and
// fdatasync'd (a torn tail from a crash is beyond the committed end, and is
// cut off when the spool is opened again); the cursor never passes the
// committed end and only moves forward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/base/unique_fd.h"

namespace ix {

// The longest record Append takes (an event is at most 64 KiB; this leaves
// room, and bounds what a reader must hold to find a line's end).
inline constexpr size_t kMaxSpoolRecordBytes = 1 << 20;

struct SpoolOptions {
  uint64_t segment_bytes = 4 << 20;          // start a new segment past this
  uint64_t max_event_bytes = uint64_t{1} << 30;   // Append refuses once the segments hold this much
  uint64_t max_result_bytes = uint64_t{4} << 30;  // AddResult refuses past this in results/
};

// A place in the queue: after a record, or where the cursor stands.
// `line` counts the records before `offset` in the segment (it makes the
// queue depth cheap; it is not written to disk). Ordered by (segment,
// offset).
struct SpoolPosition {
  uint64_t segment = 0;
  uint64_t offset = 0;
  uint64_t line = 0;
};
bool operator<(const SpoolPosition& a, const SpoolPosition& b);
bool operator==(const SpoolPosition& a, const SpoolPosition& b);

// One record read back, and the position right after it (acknowledge that
// to drop it and every record before it).
struct SpoolRecord {
  std::string text;
  SpoolPosition end;
};

// What ReadBatch returns: records in queue order, and the position after
// the last (the cursor itself when there are none).
struct SpoolBatch {
  std::vector<SpoolRecord> records;
  SpoolPosition end;
  size_t bytes = 0;  // the records' text and one byte each
};

// A result file in the spool, waiting to be uploaded.
struct SpoolResult {
  uint64_t id = 0;
  std::string sweep;
  int64_t entry = 0;
  std::string name;
  std::string sha256;  // 64 lowercase hex digits
  uint64_t size = 0;
};

// Counts for /metrics. A snapshot.
struct SpoolStats {
  uint64_t pending_records = 0;  // appended, not yet acknowledged
  uint64_t event_bytes = 0;      // in the segment files (the delivered head of the first included)
  uint64_t segments = 0;
  uint64_t pending_results = 0;
  uint64_t result_bytes = 0;
};

class Spool {
 public:
  // Opens (creating it 0700 when missing, parents 0755) the spool directory
  // `dir`, an absolute path. Refuses a directory that is a symlink, not
  // owned by the euid, or accessible by group or others, naming what to
  // fix. Repairs what a crash can leave (a torn last line is cut off, a
  // half-written result or temporary file removed) and says so in notes().
  // A cursor file that cannot be parsed is an Error (it is never written
  // half: someone edited it).
  static Result<std::unique_ptr<Spool>> Open(const std::string& dir, const SpoolOptions& options = {});
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Appends `records` (each a non-empty line without '\n', at most
  // kMaxSpoolRecordBytes) in order, and fdatasyncs once (twice when a new
  // segment is started) before returning: once Append returns Ok they
  // survive a crash. All or none: a bad record, a full spool
  // (max_event_bytes) or a write error is an Error and appends nothing. The
  // appending thread only.
  Status Append(const std::vector<std::string>& records);

  // Up to `max_records` records (at least 1 when any is queued) of at most
  // `max_bytes` together, counting one byte more for each (its line end: a
  // JSON array of them is bytes + 1 long), the first returned even when
  // longer; from the cursor on. Reading does not consume: the same records come again until
  // acknowledged. A read error is an Error. The delivering thread only.
  Result<SpoolBatch> ReadBatch(size_t max_records, size_t max_bytes);

  // Moves the cursor to `position` (a record's or a batch's end from
  // ReadBatch), durably, and deletes the segments it has passed. A position
  // at or before the cursor changes nothing. The delivering thread only.
  Status Acknowledge(const SpoolPosition& position);

  // Copies the regular file open at `source_fd` (read with pread from
  // offset 0; the descriptor's offset is left alone) into results/,
  // computing its sha256 on the way; at most `max_bytes` (more is an Error,
  // as is a descriptor that is not a regular file: a pipe or a device
  // could block). The copy is fsync'd and renamed into place, then its meta
  // line, so a crash leaves the result pending whole or not at all.
  // `sweep` and `name` must be the protocol's names (IsValidSweepId,
  // IsValidResultName), `entry` >= 0. Takes time in proportion to the size
  // (up to 64 MiB: a worker, not the poll loop, may be the place for it).
  Result<SpoolResult> AddResult(const std::string& sweep, int64_t entry, const std::string& name, int source_fd,
                                uint64_t max_bytes);
  // The results not yet done, oldest first.
  std::vector<SpoolResult> PendingResults() const;
  // The content of pending result `id`, open for reading from offset 0.
  Result<UniqueFd> OpenResult(uint64_t id) const;
  // Removes result `id` (uploaded, or given up on). Unknown ids are an Error.
  Status ResultDone(uint64_t id);

  SpoolStats Stats() const;
  // What Open repaired, one line each, for the log.
  std::vector<std::string> notes() const;
  const std::string& dir() const { return dir_; }

 private:
  struct Segment {
    uint64_t bytes = 0;    // committed: written whole and fdatasync'd
    uint64_t records = 0;  // lines in those bytes
  };

  Spool(std::string dir, const SpoolOptions& options, UniqueFd dir_fd, UniqueFd results_fd);
  Status Load();
  Status LoadSegments();
  Status LoadCursor();
  Status LoadResults();
  Status StartSegment(uint64_t number);
  Status Flush(const std::string& pending, uint64_t records);
  Status WriteCursor(const SpoolPosition& position);

  const std::string dir_;
  const SpoolOptions options_;
  const UniqueFd dir_fd_;
  const UniqueFd results_fd_;

  // The appending thread's own: the last segment, open for writing.
  UniqueFd write_fd_;
  uint64_t write_segment_ = 0;
  uint64_t write_bytes_ = 0;

  std::mutex ack_mu_;  // one Acknowledge at a time; never held by Append

  mutable std::mutex mu_;  // guards what follows
  std::map<uint64_t, Segment> segments_;
  SpoolPosition cursor_;
  std::map<uint64_t, SpoolResult> results_;
  uint64_t next_result_id_ = 1;
  uint64_t result_bytes_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace ix
