#include "core/node/topology_json.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>

#include "core/node/topology_fixtures.h"

namespace ix {
namespace {

using test::kTopologyFixtures;

// Element by element through the types' defaulted operator== (so a field
// added to a type is compared without a change here), naming the first
// element that differs.
template <class T>
void ExpectSameList(const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i] == b[i]) << what << "[" << i << "] differs";
}

void ExpectSame(const Topology& a, const Topology& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.notes, b.notes);
  ExpectSameList(a.numa_nodes, b.numa_nodes, "numa_nodes");
  ExpectSameList(a.cores, b.cores, "cores");
  ExpectSameList(a.gpus, b.gpus, "gpus");
}

// Writes, reads back, compares; and the text is stable (writing what was
// read gives the same bytes).
void ExpectRoundTrip(const Topology& t, const std::string& what) {
  const std::string json = TopologyToCacheJson(t);
  Result<Topology> back = TopologyFromCacheJson(json, "cache.json");
  ASSERT_TRUE(back) << what << ": " << back.error().message;
  ExpectSame(back.value(), t, what);
  EXPECT_EQ(TopologyToCacheJson(back.value()), json) << what;
}

std::vector<std::string> XmlFixtures() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kTopologyFixtures)) {
    if (e.path().extension() == ".xml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TopologyCacheJson, EveryXmlFixtureRoundTrips) {
  const std::vector<std::string> fixtures = XmlFixtures();
  ASSERT_GE(fixtures.size(), 6u);
  for (const std::string& path : fixtures) {
    Result<Topology> t = LoadTopologyXml(path);
    ASSERT_TRUE(t) << t.error().message;
    ExpectRoundTrip(t.value(), path);
  }
}

TEST(TopologyCacheJson, ThisMachineRoundTrips) {
  Result<Topology> t = DiscoverTopology();
  ASSERT_TRUE(t) << t.error().message;
  ExpectRoundTrip(t.value(), "this machine");
}

// What the fixtures do not have: unknown package/NUMA, a GPU with several or
// no local nodes, extreme numbers, notes, and a source with bytes JSON must
// escape.
TEST(TopologyCacheJson, UnusualValuesRoundTrip) {
  Topology t;
  t.source = "/odd \"path\"\\\n\t\xc3\xa9\x01";
  t.source += '\0';
  t.source += "end";
  t.numa_nodes = {{0, std::numeric_limits<uint64_t>::max(), std::nullopt, {0, 1, 2}, 2},
                  {3, 0, std::nullopt, {}, 0},
                  {7, 1, std::nullopt, {5}, 1}};
  t.cores = {{-1, -1, 0, {0, 2}}, {4, 9, 0, {1}}, {0, -1, -1, {3, 4}}, {1, 0, 7, {5}}};
  Gpu a;
  a.index = 0;
  a.bus_id = "0000:00:1f.7";
  a.vendor_id = 0x10de;
  a.device_id = 0xffff;
  a.class_id = 0x0300;
  a.local_numa = {0, 7};
  Gpu b = a;
  b.index = 1;
  b.bus_id = "ffffffff:ff:00.0";
  b.class_id = 0x0302;
  b.local_numa = {7};
  b.numa = 7;
  Gpu c = b;
  c.index = 2;
  c.bus_id = "100000000:00:00.0";
  c.local_numa = {};
  c.numa.reset();
  t.gpus = {a, b};
  t.notes = {"", "a note with \"quotes\""};
  ExpectRoundTrip(t, "unusual values");
  // No domain is wider than 32 bits (hwloc's is an unsigned int).
  t.gpus.push_back(c);
  EXPECT_FALSE(TopologyFromCacheJson(TopologyToCacheJson(t), "x"));
}

TEST(TopologyCacheJson, FreeMemoryIsNeverWritten) {
  Result<Topology> t = LoadTopologyXml(kTopologyFixtures + "hgx-b300-2tib.xml");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_TRUE(SetNumaFreeBytes(t.value(), 0, 12345));
  const std::string json = TopologyToCacheJson(t.value());
  EXPECT_EQ(json.find("free_bytes"), std::string::npos);
  EXPECT_EQ(json.find("12345"), std::string::npos);
  Result<Topology> back = TopologyFromCacheJson(json, "x");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_FALSE(back.value().numa_nodes[0].free_bytes.has_value());
}

// ---- refusals ----

using Doc = rapidjson::Document;

// A good document (the 2 TiB HGX: 2 nodes, 128 cores, 8 GPUs) changed by
// `edit`.
std::string Edited(const std::function<void(Doc&, Doc::AllocatorType&)>& edit) {
  Result<Topology> t = LoadTopologyXml(kTopologyFixtures + "hgx-b300-2tib.xml");
  EXPECT_TRUE(t) << t.error().message;
  Doc d;
  d.Parse(TopologyToCacheJson(t.value()).c_str());
  EXPECT_FALSE(d.HasParseError());
  edit(d, d.GetAllocator());
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  d.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

// The document is refused with a message that starts with `where` and has
// every one of `parts`.
void ExpectRefused(const std::string& text, const std::vector<std::string>& parts) {
  Result<Topology> t = TopologyFromCacheJson(text, "/run/x/topology.json");
  ASSERT_FALSE(t) << "accepted: " << text.substr(0, 200);
  const std::string& m = t.error().message;
  EXPECT_EQ(m.rfind("/run/x/topology.json: ", 0), 0u) << m;
  for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "no '" << p << "' in: " << m;
}

TEST(TopologyCacheJson, TheUneditedDocumentLoads) {
  // So every refusal below is the edit's doing.
  Result<Topology> t = TopologyFromCacheJson(Edited([](Doc&, Doc::AllocatorType&) {}), "x");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t.value().gpus.size(), 8u);
  EXPECT_EQ(t.value().cores.size(), 128u);
}

TEST(TopologyCacheJson, RefusesAnotherVersionOrFormat) {
  ExpectRefused(Edited([](Doc& d, auto&) { d["version"] = 2; }),
                {"field 'version' is 2", "expected 1, the version this build reads"});
  // A later version may have fields this one lacks: the version is what is wrong.
  ExpectRefused(Edited([](Doc& d, auto& a) {
                  d["version"] = 2;
                  d.AddMember("new_field", 1, a);
                }),
                {"field 'version' is 2"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["version"] = "1"; }), {"field 'version' is a string"});
  ExpectRefused(Edited([](Doc& d, auto&) { d.RemoveMember("version"); }), {"field 'version' is missing"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["format"] = "hwloc"; }),
                {"field 'format' is \"hwloc\"", "expected \"ix-topology\""});
}

