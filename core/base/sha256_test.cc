#include "core/base/sha256.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

// FIPS 180-2 test vectors.
TEST(Sha256, KnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, PiecesHashAsTheWhole) {
  Sha256 h;
  h.Update("ab");
  h.Update("");
  h.Update("c");
  EXPECT_EQ(h.Hex(), Sha256Hex("abc"));
  EXPECT_FALSE(h.Update("more"));  // the stream has ended
}

TEST(Sha256, HexForm) {
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
  EXPECT_FALSE(IsSha256Hex("e3b0"));
}

}  // namespace
}  // namespace ix
