#include "submitter/collector/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/test.h"

namespace ix {
namespace {

const std::string kToken = "4f1c2a9b8e7d6c5b4a39281706f5e4d3";

class TokenFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string ErrorOf(const std::string& path) {
    Result<std::string> r = ReadTokenFile(path);
    EXPECT_FALSE(r) << path;
    if (r) return "";
    EXPECT_EQ(r.error().message.find(kToken), std::string::npos) << "the token is never in an error";
    return r.error().message;
  }
  test::TempDir dir_{"ix-token-file"};
};

TEST_F(TokenFileTest, TheFirstLineTrimmed) {
  Result<std::string> r = ReadTokenFile(Write("t", "  " + kToken + " \r\nsecond line\n"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value(), kToken);
  EXPECT_EQ(ReadTokenFile(Write("u", kToken)).value(), kToken) << "no newline needed";
  EXPECT_TRUE(ReadTokenFile(Write("o", kToken, 0400)));
}

TEST_F(TokenFileTest, RefusesAFileOthersMayRead) {
  for (mode_t mode : {0640, 0604, 0660, 0644, 0602}) {
    const std::string path = Write("t" + std::to_string(mode), kToken, mode);
    EXPECT_EQ(ErrorOf(path), "token file " + path + ": readable or writable by group or others; run chmod 600 " + path)
        << std::oct << mode;
  }
}

TEST_F(TokenFileTest, RefusesWhatIsNotARegularFile) {
  EXPECT_EQ(ErrorOf(dir_.path()), "token file " + dir_.path() + ": not a regular file");
  const std::string fifo = dir_.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ErrorOf(fifo), "token file " + fifo + ": not a regular file") << "and does not block opening it";
  const std::string link = dir_.path() + "/link";
  ASSERT_EQ(::symlink(Write("target", kToken).c_str(), link.c_str()), 0);
  EXPECT_EQ(ErrorOf(link), "token file " + link + ": is a symbolic link; give the file itself");
  EXPECT_NE(ErrorOf(dir_.path() + "/missing").find("cannot open: No such file or directory"), std::string::npos);
}

TEST_F(TokenFileTest, RefusesEmptyHugeAndBadTokens) {
  EXPECT_NE(ErrorOf(Write("empty", "")).find(": empty"), std::string::npos);
  EXPECT_NE(ErrorOf(Write("blank", "  \nsecond\n")).find("the first line is empty"), std::string::npos);
  EXPECT_NE(ErrorOf(Write("big", kToken + "\n" + std::string(4096, '#'))).find("larger than 4096 bytes"),
            std::string::npos);
  EXPECT_TRUE(ReadTokenFile(Write("max", kToken + "\n" + std::string(4096 - kToken.size() - 1, '#'))));
  EXPECT_NE(ErrorOf(Write("short", "short-token")).find("16 to 1024"), std::string::npos);
  EXPECT_NE(ErrorOf(Write("spaced", "0123456789 abcdef0123")).find("printable ASCII without spaces"),
            std::string::npos);
}

TEST(CheckToken, Alphabet) {
  EXPECT_TRUE(CheckToken(kToken));
  EXPECT_TRUE(CheckToken(std::string(1024, 'a')));
  EXPECT_FALSE(CheckToken(std::string(1025, 'a')));
  EXPECT_FALSE(CheckToken(std::string(15, 'a')));
  EXPECT_FALSE(CheckToken(kToken + "\x01"));
  EXPECT_FALSE(CheckToken(kToken + "\xc3\xa9"));
}

}  // namespace
}  // namespace ix