TEST(TopologyCacheJson, RefusesUnknownAndRepeatedFields) {
  ExpectRefused(Edited([](Doc& d, auto& a) { d.AddMember("extra", true, a); }),
                {"field 'extra' is not a field of the topology cache format", "source, numa_nodes"});
  ExpectRefused(Edited([](Doc& d, auto& a) { d["cores"][3].AddMember("threads", 2, a); }),
                {"field 'cores[3].threads' is not a field"});
  ExpectRefused(Edited([](Doc& d, auto& a) { d["gpus"][7].AddMember("uuid", "GPU-1", a); }),
                {"field 'gpus[7].uuid' is not a field"});
  ExpectRefused(Edited([](Doc& d, auto& a) { d["numa_nodes"][1].AddMember("free_bytes", 5, a); }),
                {"field 'numa_nodes[1].free_bytes' is not cached", "measured per step"});
  ExpectRefused(Edited([](Doc& d, auto& a) { d["numa_nodes"][0].AddMember("cores", 64, a); }),
                {"field 'numa_nodes[0].cores' is given twice"});
}

TEST(TopologyCacheJson, RefusesMissingFields) {
  for (const char* top : {"source", "numa_nodes", "cores", "gpus", "notes"}) {
    ExpectRefused(Edited([&](Doc& d, auto&) { d.RemoveMember(top); }),
                  {"field '" + std::string(top) + "' is missing"});
  }
  ExpectRefused(Edited([](Doc& d, auto&) { d["numa_nodes"][1].RemoveMember("total_bytes"); }),
                {"field 'numa_nodes[1].total_bytes' is missing"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["cores"][0].RemoveMember("package"); }),
                {"field 'cores[0].package' is missing"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][2].RemoveMember("bus_id"); }),
                {"field 'gpus[2].bus_id' is missing"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][2].RemoveMember("numa"); }),
                {"field 'gpus[2].numa' is missing", "null (unknown or several)"});
}

TEST(TopologyCacheJson, RefusesWrongTypes) {
  ExpectRefused(Edited([](Doc& d, auto&) { d["numa_nodes"][0]["total_bytes"] = "2 TiB"; }),
                {"field 'numa_nodes[0].total_bytes' is a string", "expected bytes"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["numa_nodes"][0]["total_bytes"] = -1; }),
                {"field 'numa_nodes[0].total_bytes' is -1"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["cores"][5]["cpus"][0] = 5.5; }),
                {"field 'cores[5].cpus[0]' is 5.5", "expected CPU os indices"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["cores"][5]["cpus"] = 5; }),
                {"field 'cores[5].cpus' is 5", "expected an array of CPU os indices"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][0]["vendor_id"] = 70000; }),
                {"field 'gpus[0].vendor_id' is 70000", "0-65535"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][0]["numa"] = false; }), {"field 'gpus[0].numa' is false"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"] = Doc::ValueType(rapidjson::kObjectType); }),
                {"field 'gpus' is an object", "expected an array of GPU objects"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["cores"][2] = 1; }), {"field 'cores[2]' is 1", "expected an object"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["notes"].PushBack(3, d.GetAllocator()); }),
                {"field 'notes[0]' is 3", "expected a string"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["source"].SetNull(); }), {"field 'source' is null"});
}

