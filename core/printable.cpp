// Escaping and truncation of untrusted text (see printable.hpp).
#include "core/printable.hpp"

#include <algorithm>

namespace kstate {
namespace {

// The length of the UTF-8 sequence starting at text[at] (1-4), or 0 when the bytes
// there are not valid UTF-8 (overlong forms and surrogates included).
std::size_t utf8_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) {
    return 1;
  }
  std::size_t length = 0;
  unsigned int min_second = 0x80;
  unsigned int max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    min_second = lead == 0xE0 ? 0xA0 : 0x80;
    max_second = lead == 0xED ? 0x9F : 0xBF;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    min_second = lead == 0xF0 ? 0x90 : 0x80;
    max_second = lead == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (at + length > text.size() || byte(at + 1) < min_second || byte(at + 1) > max_second) {
    return 0;
  }
  for (std::size_t i = 2; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) {
      return 0;
    }
  }
  return length;
}

// "\\x1b" for a byte, "\\u0085" for a C1 control.
void append_escape(std::string& out, std::string_view prefix, unsigned int value, int digits) {
  constexpr char hex[] = "0123456789abcdef";
  out += prefix;
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
    out += hex[(value >> shift) & 0xF];
  }
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t length = utf8_length(text, at);
    if (at + std::max<std::size_t>(length, 1) > max_bytes) {
      break;
    }
    const auto lead = static_cast<unsigned char>(text[at]);
    if (length == 0) {
      append_escape(out, "\\x", lead, 2);
      at += 1;
      continue;
    }
    if (length == 1) {
      switch (lead) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (lead < 0x20 || lead == 0x7F) {
            append_escape(out, "\\x", lead, 2);
          } else {
            out += static_cast<char>(lead);
          }
      }
      at += 1;
      continue;
    }
    // C1 controls (U+0080..U+009F: CSI among them) are two bytes, C2 80..C2 9F.
    if (length == 2 && lead == 0xC2 && static_cast<unsigned char>(text[at + 1]) < 0xA0) {
      append_escape(out, "\\u", static_cast<unsigned char>(text[at + 1]), 4);
    } else {
      out.append(text.substr(at, length));
    }
    at += length;
  }
  if (at < text.size()) {
    out += "... (" + std::to_string(text.size() - at) + " more bytes)";
  }
  return out;
}

}  // namespace kstate
