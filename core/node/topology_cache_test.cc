// LoadTopologyXmlCached's isolation: the XML is parsed in a child process.
// (Its cache behaviour is tested in topology_test.cc.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/node/topology.h"
#include "tests/support/test.h"

namespace ix {
namespace {

const std::string kFixtures = IX_SOURCE_DIR "/tests/fixtures/topology/";

// A file on which Debian 12's hwloc 2.9.0 crashes (SEGV in
// hwloc_insert_object_by_parent; found by fuzz/topology_xml_fuzz): an error
// naming the file, and this process lives on. A fixed hwloc refuses it.
TEST(LoadTopologyXmlCached, AFileThatCrashesHwlocIsAnError) {
  test::TempDir d("ix-topo-crash");
  const std::string xml = kFixtures + "malformed/crashes-hwloc-2.9.xml";
  Result<Topology> t = LoadTopologyXmlCached(xml, d.path());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find(xml), std::string::npos) << t.error().message;
  EXPECT_TRUE(std::filesystem::is_empty(d.path()));  // errors are never cached
}

TEST(LoadTopologyXmlCached, TheChildsAnswerIsTheParsersOwn) {
  test::TempDir d("ix-topo-child");
  // A parse error comes back word for word.
  const std::string bad = d.path() + "/bad.xml";
  { std::ofstream(bad) << "<topology>"; }
  Result<Topology> t = LoadTopologyXmlCached(bad, d.path());
  Result<Topology> direct = LoadTopologyXml(bad);
  ASSERT_FALSE(t.ok());
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(t.error().message, direct.error().message);
  // A good file: the same topology, with its path as the source.
  Result<Topology> good = LoadTopologyXmlCached(kFixtures + "smt-2x4x2.xml", d.path());
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good.value().source, kFixtures + "smt-2x4x2.xml");
  EXPECT_EQ(good.value().cores.size(), LoadTopologyXml(kFixtures + "smt-2x4x2.xml").value().cores.size());
}

}  // namespace
}  // namespace ix
