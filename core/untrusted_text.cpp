// Escaping and capping of untrusted text (see untrusted_text.hpp).
#include "core/untrusted_text.hpp"

#include <algorithm>
#include <cstdio>

namespace kstate {

namespace {

// The bytes of the character starting at text[i] (1 for ASCII and for bytes that do
// not start a valid sequence, which are copied alone).
std::size_t character_length(std::string_view text, std::size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  if (i + length > text.size()) {
    return 1;
  }
  for (std::size_t k = 1; k < length; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) {
      return 1;
    }
  }
  return length;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = character_length(text, i);
    char escaped[8] = {};
    std::string_view piece;
    if (byte == '\n') {
      piece = "\\n";
    } else if (byte == '\r') {
      piece = "\\r";
    } else if (byte == '\t') {
      piece = "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      piece = escaped;
    } else if (length == 2 && byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      piece = escaped;
    } else {
      piece = text.substr(i, length);
    }
    if (out.size() + piece.size() > max_bytes) {
      break;
    }
    out += piece;
    i += length;
  }
  if (i < text.size()) {
    out += " ... (" + std::to_string(text.size() - i) + " more bytes)";
  }
  return out;
}

}  // namespace kstate
