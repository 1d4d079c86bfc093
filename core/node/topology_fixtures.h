// What the topology tests share: the hwloc XML fixtures of
// tests/fixtures/topology (loaded, or by path), the HGX B300 fixtures' GPU
// bus ids, and writing a file (with its directories) under a test's TempDir.
// Tests only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/node/topology.h"

namespace ix::test {

inline const std::string kTopologyFixtures = IX_SOURCE_DIR "/tests/fixtures/topology/";
inline constexpr uint64_t kGiB = 1ull << 30;
inline constexpr uint64_t kTiB = 1ull << 40;

// The eight GPUs of the hgx-b300-* fixtures, in PCI bus order.
inline const std::vector<std::string> kHgxBusIds = {"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0",
                                                    "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0",
                                                    "0000:d1:00.0", "0000:df:00.0"};

// The fixture `name`, loaded (a failure fails the test and gives an empty one).
inline Topology LoadFixture(const std::string& name) {
  Result<Topology> t = LoadTopologyXml(kTopologyFixtures + name);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Topology{};
}

// Writes `text` to DIR/NAME, creating NAME's directories; returns the path.
inline std::string WriteTestFile(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
  return path;
}

}  // namespace ix::test
