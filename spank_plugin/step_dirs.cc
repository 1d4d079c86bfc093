#include "spank_plugin/step_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/base/dir_at.h"
#include "core/base/file_text.h"

namespace ix {
namespace {

constexpr char kSuffix[] = ".owner";

// "JOB.STEP" from ".JOB.STEP.owner"; "" for any other name.
std::string StepOfRecord(const std::string& name) {
  const size_t n = name.size(), s = sizeof kSuffix - 1;
  if (n <= s + 1 || name[0] != '.' || name.compare(n - s, s, kSuffix) != 0) return "";
  std::string step = name.substr(1, n - s - 1);
  if (step.find('/') != std::string::npos || step == "." || step == "..") return "";
  return step;
}

}  // namespace

std::string StepOwnerFile(const std::string& step_id) { return "." + step_id + kSuffix; }

std::string FormatStepOwner(const LeaseOwner& owner) {
  return std::to_string(owner.pid) + " " + std::to_string(owner.start_time) + " " + owner.boot_id + "\n";
}

std::optional<LeaseOwner> ParseStepOwner(const std::string& step_id, const std::string& text) {
  std::istringstream in(text);
  LeaseOwner o;
  o.id = step_id;
  long long pid = 0;
  if (!(in >> pid >> o.start_time >> o.boot_id) || pid <= 1 || pid > 1 << 22) return std::nullopt;
  o.pid = static_cast<pid_t>(pid);
  return o;
}

Result<std::vector<std::string>> RemoveStaleStepDirs(int run_base, const std::string& run_dir, OwnerLiveness& live,
                                                     std::vector<std::string>* problems) {
  const int fd = ::openat(run_base, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot read " + run_dir + ": " + std::strerror(errno)};
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return Error{"cannot read " + run_dir + ": " + std::strerror(errno)};
  }
  std::vector<std::string> steps;
  while (const dirent* e = ::readdir(d)) {
    if (std::string step = StepOfRecord(e->d_name); !step.empty()) steps.push_back(std::move(step));
  }
  ::closedir(d);
  std::vector<std::string> removed;
  for (const std::string& step : steps) {
    int err = 0;
    const std::string text = ReadFileTextAt(run_base, StepOwnerFile(step), &err, 256);
    if (err) continue;  // gone meanwhile: its step ended
    const std::optional<LeaseOwner> owner = ParseStepOwner(step, text);
    if (owner && live.IsAlive(*owner)) continue;
    if (Status r = RemoveTreeAt(run_base, run_dir, step); !r) {
      if (problems) problems->push_back(r.error().message);
      continue;
    }
    ::unlinkat(run_base, StepOwnerFile(step).c_str(), 0);
    removed.push_back(step);
  }
  return removed;
}

}  // namespace ix
