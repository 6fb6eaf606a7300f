// Small encodings built on OpenSSL: base64 (kubeconfig *-data fields, basic auth,
// exec cluster info) and SHA-256 (discovery cache checksums).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kstate::encoding {

std::string base64_encode(std::string_view bytes);
// nullopt when the text is not valid base64 (whitespace and newlines are ignored).
std::optional<std::string> base64_decode(std::string_view text);
// SHA-256 of bytes: the 32 raw bytes, or lowercase hex.
std::string sha256(std::string_view bytes);
std::string sha256_hex(std::string_view bytes);

}  // namespace kstate::encoding
