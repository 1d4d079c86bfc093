#include "submitter/sweep/sweep_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/base/unique_fd.h"
#include "submitter/sweep/sweep_task.h"

namespace ix {
namespace {

// The writer's one temporary name: results never start with '.', and the
// driver's thread writes one file at a time.
const char kTempName[] = ".ix-stream.tmp";

Error Failed(const std::string& what, const std::string& path, int err) {
  return Error{"cannot " + what + " " + path + ": " + (err == ELOOP ? "it is a symbolic link" : std::strerror(err))};
}

// NAME under `parent`, made 0755 when missing; never through a link.
Result<UniqueFd> OpenSubdir(int parent, const std::string& where, const std::string& name) {
  if (::mkdirat(parent, name.c_str(), 0755) != 0 && errno != EEXIST) return Failed("create", where + "/" + name, errno);
  UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    // O_DIRECTORY | O_NOFOLLOW on a link fails with ENOTDIR: say which it is.
    int err = errno;
    struct stat st {};
    if (err == ENOTDIR && ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      err = ELOOP;
    }
    return Failed("open", where + "/" + name, err);
  }
  return fd;
}

// Whether NAME under `dir` is a regular file holding exactly `content`.
bool SameContent(int dir, const std::string& name, const std::string& content) {
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (static_cast<uint64_t>(st.st_size) != content.size()) return false;
  std::string have(content.size(), '\0');
  size_t got = 0;
  while (got < have.size()) {
    const ssize_t n = ::read(fd.get(), have.data() + got, have.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return have == content;
}

Status WriteAll(int fd, const std::string& content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{n < 0 ? std::strerror(errno) : "short write"};
    done += static_cast<size_t>(n);
  }
  return Ok{};
}

// The temporary file written whole and fsync'd, then renamed over NAME.
Status ReplaceAtomically(int dir, const std::string& where, const std::string& name, const std::string& content) {
  ::unlinkat(dir, kTempName, 0);  // a leftover (or a planted link): unlinkat never follows
  UniqueFd fd(::openat(dir, kTempName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return Failed("create", where + "/" + kTempName, errno);
  Status wrote = WriteAll(fd.get(), content);
  if (wrote && (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0)) wrote = Error{std::strerror(errno)};
  if (wrote && ::renameat(dir, kTempName, dir, name.c_str()) != 0) wrote = Error{std::strerror(errno)};
  if (!wrote) {
    ::unlinkat(dir, kTempName, 0);
    return Error{"cannot write " + where + "/" + name + ": " + wrote.error().message};
  }
  return Ok{};
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

}  // namespace

namespace {

bool IsPartName(const std::string& part) {
  if (part.empty() || part[0] == '.' || part.find("..") != std::string::npos) return false;
  return std::all_of(part.begin(), part.end(), IsNameChar);
}

}  // namespace

bool IsResultFileName(const std::string& name) {
  if (name.empty() || name.size() > 255) return false;
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return IsPartName(name);
  return IsPartName(name.substr(0, slash)) && IsPartName(name.substr(slash + 1));
}

Result<bool> WriteResultFile(const std::string& sweep_dir, int64_t entry, const std::string& name,
                             const std::string& content) {
  const std::string where = sweep_dir + "/results/" + std::to_string(entry);
  if (!IsResultFileName(name) || entry < 0) {
    return Error{"result file '" + name + "' of entry " + std::to_string(entry) +
                 ": not a result name (NAME or DIR/NAME, 1 to 255 of A-Z a-z 0-9 . _ - in all, no '..', no part "
                 "starting with '.')"};
  }
  UniqueFd top(::open(sweep_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top.valid()) return Failed("open", sweep_dir, errno);
  Result<UniqueFd> results = OpenSubdir(top.get(), sweep_dir, "results");
  if (!results) return results.error();
  Result<UniqueFd> dir = OpenSubdir(results.value().get(), sweep_dir + "/results", std::to_string(entry));
  if (!dir) return dir.error();
  // DIR/NAME: DIR made or opened the same way (never through a link).
  const size_t slash = name.find('/');
  if (slash != std::string::npos) {
    dir = OpenSubdir(dir.value().get(), where, name.substr(0, slash));
    if (!dir) return dir.error();
  }
  const std::string file = slash == std::string::npos ? name : name.substr(slash + 1);
  const std::string file_dir = slash == std::string::npos ? where : where + "/" + name.substr(0, slash);
  if (SameContent(dir.value().get(), file, content)) return false;
  if (Status s = ReplaceAtomically(dir.value().get(), file_dir, file, content); !s) return s.error();
  return true;
}

// ---- StreamTracker ----------------------------------------------------------------------

StreamTracker::StreamTracker(const SweepManifest& m, SweepInbox* inbox) : m_(m), inbox_(inbox) {}

std::vector<EntryUpdate> StreamTracker::Take(std::vector<std::string>& problems) {
  std::vector<EntryUpdate> updates;
  if (!inbox_) return updates;
  for (StreamItem& item : inbox_->Drain()) {
    if (std::optional<EntryUpdate> u = TakeItem(item, problems)) updates.push_back(std::move(*u));
  }
  return updates;
}

std::optional<EntryUpdate> StreamTracker::TakeItem(StreamItem& item, std::vector<std::string>& problems) {
  if (item.entry < 0 || item.entry >= static_cast<int64_t>(m_.plan.entries.size())) {
    problems.push_back("the stream named entry " + std::to_string(item.entry) + ", which sweep " + m_.sweep_id +
                       " does not have; ignored");
    return std::nullopt;
  }
  Heard& h = heard_[item.entry];
  EntryUpdate u;
  u.index = item.entry;
  switch (item.kind) {
    case StreamItem::Kind::kEntry:
      if (item.state == "running") {
        h.running = true;
        u.state = EntryState::kRunning;
        u.started_at = item.time;
        return u;
      }
      h.final_word = true;
      u.state = item.state == "succeeded" ? EntryState::kSucceeded : EntryState::kFailed;
      u.exit_code = item.exit_code;
      break;
    case StreamItem::Kind::kFailure:
      // The step failed: the entry will, and fail-fast need not wait for it.
      u.state = EntryState::kFailed;
      if (item.reason.empty()) item.reason = "the step failed";
      break;
    case StreamItem::Kind::kResultNamed:
      h.announced.insert(item.name);
      return std::nullopt;
    case StreamItem::Kind::kResultFile:
      TakeResultFile(item, problems);
      return std::nullopt;
  }
  u.ended_at = item.time;
  if (!item.reason.empty()) {
    u.failure_reason = item.reason;
    u.failure_process = item.process;
  }
  u.result_path = ResultDir(m_, item.entry);
  return u;
}

void StreamTracker::TakeResultFile(StreamItem& item, std::vector<std::string>& problems) {
  if (!item.written) {
    Result<bool> w = WriteResultFile(m_.sweep_dir, item.entry, item.name, item.content);
    std::string().swap(item.content);  // up to 64 MiB: not kept past its write
    if (!w) return problems.push_back(w.error().message);
  }
  Heard& h = heard_[item.entry];
  h.arrived.insert(item.name);
  if (item.name == "status.json") {
    const std::optional<TaskStatus> st = ReadTaskStatus(ResultDir(m_, item.entry), m_.sweep_id);
    if (st && (st->state == "succeeded" || st->state == "failed")) h.final_word = true;
  }
}

bool StreamTracker::HeardRunning(int64_t entry) const {
  auto it = heard_.find(entry);
  return it != heard_.end() && it->second.running && !it->second.final_word;
}

bool StreamTracker::FinalWord(int64_t entry) const {
  auto it = heard_.find(entry);
  return it != heard_.end() && it->second.final_word;
}

std::optional<EntryUpdate> StreamTracker::SettleEnded(const EntryRecord& e, EntryUpdate u, double now) {
  if (!node_results()) return u;
  Heard& h = heard_[e.index];
  // Only a cancellation can end an entry that never ran (nothing to wait for).
  const bool ran = u.state != EntryState::kCancelled || e.state == EntryState::kRunning || e.started_at || h.running;
  if (!ran || h.final_word) return u;
  if (!h.ended_seen) h.ended_seen = now;
  if (now - *h.ended_seen < kResultsGraceSeconds) return std::nullopt;
  h.gave_up = true;
  if (u.state != EntryState::kCancelled) u.state = EntryState::kFailed;
  u.failure_reason = (u.failure_reason ? *u.failure_reason + "; " : std::string()) + kResultsNotDelivered;
  if (!u.ended_at) u.ended_at = now;
  return u;
}

bool StreamTracker::AwaitingResults(const EntryRecord& e, double now) {
  if (!node_results() || !IsFinal(e.state)) return false;
  Heard& h = heard_[e.index];
  if (h.gave_up) return false;
  if (!h.final_seen) h.final_seen = now;
  if (now - *h.final_seen >= kResultsGraceSeconds) return false;
  const bool missing = !std::includes(h.arrived.begin(), h.arrived.end(), h.announced.begin(), h.announced.end());
  const bool ran = e.started_at.has_value() || h.running;
  const bool unspoken =
      (e.state == EntryState::kSucceeded || e.state == EntryState::kFailed) && ran && !h.final_word;
  return missing || unspoken;
}

}  // namespace ix
