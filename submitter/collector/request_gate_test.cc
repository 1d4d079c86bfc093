#include "submitter/collector/request_gate.h"

#include <gtest/gtest.h>

#include "core/base/sha256.h"

namespace ix {
namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

RequestHead Events(std::string length = "10") {
  return RequestHead{"POST", "/v1/events",
                     {{"Authorization", "Bearer " + kToken}, {"Content-Type", "application/json"},
                      {"Content-Length", std::move(length)}}};
}

RequestHead ResultPut(std::string target = "/v1/results/sw-1/3/result.json") {
  return RequestHead{"PUT", std::move(target),
                     {{"Authorization", "Bearer " + kToken}, {"Content-Length", "5"},
                      {"X-Content-SHA256", Sha256Hex("hello")}}};
}

RequestHead Without(RequestHead h, const std::string& name) {
  std::erase_if(h.headers, [&](const auto& kv) { return kv.first == name; });
  return h;
}

RequestHead Setting(RequestHead h, const std::string& name, const std::string& value) {
  h = Without(std::move(h), name);
  h.headers.emplace_back(name, value);
  return h;
}

// A copy: callers pass a temporary decision.
Refusal Refused(const GateDecision& d) {
  const Refusal* r = std::get_if<Refusal>(&d);
  return r ? *r : Refusal{0, "admitted", false, ""};
}

TEST(RequestGate, AdmitsAnEventsPost) {
  const GateDecision d = CheckRequestHead(Events("123"), kToken);
  ASSERT_TRUE(std::holds_alternative<Admitted>(d)) << Refused(d).message;
  EXPECT_EQ(std::get<Admitted>(d).route, Route::kEvents);
  EXPECT_EQ(std::get<Admitted>(d).content_length, 123u);
}

TEST(RequestGate, AdmitsAResultPutWithItsParts) {
  const GateDecision d = CheckRequestHead(ResultPut(), kToken);
  ASSERT_TRUE(std::holds_alternative<Admitted>(d)) << Refused(d).message;
  const Admitted& a = std::get<Admitted>(d);
  EXPECT_EQ(a.route, Route::kResult);
  EXPECT_EQ(a.result.sweep, "sw-1");
  EXPECT_EQ(a.result.entry, 3);
  EXPECT_EQ(a.result.name, "result.json");
  EXPECT_EQ(a.sha256, Sha256Hex("hello"));
}

TEST(RequestGate, HealthNeedsNoToken) {
  for (const char* method : {"GET", "HEAD"}) {
    const GateDecision d = CheckRequestHead(RequestHead{method, "/v1/health", {}}, kToken);
    ASSERT_TRUE(std::holds_alternative<Admitted>(d)) << method;
    EXPECT_EQ(std::get<Admitted>(d).route, Route::kHealth);
  }
  EXPECT_EQ(Refused(CheckRequestHead(RequestHead{"POST", "/v1/health", {}}, kToken)).status, 405);
}

TEST(RequestGate, EveryOtherRequestNeedsTheBearerToken) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "missing Authorization header"},
      {"Bearer wrong-token-0123456789", "wrong bearer token"},
      {"Bearer " + kToken + "x", "wrong bearer token"},
      {"Bearer " + kToken.substr(1), "wrong bearer token"},
      {"Basic " + kToken, "the Authorization header must be Bearer TOKEN"},
      {"Bearer", "the Authorization header must be Bearer TOKEN"},
      {"Bearer   ", "the Authorization header must be Bearer TOKEN"},
      {kToken, "the Authorization header must be Bearer TOKEN"},
  };
  for (const RequestHead& base : {Events(), ResultPut(), RequestHead{"GET", "/nowhere", {}}}) {
    for (const auto& [auth, why] : cases) {
      RequestHead h = auth.empty() ? Without(base, "Authorization") : Setting(base, "Authorization", auth);
      const Refusal r = Refused(CheckRequestHead(h, kToken));
      EXPECT_EQ(r.status, 401) << base.target << " " << auth;
      EXPECT_EQ(r.message.rfind(why, 0), 0u) << r.message;
      EXPECT_TRUE(r.authenticate);
      EXPECT_EQ(r.message.find(kToken), std::string::npos) << "the token is never echoed";
    }
  }
}

TEST(RequestGate, TheSchemeIsCaseInsensitiveAndSpacesAreTrimmed) {
  EXPECT_TRUE(std::holds_alternative<Admitted>(
      CheckRequestHead(Setting(Events(), "Authorization", "bearer   " + kToken + " "), kToken)));
  RequestHead h = Without(Events(), "Authorization");
  h.headers.emplace_back("authorization", "BEARER " + kToken);
  EXPECT_TRUE(std::holds_alternative<Admitted>(CheckRequestHead(h, kToken)));
}

TEST(RequestGate, TwoAuthorizationHeadersAreRefused) {
  RequestHead h = Events();
  h.headers.emplace_back("Authorization", "Bearer " + kToken);
  EXPECT_EQ(Refused(CheckRequestHead(h, kToken)).status, 401);
}

TEST(RequestGate, RoutesOnTheRawTarget) {
  for (const char* target : {"/v1/%65vents", "/v1/events/", "/V1/events", "//v1/events", "/v1/./events",
                             "/v1/results", "/", "/v1/health/../events"}) {
    RequestHead h = Events();
    h.target = target;
    EXPECT_EQ(Refused(CheckRequestHead(h, kToken)).status, 404) << target;
  }
  RequestHead query = Events();
  query.target = "/v1/events?x=1";
  EXPECT_TRUE(std::holds_alternative<Admitted>(CheckRequestHead(query, kToken))) << "a query is ignored";
}

