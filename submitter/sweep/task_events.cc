#include "submitter/sweep/task_events.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace ix {

namespace {

// The socket when it exists: a sweep on a cluster without agents sends
// nothing (and counts nothing as dropped).
std::string SocketIfPresent(const std::string& path) {
  struct stat st{};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) ? path : "";
}

}  // namespace

TaskReporter::TaskReporter(const SweepManifest& m, int64_t entry, std::string step)
    : m_(m), step_(std::move(step)), sink_(SocketIfPresent(m.stream.agent_socket)) {
  sink_.SetEntry(m.sweep_id, entry);
}

bool TaskReporter::SendPatiently(const std::string& event,
                                 const std::vector<std::pair<std::string, std::string>>& fields,
                                 const std::vector<std::pair<std::string, std::string>>& raw, int fd) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    if (sink_.Send(event, step_, fields, raw, fd)) return true;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "ixsubmit task: the node agent did not take the %s event: %s\n", event.c_str(),
               sink_.last_error().c_str());
  return false;
}

bool TaskReporter::Route() {
  if (!enabled() || m_.stream.collector_url.empty()) return false;
  const int fd = ::open(m_.stream.token_file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "ixsubmit task: cannot open the collector token %s: %s\n", m_.stream.token_file.c_str(),
                 std::strerror(errno));
    return false;
  }
  const bool sent = SendPatiently("route", {{"collector", m_.stream.collector_url}}, {}, fd);
  ::close(fd);
  return sent;
}

void TaskReporter::State(const std::string& state, int exit_code, const std::string& reason,
                         const std::string& process) {
  if (!enabled()) return;
  std::vector<std::pair<std::string, std::string>> fields = {{"state", state}};
  if (!reason.empty()) fields.insert(fields.end(), {{"reason", reason}, {"process", process}});
  std::vector<std::pair<std::string, std::string>> raw;
  if (state != "running") raw.emplace_back("exit_code", std::to_string(exit_code));
  SendPatiently("entry", fields, raw, -1);
}

namespace {

// The regular files (`files`) and directories (`dirs`) directly in dir_fd.
void ListDir(int dir_fd, std::vector<std::string>& files, std::vector<std::string>* dirs) {
  const int copy = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  DIR* d = copy >= 0 ? ::fdopendir(copy) : nullptr;
  if (!d) {
    if (copy >= 0) ::close(copy);
    return;
  }
  while (const dirent* e = ::readdir(d)) {
    struct stat st{};
    if (e->d_name[0] == '.' || ::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode)) files.emplace_back(e->d_name);
    if (S_ISDIR(st.st_mode) && dirs) dirs->emplace_back(e->d_name);
  }
  ::closedir(d);
}

bool LeftOutOfUploads(const std::string& name) {
  return name == "inputs.json" || name == "profile_export_raw.jsonl";
}

}  // namespace

std::vector<std::string> ResultFileNames(int dir_fd) {
  std::vector<std::string> names, dirs;
  ListDir(dir_fd, names, &dirs);
  for (const std::string& dir : dirs) {
    const int sub = ::openat(dir_fd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) continue;
    std::vector<std::string> files;
    ListDir(sub, files, nullptr);
    ::close(sub);
    for (const std::string& f : files) {
      if (!LeftOutOfUploads(f)) names.push_back(dir + "/" + f);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

size_t TaskReporter::Results(const std::string& dir) {
  if (!enabled()) return 0;
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return 0;
  size_t sent = 0;
  for (const std::string& name : ResultFileNames(dir_fd)) {
    const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    if (SendPatiently("result", {{"name", name}}, {}, fd)) ++sent;
    ::close(fd);
  }
  ::close(dir_fd);
  return sent;
}

}  // namespace ix
