// The topology caches: DiscoverTopologyCached writes this machine's once per
// boot and reads it back; LoadTopologyXmlCached keys the XML's by the file's
// identity, trusts only safe cache files, never caches errors, and parses the
// XML in a child process.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/node/topology.h"
#include "core/node/topology_fixtures.h"
#include "core/node/topology_json.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using test::kTiB;
using test::kTopologyFixtures;
using test::LoadFixture;

// A file on which Debian 12's hwloc 2.9.0 crashes (SEGV in
// hwloc_insert_object_by_parent; found by fuzz/topology_xml_fuzz): an error
// naming the file, and this process lives on. A fixed hwloc refuses it.
TEST(LoadTopologyXmlCached, AFileThatCrashesHwlocIsAnError) {
  test::TempDir d("ix-topo-crash");
  const std::string xml = kTopologyFixtures + "malformed/crashes-hwloc-2.9.xml";
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
  Result<Topology> good = LoadTopologyXmlCached(kTopologyFixtures + "smt-2x4x2.xml", d.path());
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good.value().source, kTopologyFixtures + "smt-2x4x2.xml");
  EXPECT_EQ(good.value().cores.size(), LoadTopologyXml(kTopologyFixtures + "smt-2x4x2.xml").value().cores.size());
}


// Everything but `source`, compared through the lossless cache format.
std::string Facts(Topology t) {
  t.source.clear();
  return TopologyToCacheJson(t);
}

// The files in `dir`, by name.
std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Replaces a cache file's topology with `t`, keeping its name and mode, so a
// load that returns `t` came from the cache.
void Plant(const std::string& path, const Topology& t) {
  std::ofstream(path, std::ios::trunc) << TopologyToCacheJson(t);
}

// The second discovery reads the first one's JSON, and both agree.
TEST(DiscoverTopologyCached, WritesOnceThenLoadsTheSameMachine) {
  test::TempDir dir("ix-topology-cache");
  Result<Topology> first = DiscoverTopologyCached(dir.path());
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first.value().source, "this machine");
  const std::vector<std::string> files = Files(dir.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].rfind("topology-", 0), 0u) << files[0];
  EXPECT_EQ(files[0].size() - files[0].rfind(".json"), 5u) << files[0];
  const std::string cache = dir.path() + "/" + files[0];
  EXPECT_EQ(std::filesystem::status(cache).permissions(), std::filesystem::perms(0644));
  Result<Topology> second = DiscoverTopologyCached(dir.path());
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second.value().source, "this machine (cached in " + cache + ")");
  EXPECT_EQ(Facts(second.value()), Facts(first.value()));

  // It really is read: a planted topology comes back.
  Topology planted = LoadFixture("smt-2x4x2.xml");
  Plant(cache, planted);
  Result<Topology> third = DiscoverTopologyCached(dir.path());
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(Facts(third.value()), Facts(planted));

  // A cache file others may write is not trusted, and is rewritten.
  std::filesystem::permissions(cache, std::filesystem::perms::others_write, std::filesystem::perm_options::add);
  Result<Topology> fourth = DiscoverTopologyCached(dir.path());
  ASSERT_TRUE(fourth) << fourth.error().message;
  EXPECT_EQ(fourth.value().source, "this machine");
  EXPECT_EQ(Facts(fourth.value()), Facts(first.value()));
  EXPECT_EQ(std::filesystem::status(cache).permissions(), std::filesystem::perms(0644));
  EXPECT_EQ(Files(dir.path()), files);  // no temporary left behind

  // Nor is a link, or a file that does not parse.
  Plant(dir.path() + "/elsewhere.json", planted);
  std::filesystem::remove(cache);
  std::filesystem::create_symlink(dir.path() + "/elsewhere.json", cache);
  Result<Topology> fifth = DiscoverTopologyCached(dir.path());
  ASSERT_TRUE(fifth) << fifth.error().message;
  EXPECT_EQ(fifth.value().source, "this machine");
  EXPECT_FALSE(std::filesystem::is_symlink(cache));
  test::WriteTestFile(dir.path(), files[0], "{\"format\":\"ix-topology\",\"version\":1,");
  Result<Topology> sixth = DiscoverTopologyCached(dir.path());
  ASSERT_TRUE(sixth) << sixth.error().message;
  EXPECT_EQ(sixth.value().source, "this machine");
  EXPECT_EQ(Facts(sixth.value()), Facts(first.value()));

  // Without a directory there is no cache.
  Result<Topology> uncached = DiscoverTopologyCached("");
  ASSERT_TRUE(uncached) << uncached.error().message;
  EXPECT_EQ(uncached.value().source, "this machine");
}

