// OpenSSL-backed base64 and SHA-256.
#include "core/encoding.hpp"

#include <openssl/evp.h>

#include <vector>

namespace kstate::encoding {

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text, Base64Spacing spacing) {
  std::string compact;
  compact.reserve(text.size());
  for (char c : text) {
    const bool line_break = c == '\n' || c == '\r';
    const bool space = c == ' ' || c == '\t';
    if (!line_break && !(space && spacing == Base64Spacing::any)) {
      compact += c;
    }
  }
  if (compact.size() % 4 != 0) {
    return std::nullopt;
  }
  // EVP_DecodeBlock does not refuse every text Go does ('=' inside, for one).
  std::size_t padding = 0;
  for (std::size_t i = 0; i < compact.size(); ++i) {
    const char c = compact[i];
    const bool alphabet =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (c == '=') {
      if (i + 2 < compact.size()) {
        return std::nullopt;
      }
      ++padding;
    } else if (!alphabet || padding > 0) {
      return std::nullopt;
    }
  }
  if (compact.empty()) {
    return std::string();
  }
  std::string out(compact.size() / 4 * 3, '\0');
  int written =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(compact.data()), static_cast<int>(compact.size()));
  // EVP_DecodeBlock counts the padding as zero bytes.
  if (written < 0 || static_cast<std::size_t>(written) < padding) {
    return std::nullopt;
  }
  out.resize(static_cast<std::size_t>(written) - padding);
  return out;
}

std::string sha256(std::string_view bytes) {
  // Fetched once: EVP_sha256() in EVP_Digest makes OpenSSL 3 look the algorithm up in
  // its providers on every call (~1 us each; a re-apply hashes some 3,000 texts).
  static EVP_MD* const algorithm = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, algorithm != nullptr ? algorithm : EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string sha256_hex(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  const std::string digest = sha256(bytes);
  std::string out;
  out.reserve(digest.size() * 2);
  for (unsigned char byte : digest) {
    out += hex[byte >> 4];
    out += hex[byte & 0x0F];
  }
  return out;
}

}  // namespace kstate::encoding