TEST(TopologyCacheJson, RefusesBrokenInvariants) {
  // A CPU in two cores.
  ExpectRefused(Edited([](Doc& d, auto& a) { d["cores"][1]["cpus"].PushBack(5, a); }),
                {"field 'cores[5].cpus' has CPU 5, as cores[1] does", "expected every CPU in exactly one core"});
  // Unsorted or repeated nodes.
  ExpectRefused(Edited([](Doc& d, auto&) { d["numa_nodes"][1]["os_index"] = 0; }),
                {"field 'numa_nodes[1].os_index' is 0, not above the 0", "sorted by os_index"});
  // Cores out of order.
  ExpectRefused(Edited([](Doc& d, auto&) { d["cores"][0].Swap(d["cores"][1]); }),
                {"field 'cores[1].cpus' starts at CPU 0", "sorted by their first CPU"});
  // A core's CPUs unsorted, and an empty core.
  ExpectRefused(Edited([](Doc& d, auto& a) { d["cores"][0]["cpus"].PushBack(0, a); }),
                {"field 'cores[0].cpus[1]' is 0, not above the 0"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["cores"][0]["cpus"].Clear(); }), {"field 'cores[0].cpus' is empty"});
  // A core on a node that is not there.
  ExpectRefused(Edited([](Doc& d, auto&) { d["cores"][0]["numa"] = 5; }),
                {"field 'cores[0].numa' is 5", "a NUMA node present: 0,1"});
  // A node's CPUs or core count that its cores do not give.
  ExpectRefused(Edited([](Doc& d, auto&) { d["numa_nodes"][0]["cores"] = 63; }),
                {"field 'numa_nodes[0].cores' is 63 but 64 cores have numa 0"});
  ExpectRefused(Edited([](Doc& d, auto& a) { d["numa_nodes"][0]["cpus"].PushBack(1000, a); }),
                {"field 'numa_nodes[0].cpus' has CPU 1000, which none of its cores has"});
  // GPUs: index, bus order, canonical bus id, vendor, class, locality.
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][3]["index"] = 4; }), {"field 'gpus[3].index' is 4", "expected 3"});
  ExpectRefused(Edited([](Doc& d, auto&) {
                  d["gpus"][0]["bus_id"].Swap(d["gpus"][1]["bus_id"]);
                }),
                {"field 'gpus[1].bus_id' is 0000:1b:00.0, not after gpus[0]'s 0000:43:00.0", "PCI bus order"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][0]["bus_id"] = "0000:1B:00.0"; }),
                {"field 'gpus[0].bus_id' is \"0000:1B:00.0\"", "lower-case hex"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][0]["bus_id"] = "1b:00.0"; }), {"field 'gpus[0].bus_id'"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][0]["vendor_id"] = 0x15b3; }),
                {"field 'gpus[0].vendor_id' is 5555", "NVIDIA"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][0]["class_id"] = 0x0680; }), {"field 'gpus[0].class_id' is 1664"});
  ExpectRefused(Edited([](Doc& d, auto&) { d["gpus"][0]["numa"] = 1; }),
                {"field 'gpus[0].numa' is 1", "the one node in local_numa"});
  ExpectRefused(Edited([](Doc& d, auto& a) { d["gpus"][0]["local_numa"].PushBack(9, a); }),
                {"field 'gpus[0].local_numa[1]' is 9", "a NUMA node with CPUs: 0,1"});
  // A topology without CPUs is never built, so never cached.
  ExpectRefused(Edited([](Doc& d, auto&) { d["cores"].Clear(); }), {"field 'cores' is empty"});
}

TEST(TopologyCacheJson, RefusesBrokenText) {
  const std::string good = Edited([](Doc&, auto&) {});
  ExpectRefused(good.substr(0, good.size() / 2), {"not JSON", "at offset"});
  ExpectRefused(good.substr(0, good.size() - 1), {"not JSON"});
  ExpectRefused(good + "x", {"not JSON"});
  ExpectRefused(good + std::string(1, '\0') + "junk", {"has a NUL byte"});
  ExpectRefused("", {"not JSON"});
  ExpectRefused("\x89PNG\r\n\x1a\n\xff\xfe\x00\x01", {"expected a topology cache file"});
  ExpectRefused("\xff\xfe{}", {"not JSON"});
  ExpectRefused("[1,2]", {"is an array, not an object"});
  ExpectRefused("{}", {"field 'format' is missing"});
  ExpectRefused(std::string(100000, '['), {"not JSON"});  // deep nesting: no stack overflow
}

// Every prefix of a good document, and every byte of it replaced, is
// either refused or a document that loads; nothing crashes.
TEST(TopologyCacheJson, NoPrefixOrByteFlipCrashes) {
  Result<Topology> t = LoadTopologyXml(kTopologyFixtures + "small-unsorted.xml");
  ASSERT_TRUE(t) << t.error().message;
  const std::string good = TopologyToCacheJson(t.value());
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(TopologyFromCacheJson(good.substr(0, n), "x")) << n;
  for (size_t i = 0; i < good.size(); ++i) {
    for (char c : {'\0', '0', '9', '-', '"', '}', '\xff'}) {
      std::string s = good;
      s[i] = c;
      (void)TopologyFromCacheJson(s, "x");
    }
  }
}

}  // namespace
}  // namespace ix
