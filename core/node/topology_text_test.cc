// Texts core/node/topology.h parses, in the cases the fuzz targets found:
// TopologyFromXmlText on hwloc XML that hwloc loads but that would break the
// invariants of topology.h (fuzz/topology_xml_fuzz), and id lists that
// expand without bound (fuzz/sysfs_text_fuzz).
#include <gtest/gtest.h>

#include <string>

#include "core/base/file_text.h"
#include "core/node/topology.h"

namespace ix {
namespace {

std::string Fixture(const std::string& name) {
  int err = 0;
  std::string text = ReadFileText(IX_SOURCE_DIR "/tests/fixtures/topology/" + name, &err);
  EXPECT_EQ(err, 0) << name;
  return text;
}

// `from` replaced by `to` in `text`, which must hold it.
std::string Edited(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(TopologyXml, TheFixtureLoadsAsText) {
  Result<Topology> t = TopologyFromXmlText(Fixture("smt-2x4x2.xml"), "smt.xml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t.value().source, "smt.xml");
}

// Two PUs with os_index 0 (one with CPU 8's cpuset): CPU 0 would be in two
// cores, and the topology cache would refuse what was built.
TEST(TopologyXml, APuOsIndexGivenTwiceIsAnError) {
  const std::string xml = Edited(Fixture("smt-2x4x2.xml"), R"(os_index="8" cpuset="0x00000100")",
                                 R"(os_index="0" cpuset="0x00000100")");
  Result<Topology> t = TopologyFromXmlText(xml, "dup.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("dup.xml: PU os_index 0 appears twice"), std::string::npos) << t.error().message;
}

// Two GPUs at one PCI address: GPU indices are positions in bus order, and
// the topology cache refused what was built.
TEST(TopologyXml, APciBusIdGivenTwiceIsAnError) {
  const std::string xml = Edited(Fixture("smt-2x4x2.xml"), R"(gp_index="35" pci_busid="0000:43:00.0")",
                                 R"(gp_index="35" pci_busid="0000:1b:00.0")");
  Result<Topology> t = TopologyFromXmlText(xml, "dup.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("dup.xml: PCI device 0000:1b:00.0 appears twice"), std::string::npos)
      << t.error().message;
}

TEST(TopologyXml, EmptyTextIsAnError) {
  Result<Topology> t = TopologyFromXmlText(" \n", "empty.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("empty.xml: file is empty"), std::string::npos) << t.error().message;
}

// One range is bounded (2^20 ids) but not how many: "0-1048576" repeated
// a thousand times was a billion ids (and seconds, and gigabytes).
TEST(IdList, TooManyIdsIsAnError) {
  std::string many = "0-40000";
  for (int i = 0; i < 1000; ++i) many += ",0-40000";
  Result<std::vector<int>> r = ParseIdList(many, "SLURM_STEP_GPUS");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("SLURM_STEP_GPUS: more than 65536 ids in '0-40000,0-40000,", 0), 0u)
      << r.error().message;
  EXPECT_EQ(ParseIdList("0-65535", "x").value().size(), 65536u);
  EXPECT_FALSE(ParseIdList("0-65536", "x").ok());
}

}  // namespace
}  // namespace ix