// ---- LoadTopologyXmlCached ----

// A copy of a fixture to edit, and a cache directory.
struct XmlCase {
  test::TempDir dir{"ix-topology-xml"};
  std::string xml = dir.path() + "/node.xml";
  std::string cache = dir.path() + "/cache";
  explicit XmlCase(const std::string& fixture) {
    std::filesystem::copy_file(kTopologyFixtures + fixture, xml);
    std::filesystem::create_directories(cache);
  }
};

void ExpectSameAsUncached(const Result<Topology>& cached, const std::string& xml) {
  Result<Topology> plain = LoadTopologyXml(xml);
  ASSERT_EQ(cached.ok(), plain.ok());
  if (!plain) {
    EXPECT_EQ(cached.error().message, plain.error().message);
    return;
  }
  EXPECT_EQ(cached.value().source, plain.value().source);
  EXPECT_EQ(Facts(cached.value()), Facts(plain.value()));
}

TEST(LoadTopologyXmlCached, HitGivesWhatTheXmlGives) {
  XmlCase c("hgx-b300-2tib.xml");
  Result<Topology> first = LoadTopologyXmlCached(c.xml, c.cache);
  ExpectSameAsUncached(first, c.xml);
  const std::vector<std::string> files = Files(c.cache);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].rfind("topology-xml-", 0), 0u) << files[0];
  Result<Topology> second = LoadTopologyXmlCached(c.xml, c.cache);
  ExpectSameAsUncached(second, c.xml);
  // Another path to the same file gets its own path as the source.
  const std::string link = c.dir.path() + "/link.xml";
  std::filesystem::create_symlink(c.xml, link);
  ExpectSameAsUncached(LoadTopologyXmlCached(link, c.cache), link);
  EXPECT_EQ(Files(c.cache), files);

  // The hit is the cache: a planted topology comes back.
  Topology planted = LoadFixture("smt-2x4x2.xml");
  Plant(c.cache + "/" + files[0], planted);
  Result<Topology> third = LoadTopologyXmlCached(c.xml, c.cache);
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third.value().source, c.xml);
  EXPECT_EQ(Facts(third.value()), Facts(planted));

  // Without a directory there is no cache.
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, ""), c.xml);
}

