// Helpers shared by the unit tests, instead of a copy in each test file.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>

namespace ix::test {

// A fresh directory under /tmp, removed with everything in it at the end
// of the scope. `name` goes into the directory's name, to tell tests apart.
class TempDir {
 public:
  explicit TempDir(const std::string& name = "ix-test") {
    std::string tmpl = "/tmp/" + name + ".XXXXXX";
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `s` with the first `from` replaced by `to`; a `from` that is not there
// fails the test (a test that edits a fixture must notice when the fixture
// changed under it).
inline std::string ReplaceOnce(std::string s, const std::string& from, const std::string& to) {
  const size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

// One change to a fixture text (its first `from` becomes `to`) and a part
// of the error that loading the changed text must give.
struct TextChange {
  std::string from, to, error;
};

// Loads `base` with each change in turn through `load_error` (the error
// message of loading a text, "" when it loads): each must hold its part.
inline void ExpectChangeErrors(const std::string& base, std::initializer_list<TextChange> changes,
                               const std::function<std::string(const std::string&)>& load_error) {
  for (const TextChange& c : changes) {
    const std::string message = load_error(ReplaceOnce(base, c.from, c.to));
    EXPECT_NE(message.find(c.error), std::string::npos) << "'" << c.from << "' -> '" << c.to << "': " << message;
  }
}

// Polls `done` every millisecond until it is true (true) or `limit` has
// passed (false, after one last look).
inline bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

}  // namespace ix::test
