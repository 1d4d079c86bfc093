#include "submitter/sweep/sweep_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/base/file_text.h"
#include "submitter/sweep/sweep_files.h"

namespace ix {

Result<SweepLock> LockSweepDir(const std::string& dir, const std::string& sweep_id,
                               std::chrono::milliseconds deadline) {
  const std::string path = dir + "/submitter.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot open " + path + ": " + std::strerror(errno)};
  SweepLock lock{UniqueFd(fd)};
  const auto until = std::chrono::steady_clock::now() + deadline;
  // LOCK_NB and a poll, not a blocking flock: a lock held by a live
  // submitter must fail fast, and a blocking call on a network file system
  // could hang past any deadline.
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    if (e != EWOULDBLOCK && e != EINTR) return Error{"cannot lock " + path + ": " + std::strerror(e)};
    if (std::chrono::steady_clock::now() >= until) {
      int err = 0;
      std::string holder = ReadFileText(path, &err);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      // The holder may be this sweep's own submitter (a second --resume)
      // or another sweep's, whose directory this one was pointed at.
      const bool same = holder.find("sweep " + sweep_id) != std::string::npos;
      return Error{"sweep directory " + dir + " is in use by another ixsubmit (" +
                   (holder.empty() ? std::string("holder unknown") : holder) + "; lock " + path + "): " +
                   (same ? "stop that one first, or watch with `ixsubmit status " + sweep_id + "`"
                         : "sweep " + sweep_id + " needs another --sweep-dir")};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::string who = "pid " + std::to_string(::getpid()) + " on " + host + ", sweep " + sweep_id + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, who.data(), who.size(), 0);
  return lock;
}

Status ClaimSweepDir(const std::string& dir, const std::string& sweep_id, const SweepStateLookup& state_of,
                     const JobNameLookup& in_slurm) {
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/sweep.json", ec)) return Ok{};
  Result<SweepManifest> old = ReadSweepManifest(dir);
  if (!old) return Error{"sweep directory " + dir + " holds a sweep.json that cannot be read (" +
                         old.error().message + "); choose another --sweep-dir"};
  const std::string& other = old.value().sweep_id;
  if (other == sweep_id || old.value().dry_run) return Ok{};
  const std::optional<SweepState> st = state_of(other);
  bool slurm_knows = false;
  if (!st) {
    for (const PlannedJob& j : old.value().plan.jobs) {
      Result<bool> known = in_slurm(JobName(old.value(), j));
      if (!known) return Error{"sweep directory " + dir + " belongs to sweep " + other +
                               ", and whether its jobs exist cannot be told: " + known.error().message};
      slurm_knows = slurm_knows || known.value();
    }
  }
  if (!st && slurm_knows) {
    return Error{"sweep directory " + dir + " belongs to sweep " + other + ", which this database does not know " +
                 "(another --db?) but Slurm has jobs of, so nothing says it is over; sweep " + sweep_id +
                 " needs another --sweep-dir (or remove " + dir + " once " + other + " is over)"};
  }
  if (st && (*st == SweepState::kSubmitting || *st == SweepState::kRunning)) {
    return Error{"sweep directory " + dir + " belongs to sweep " + other + ", which is still " + StateName(*st) +
                 " (its tasks read " + dir + "/sweep.json); sweep " + sweep_id +
                 " needs another --sweep-dir, or cancel " + other + " first"};
  }
  for (const char* sub : {"results", "logs"}) {
    const std::string from = dir + "/" + sub, to = dir + "/" + sub + "." + other;
    if (!std::filesystem::exists(from, ec)) continue;
    std::filesystem::rename(from, to, ec);
    if (ec) return Error{"cannot move " + from + " aside to " + to + ": " + ec.message()};
  }
  return Ok{};
}

}  // namespace ix
