#include "spank_plugin/stepd_stop.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "core/base/file_text.h"
#include "core/process/pidfd.h"

namespace ix {

StepdStop::~StepdStop() {
  if (found_ && found_->pidfd >= 0) ::close(found_->pidfd);
}

StepdStop::Found* StepdStop::Find() {
  if (looked_) return found_ ? &*found_ : nullptr;
  looked_ = true;
  int err = 0;
  const std::string pid_text = ReadFileTextAt(run_dir_fd_, "stepd.pid", &err, 64);
  const pid_t pid = err ? 0 : static_cast<pid_t>(std::atoi(pid_text.c_str()));
  if (pid <= 1) return nullptr;
  const int pidfd = PidfdOpen(pid);
  struct stat st{};
  Result<ProcessInfo> info = ReadProcessInfo(pid);
  if (pidfd < 0 || !info || ::fstatat(ProcDirFd(), std::to_string(pid).c_str(), &st, 0) != 0 || st.st_uid != uid_) {
    if (pidfd >= 0) ::close(pidfd);
    return nullptr;
  }
  found_ = Found{info.value().id(), pidfd};
  return &*found_;
}

// ix-stepd and its descendants now (host /proc), added to what is known.
void StepdStop::Remember() {
  const Found* f = Find();
  if (!f) return;
  std::vector<ProcessId> now{f->id};
  if (Result<std::vector<ProcessInfo>> d = ListDescendants(f->id.pid)) {
    for (const ProcessInfo& p : d.value()) now.push_back(p.id());
  }
  for (const ProcessId& id : now) {
    if (std::find(remembered_.begin(), remembered_.end(), id) == remembered_.end()) remembered_.push_back(id);
  }
}

void StepdStop::AwaitOwnEnd() {
  Found* f = Find();
  if (!f) return;
  Remember();
  struct pollfd pfd{f->pidfd, POLLIN, 0};
  while (::poll(&pfd, 1, 1000) <= 0) {
  }
}

void StepdStop::Stop() {
  if (stopped_) return;
  stopped_ = true;
  Found* f = Find();
  if (!f) return;
  Remember();
  PidfdSendSignal(f->pidfd, SIGTERM);
  struct pollfd pfd{f->pidfd, POLLIN, 0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (::poll(&pfd, 1, 100) <= 0 && std::chrono::steady_clock::now() < end) {
  }
  if (::poll(&pfd, 1, 0) <= 0) {
    Remember();
    PidfdSendSignal(f->pidfd, SIGKILL);
    ::poll(&pfd, 1, 5000);
  }
}

}  // namespace ix
