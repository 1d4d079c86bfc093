#include "submitter/results/python_json.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

// Expected texts are what CPython 3.11 prints for the same values.
TEST(PyFloatRepr, WritesWhatPythonsReprWrites) {
  EXPECT_EQ(PyFloatRepr(0.1), "0.1");
  EXPECT_EQ(PyFloatRepr(1e-05), "1e-05");
  EXPECT_EQ(PyFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PyFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PyFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PyFloatRepr(123456.789), "123456.789");
  EXPECT_EQ(PyFloatRepr(2.0), "2.0");
  EXPECT_EQ(PyFloatRepr(1.5e-7), "1.5e-07");
  EXPECT_EQ(PyFloatRepr(3.141592653589793), "3.141592653589793");
  EXPECT_EQ(PyFloatRepr(1e22), "1e+22");
  EXPECT_EQ(PyFloatRepr(-0.5), "-0.5");
  EXPECT_EQ(PyFloatRepr(1234567890123456.7), "1234567890123456.8");
  EXPECT_EQ(PyFloatRepr(0.0), "0.0");
}

TEST(PyJsonDumps, IndentsAndEscapesAsJsonDumps) {
  rapidjson::Document d;
  d.Parse(R"({"a":[1,2.5,{}],"b":{"c":"\u00e9\u2603\ud83d\ude00\n\"x"},"d":[]})");
  ASSERT_FALSE(d.HasParseError());
  EXPECT_EQ(PyJsonDumps(d),
            "{\n  \"a\": [\n    1,\n    2.5,\n    {}\n  ],\n  \"b\": {\n    \"c\": "
            "\"\\u00e9\\u2603\\ud83d\\ude00\\n\\\"x\"\n  },\n  \"d\": []\n}");
  EXPECT_EQ(PyJsonDumps(d["a"], 0), "[1, 2.5, {}]");
}

TEST(PyRound, RoundsTheExactBinaryValueAsPythonDoes) {
  EXPECT_EQ(PyRound(2.675, 2), 2.67);  // 2.675 is 2.67499999... in binary
  EXPECT_EQ(PyRound(0.0005, 3), 0.001);
  EXPECT_EQ(PyRound(1.0005, 3), 1.0);
  EXPECT_EQ(PyRound(123.4564999, 3), 123.456);
}

}  // namespace
}  // namespace ix
