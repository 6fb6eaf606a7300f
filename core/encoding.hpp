// Small encodings built on OpenSSL: base64 (kubeconfig *-data fields, basic auth,
// exec cluster info, YAML's !!binary, the ApplySet inventory) and SHA-256 (discovery cache checksums).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kstate::encoding {

std::string base64_encode(std::string_view bytes);
// Which white space may stand between the characters of a base64 text: only line
// breaks, as Go's base64.StdEncoding (YAML's !!binary, kubectl), or any (kubeconfig
// *-data fields, which a YAML plain scalar may fold over lines into spaces).
enum class Base64Spacing { line_breaks, any };
// The bytes of standard, padded base64 (Go's StdEncoding: its alphabet, '=' only at
// the end); nullopt when the text is not that.
std::optional<std::string> base64_decode(std::string_view text, Base64Spacing spacing = Base64Spacing::any);
// SHA-256 of bytes: the 32 raw bytes, or lowercase hex.
std::string sha256(std::string_view bytes);
std::string sha256_hex(std::string_view bytes);

}  // namespace kstate::encoding
