// matrix_bench: wall time of `ixsubmit matrix full-sweep` over the InferenceX
// fixture (nvidia-master.yaml, 1355 entries), as a whole process, against
// two baselines measured in the same run, interleaved: `cat` of the
// reference output (reading and writing the same 826 KB) and
// `ixsubmit --help` (the process start cost of the same binary).
//
// Usage: matrix_bench IXSUBMIT FIXTURES_DIR [RUNS]
// Prints a Markdown table: median and minimum over RUNS (default 21).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Case {
  std::string label;
  std::vector<std::string> argv;
  std::vector<double> ms;
};

// Runs argv once with stdout to /dev/null; returns wall milliseconds.
double RunOnce(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) {
    std::fprintf(stderr, "matrix_bench: cannot run %s\n", args[0]);
    std::exit(1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const auto t1 = std::chrono::steady_clock::now();
  posix_spawn_file_actions_destroy(&fa);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "matrix_bench: %s failed\n", argv[0].c_str());
    std::exit(1);
  }
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: matrix_bench IXSUBMIT FIXTURES_DIR [RUNS]\n");
    return 2;
  }
  const std::string ix = argv[1], fx = argv[2];
  const int runs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 21;
  std::vector<Case> cases = {
      {"`ixsubmit matrix full-sweep` (nvidia-master.yaml, 1355 entries)",
       {ix, "matrix", "full-sweep", "--config-files", fx + "/nvidia-master.yaml", "--runner-config",
        fx + "/runners.yaml"},
       {}},
      {"baseline: `cat nvidia-full-sweep.json` (the same 826 KB out)", {"cat", fx + "/nvidia-full-sweep.json"}, {}},
      {"baseline: `ixsubmit --help` (process start)", {ix, "--help"}, {}},
  };
  for (Case& c : cases) RunOnce(c.argv);  // warm the page cache
  for (int r = 0; r < runs; ++r) {
    for (Case& c : cases) c.ms.push_back(RunOnce(c.argv));
  }
  const double sweep = Median(cases[0].ms);
  std::printf("| command | median ms | min ms | full-sweep / this |\n| --- | --- | --- | --- |\n");
  for (const Case& c : cases) {
    const double med = Median(c.ms);
    std::printf("| %s | %.1f | %.1f | %.2f |\n", c.label.c_str(), med, *std::min_element(c.ms.begin(), c.ms.end()),
                sweep / med);
  }
  std::printf("\n%d runs of each, interleaved; stdout to /dev/null.\n", runs);
  return 0;
}
