#include "core/process/process_watch.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "core/base/unique_fd.h"
#include "core/process/pidfd.h"
#include "core/process/process_tree.h"

namespace ix {
namespace {

std::string Errno(int err) { return std::strerror(err); }

std::string KernelRelease() {
  utsname u{};
  return ::uname(&u) == 0 ? std::string(u.release) : std::string("unknown");
}

ProcessExit GoneExit(const ProcessId& id, std::string label) {
  ProcessExit e;
  e.label = std::move(label);
  e.id = id;
  return e;
}

// Adds `fd` to the epoll set, to be seen when readable: 0 or errno.
int AddReadable(int epoll_fd, int fd) {
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = fd;
  return ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &e) == 0 ? 0 : errno;
}

// Empties the eventfd's count, so it reads as not ready again.
void Drain(int event_fd) {
  uint64_t count = 0;
  while (::read(event_fd, &count, sizeof count) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::string ProcessExit::Describe() const {
  std::string s = label + " (pid " + std::to_string(id.pid) + ")";
  if (!status_known) return s + " exited (status unknown: not our child)";
  if (exited) return s + " exited with status " + std::to_string(exit_code);
  const char* abbrev = ::sigabbrev_np(signal);
  s += " was killed by signal " + std::to_string(signal) +
       (abbrev ? " (SIG" + std::string(abbrev) + ")" : std::string());
  return core_dumped ? s + " (core dumped)" : s;
}

std::string DescendantLabel(const std::string& root_label, const ProcessInfo& p) {
  return root_label + "/" + p.comm;
}

Result<ProcessWatch> ProcessWatch::Create() {
  if (UniqueFd probe(PidfdOpen(::getpid())); !probe.valid()) {
    const int err = errno;
    return Error{"cannot watch processes: pidfd_open: " + Errno(err) +
                 (err == ENOSYS ? " (needs Linux >= 5.3; this kernel is " + KernelRelease() + ")" : "")};
  }
  UniqueFd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return Error{"cannot watch processes: epoll_create1: " + Errno(errno)};
  UniqueFd ev(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!ev.valid()) return Error{"cannot watch processes: eventfd: " + Errno(errno)};
  if (const int err = AddReadable(ep.get(), ev.get()); err != 0) {
    return Error{"cannot watch processes: epoll_ctl: " + Errno(err)};
  }
  return ProcessWatch(ep.release(), ev.release());
}

ProcessWatch::ProcessWatch(ProcessWatch&& other) noexcept
    : epoll_fd_(other.epoll_fd_),
      event_fd_(other.event_fd_),
      entries_(std::move(other.entries_)),
      pending_(std::move(other.pending_)) {
  other.epoll_fd_ = other.event_fd_ = -1;
  other.entries_.clear();
  other.pending_.clear();
}

ProcessWatch& ProcessWatch::operator=(ProcessWatch&& other) noexcept {
  if (this != &other) {
    Close();
    epoll_fd_ = other.epoll_fd_;
    event_fd_ = other.event_fd_;
    entries_ = std::move(other.entries_);
    pending_ = std::move(other.pending_);
    other.epoll_fd_ = other.event_fd_ = -1;
    other.entries_.clear();
    other.pending_.clear();
  }
  return *this;
}

ProcessWatch::~ProcessWatch() { Close(); }

void ProcessWatch::Close() {
  for (const auto& [fd, e] : entries_) ::close(fd);
  entries_.clear();
  if (event_fd_ >= 0) ::close(event_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  event_fd_ = epoll_fd_ = -1;
}

std::vector<HeldProcess> ProcessWatch::Held() const {
  std::vector<HeldProcess> out;
  for (const auto& [pidfd, e] : entries_) out.push_back(HeldProcess{e.label, e.id, pidfd});
  return out;
}

bool ProcessWatch::Watching(pid_t pid) const {
  for (const auto& [fd, e] : entries_) {
    if (e.id.pid == pid) return true;
  }
  return false;
}

void ProcessWatch::Queue(ProcessExit exit) {
  pending_.push_back(std::move(exit));
  const uint64_t one = 1;
  ssize_t n;
  do {
    n = ::write(event_fd_, &one, sizeof one);
  } while (n < 0 && errno == EINTR);
}

Status ProcessWatch::AddChild(const ProcessId& id, std::string label) {
  return AddOne(id, std::move(label), true);
}

Status ProcessWatch::Add(const ProcessId& id, std::string label) { return AddOne(id, std::move(label), false); }

Status ProcessWatch::AddOne(const ProcessId& id, std::string label, bool child) {
  if (epoll_fd_ < 0) return Error{"watch " + label + ": the watch was moved from"};
  if (id.pid <= 0) return Error{"watch " + label + ": bad pid " + std::to_string(id.pid)};
  for (const auto& [fd, e] : entries_) {
    if (e.id == id) return Ok{};  // already watched
  }
  UniqueFd fd(PidfdOpen(id.pid));
  if (!fd.valid()) {
    if (errno == ESRCH) {  // gone (and reaped) already: that is an exit
      Queue(GoneExit(id, std::move(label)));
      return Ok{};
    }
    return Error{"watch " + label + " (pid " + std::to_string(id.pid) + "): pidfd_open: " + Errno(errno)};
  }
  // The pidfd now pins one process; check it is the one meant.
  Result<ProcessInfo> now = ReadProcessInfo(id.pid);
  if (!now || now.value().start_time != id.start_time) {
    Queue(GoneExit(id, std::move(label)));  // the pid was recycled: the one meant has exited
    return Ok{};
  }
  if (child && now.value().ppid != ::getpid()) {
    return Error{"watch " + label + ": pid " + std::to_string(id.pid) + " is not a child of this process (parent " +
                 std::to_string(now.value().ppid) + ")"};
  }
  if (const int err = AddReadable(epoll_fd_, fd.get()); err != 0) {
    return Error{"watch " + label + ": epoll_ctl: " + Errno(err)};
  }
  entries_[fd.release()] = Entry{std::move(label), id, child};
  return Ok{};
}

Result<std::vector<ProcessInfo>> ProcessWatch::AddDescendants(
    pid_t root, const std::string& root_label, const std::function<bool(const ProcessInfo&)>& filter) {
  Result<std::vector<ProcessInfo>> all = ListDescendants(root);
  if (!all) return all.error();
  std::vector<ProcessInfo> added;
  for (const ProcessInfo& p : all.value()) {
    if (p.exited() || (filter && !filter(p))) continue;  // a zombie exited before the watch began
    if (Status s = Add(p.id(), DescendantLabel(root_label, p)); !s) return s.error();
    added.push_back(p);
  }
  return added;
}

ProcessExit ProcessWatch::Collect(int pidfd, const Entry& e) {
  ProcessExit x = GoneExit(e.id, e.label);
  if (!e.child) return x;
  siginfo_t si{};
  int rc = ::waitid(P_PIDFD, static_cast<id_t>(pidfd), &si, WEXITED | WNOHANG | WNOWAIT);
  if (rc != 0 && errno == EINVAL) {  // P_PIDFD needs Linux 5.4; the unreaped pid is just as safe
    rc = ::waitid(P_PID, static_cast<id_t>(e.id.pid), &si, WEXITED | WNOHANG | WNOWAIT);
  }
  if (rc != 0 || si.si_pid == 0) return x;  // reaped by someone else (ECHILD): status unknown
  x.status_known = true;
  if (si.si_code == CLD_EXITED) {
    x.exited = true;
    x.exit_code = si.si_status;
  } else {
    x.signal = si.si_status;
    x.core_dumped = si.si_code == CLD_DUMPED;
  }
  return x;
}

Result<std::optional<ProcessExit>> ProcessWatch::Wait(std::chrono::milliseconds timeout) {
  if (epoll_fd_ < 0) return Error{"the process watch was moved from"};
  using Clock = std::chrono::steady_clock;
  if (entries_.empty() && pending_.empty()) return std::optional<ProcessExit>();  // nothing can exit
  const bool forever = timeout.count() < 0;
  const auto deadline = Clock::now() + (forever ? std::chrono::milliseconds(0) : timeout);
  for (;;) {
    if (!pending_.empty()) {
      ProcessExit x = std::move(pending_.front());
      pending_.pop_front();
      if (pending_.empty()) Drain(event_fd_);
      return std::optional<ProcessExit>(std::move(x));
    }
    int ms = -1;
    if (!forever) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    }
    epoll_event events[8];
    const int n = ::epoll_wait(epoll_fd_, events, 8, ms);
    if (n < 0) {
      if (errno == EINTR) return std::optional<ProcessExit>();
      return Error{"waiting for processes: epoll_wait: " + Errno(errno)};
    }
    if (n == 0) return std::optional<ProcessExit>();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      auto it = entries_.find(fd);
      if (it == entries_.end()) continue;  // the eventfd: pending_ is handled above
      ProcessExit x = Collect(fd, it->second);
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      ::close(fd);
      entries_.erase(it);
      return std::optional<ProcessExit>(std::move(x));  // the others stay readable
    }
    if (pending_.empty()) Drain(event_fd_);  // a stale eventfd count
  }
}

}  // namespace ix
