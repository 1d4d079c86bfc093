// Sha256: the SHA-256 of a byte stream, fed in pieces, as lowercase hex.
// OpenSSL's libcrypto does the hashing; this is its own library (ix_sha256)
// so that programs which never hash (ix-stepd, linked statically) do not
// link libcrypto.
//
// Invariant: Hex() ends the stream; Update() after it is a logic error
// (checked: it restarts nothing and returns false).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace ix {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  bool Update(std::string_view bytes);
  // The digest as 64 lowercase hex digits.
  std::string Hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The digest of `bytes` in one call.
std::string Sha256Hex(std::string_view bytes);

// True when `s` is 64 lowercase hex digits (what Hex() gives).
bool IsSha256Hex(std::string_view s);

}  // namespace ix