TEST(RequestGate, ResultPathsWithTraversalOrEncodingAreRefused) {
  for (const char* target :
       {"/v1/results/sw-1/3/../../events", "/v1/results/sw-1/3/..", "/v1/results/../3/x", "/v1/results/sw-1/3/%2e%2e",
        "/v1/results/sw-1/3/a%2Fb", "/v1/results/%2e%2e/3/x", "/v1/results/sw-1/3/a%00b", "/v1/results/sw-1/x/y",
        "/v1/results/sw-1/3/", "/v1/results/sw-1/3/a/b/c", "/v1/results/"}) {
    const Refusal r = Refused(CheckRequestHead(ResultPut(target), kToken));
    EXPECT_EQ(r.status, 400) << target;
  }
}

TEST(RequestGate, WrongMethodIs405WithAllow) {
  RequestHead h = Events();
  h.method = "GET";
  const Refusal r = Refused(CheckRequestHead(h, kToken));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.allow, "POST");
  RequestHead p = ResultPut();
  p.method = "POST";
  EXPECT_EQ(Refused(CheckRequestHead(p, kToken)).allow, "PUT");
}

TEST(RequestGate, BodiesNeedOneContentLengthWithinTheRoutesLimit) {
  EXPECT_EQ(Refused(CheckRequestHead(Without(Events(), "Content-Length"), kToken)).status, 411);
  EXPECT_EQ(Refused(CheckRequestHead(Setting(Events(), "Transfer-Encoding", "chunked"), kToken)).status, 411);
  for (const char* bad : {"", "-1", "1e3", "0x10", "abc", "99999999999999999999999"}) {
    EXPECT_EQ(Refused(CheckRequestHead(Setting(Events(), "Content-Length", bad), kToken)).status, 400) << bad;
  }
  RequestHead twice = Events();
  twice.headers.emplace_back("Content-Length", "10");
  EXPECT_EQ(Refused(CheckRequestHead(twice, kToken)).status, 400);

  EXPECT_TRUE(std::holds_alternative<Admitted>(CheckRequestHead(Events(std::to_string(4 << 20)), kToken)));
  const Refusal big = Refused(CheckRequestHead(Events(std::to_string((4 << 20) + 1)), kToken));
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.message, "Content-Length: 4194305 bytes; at most 4194304 are accepted here");
  EXPECT_TRUE(std::holds_alternative<Admitted>(
      CheckRequestHead(Setting(ResultPut(), "Content-Length", std::to_string(64 << 20)), kToken)));
  EXPECT_EQ(Refused(CheckRequestHead(Setting(ResultPut(), "Content-Length", std::to_string((64 << 20) + 1)), kToken))
                .status,
            413);
}

TEST(RequestGate, CompressedBodiesAreRefused) {
  EXPECT_EQ(Refused(CheckRequestHead(Setting(Events(), "Content-Encoding", "gzip"), kToken)).status, 415);
  EXPECT_EQ(Refused(CheckRequestHead(Setting(ResultPut(), "Content-Encoding", "br"), kToken)).status, 415);
  EXPECT_TRUE(
      std::holds_alternative<Admitted>(CheckRequestHead(Setting(Events(), "Content-Encoding", "identity"), kToken)));
}

TEST(RequestGate, ContentTypes) {
  EXPECT_TRUE(std::holds_alternative<Admitted>(
      CheckRequestHead(Setting(Events(), "Content-Type", "Application/JSON; charset=utf-8"), kToken)));
  EXPECT_EQ(Refused(CheckRequestHead(Without(Events(), "Content-Type"), kToken)).status, 415);
  EXPECT_EQ(Refused(CheckRequestHead(Setting(Events(), "Content-Type", "text/plain"), kToken)).status, 415);
  EXPECT_TRUE(std::holds_alternative<Admitted>(
      CheckRequestHead(Setting(ResultPut(), "Content-Type", "application/octet-stream"), kToken)));
  for (const char* form : {"application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
    EXPECT_EQ(Refused(CheckRequestHead(Setting(ResultPut(), "Content-Type", form), kToken)).status, 415) << form;
  }
}

TEST(RequestGate, AResultNeedsItsSha256Announced) {
  EXPECT_EQ(Refused(CheckRequestHead(Without(ResultPut(), "X-Content-SHA256"), kToken)).status, 400);
  const std::string upper = [] {
    std::string s = Sha256Hex("hello");
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }();
  for (const std::string& bad : {upper, std::string(63, 'a'), std::string(65, 'a'), std::string("xyz")}) {
    const Refusal r = Refused(CheckRequestHead(Setting(ResultPut(), "X-Content-SHA256", bad), kToken));
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.message.rfind("X-Content-SHA256:", 0), 0u);
  }
}

TEST(RequestGate, TheTokenIsCheckedBeforeAnythingElseIsSaid) {
  // No route, method or size is told to a client without the token.
  RequestHead h = Without(Events(std::to_string(1 << 30)), "Authorization");
  h.target = "/v1/results/../../x";
  EXPECT_EQ(Refused(CheckRequestHead(h, kToken)).status, 401);
}

TEST(TokensEqual, ComparesWholeTokens) {
  EXPECT_TRUE(TokensEqual(kToken, kToken));
  EXPECT_FALSE(TokensEqual(kToken, kToken + "0"));
  EXPECT_FALSE(TokensEqual(kToken, kToken.substr(0, kToken.size() - 1)));
  EXPECT_FALSE(TokensEqual("", kToken));
  EXPECT_TRUE(TokensEqual("", ""));
}

}  // namespace
}  // namespace ix
