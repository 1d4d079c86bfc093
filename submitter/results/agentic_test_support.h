// Helpers of the agentic results tests: the golden cases under
// tests/data/agentic/<case>/ (README.md there says how each expected file
// was produced by InferenceX's own Python), copied to a scratch directory
// because the code under test writes beside its inputs.
#pragma once

#include <stdlib.h>
#include <time.h>

#include <filesystem>
#include <string>

#include "core/base/file_text.h"
#include "core/base/text.h"
#include "submitter/results/benchmark_env.h"
#include "tests/support/test.h"

namespace ix::test {

inline std::string AgenticCaseDir(const std::string& name) {
  return std::string(IX_SOURCE_DIR) + "/tests/data/agentic/" + name;
}

// A case's inputs in `dir` (everything but expected/).
inline void CopyAgenticCase(const std::string& name, const std::string& dir) {
  namespace fs = std::filesystem;
  for (const auto& e : fs::directory_iterator(AgenticCaseDir(name))) {
    if (e.path().filename() == "expected") continue;
    fs::copy(e.path(), dir / e.path().filename(), fs::copy_options::recursive);
  }
}

// The case's env.txt (NAME=value lines) as the task's environment.
inline EnvVars AgenticCaseEnv(const std::string& name) {
  int err = 0;
  EnvVars env;
  const std::string text = ReadFileText(AgenticCaseDir(name) + "/env.txt", &err);
  for (std::string_view line : Split(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) env.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return env;
}

// An expected file, with the directory the Python ran in
// (/tmp/agentic-golden/<case>) replaced by `dir`.
inline std::string AgenticExpected(const std::string& name, const std::string& file, const std::string& dir) {
  int err = 0;
  std::string text = ReadFileText(AgenticCaseDir(name) + "/expected/" + file, &err);
  EXPECT_EQ(err, 0) << file;
  const std::string golden = "/tmp/agentic-golden/" + name;
  for (size_t p; (p = text.find(golden)) != std::string::npos;) text.replace(p, golden.size(), dir);
  return text;
}

// nvidia-smi's timestamps are local time; the goldens were made with TZ=UTC.
inline void UseUtc() {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
}

}  // namespace ix::test