TEST(LoadTopologyXmlCached, AnEditedXmlIsParsedAgain) {
  XmlCase c("hgx-b300-2tib.xml");
  ASSERT_TRUE(LoadTopologyXmlCached(c.xml, c.cache));
  EXPECT_EQ(LoadTopologyXmlCached(c.xml, c.cache).value().numa_nodes[0].total_bytes, 2 * kTiB);
  // Node 0 made 3 TiB in place: same inode, same size (as many digits), and
  // the old mtime put back, as cp -p would. Only ctime differs.
  const auto mtime = std::filesystem::last_write_time(c.xml);
  const auto size = std::filesystem::file_size(c.xml);
  std::stringstream text;
  text << std::ifstream(c.xml).rdbuf();
  std::string xml = text.str();
  const std::string two = "local_memory=\"2199023255552\"";
  ASSERT_NE(xml.find(two), std::string::npos);
  xml.replace(xml.find(two), two.size(), "local_memory=\"3298534883328\"");
  ::usleep(20000);  // past a tick of the coarse clock file times come from
  std::ofstream(c.xml, std::ios::trunc) << xml;
  std::filesystem::last_write_time(c.xml, mtime);
  ASSERT_EQ(std::filesystem::file_size(c.xml), size);
  Result<Topology> edited = LoadTopologyXmlCached(c.xml, c.cache);
  ExpectSameAsUncached(edited, c.xml);
  ASSERT_TRUE(edited);
  EXPECT_EQ(edited.value().numa_nodes[0].total_bytes, 3 * kTiB);
  EXPECT_EQ(edited.value().numa_nodes[1].total_bytes, 2 * kTiB);
  EXPECT_EQ(Files(c.cache).size(), 2u);
  // Replaced by another file (an editor, rsync).
  const std::string other = c.dir.path() + "/other.xml";
  std::filesystem::copy_file(kTopologyFixtures + "hgx-b300-snc.xml", other);
  std::filesystem::rename(other, c.xml);
  Result<Topology> replaced = LoadTopologyXmlCached(c.xml, c.cache);
  ExpectSameAsUncached(replaced, c.xml);
  ASSERT_TRUE(replaced);
  EXPECT_EQ(replaced.value().numa_nodes.size(), 4u);
  EXPECT_EQ(Files(c.cache).size(), 3u);
}

TEST(LoadTopologyXmlCached, AnUnsafeCacheFileIsIgnored) {
  XmlCase c("hgx-b300-2tib.xml");
  ASSERT_TRUE(LoadTopologyXmlCached(c.xml, c.cache));
  const std::vector<std::string> files = Files(c.cache);
  ASSERT_EQ(files.size(), 1u);
  const std::string cache = c.cache + "/" + files[0];
  for (auto perm : {std::filesystem::perms::group_write, std::filesystem::perms::others_write}) {
    Plant(cache, LoadFixture("smt-2x4x2.xml"));
    std::filesystem::permissions(cache, std::filesystem::perms(0644));
    std::filesystem::permissions(cache, perm, std::filesystem::perm_options::add);
    ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.cache), c.xml);
    EXPECT_EQ(std::filesystem::status(cache).permissions(), std::filesystem::perms(0644));  // rewritten
  }
  // A link to a planted file.
  Plant(c.dir.path() + "/planted.json", LoadFixture("smt-2x4x2.xml"));
  std::filesystem::remove(cache);
  std::filesystem::create_symlink(c.dir.path() + "/planted.json", cache);
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.cache), c.xml);
  EXPECT_FALSE(std::filesystem::is_symlink(cache));
  // A directory in its place: no cache, still the right answer.
  std::filesystem::remove(cache);
  std::filesystem::create_directory(cache);
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.cache), c.xml);
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.cache), c.xml);
  // A cache directory that does not exist.
  ExpectSameAsUncached(LoadTopologyXmlCached(c.xml, c.dir.path() + "/absent"), c.xml);
}

TEST(LoadTopologyXmlCached, ErrorsAreTheSameAndNeverCached) {
  XmlCase c("hgx-b300-2tib.xml");
  for (const std::string& bad : {std::string("<topology><object"), std::string(""), std::string("not xml")}) {
    std::ofstream(c.xml, std::ios::trunc) << bad;
    Result<Topology> r = LoadTopologyXmlCached(c.xml, c.cache);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(c.xml), std::string::npos) << r.error().message;
    ExpectSameAsUncached(r, c.xml);
    EXPECT_TRUE(Files(c.cache).empty());
  }
  ExpectSameAsUncached(LoadTopologyXmlCached(c.dir.path() + "/absent.xml", c.cache), c.dir.path() + "/absent.xml");
  ExpectSameAsUncached(LoadTopologyXmlCached(c.dir.path(), c.cache), c.dir.path());  // a directory
  EXPECT_TRUE(Files(c.cache).empty());
}

}  // namespace
}  // namespace ix
