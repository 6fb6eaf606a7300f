// Small string rules used across folders, written once: joining a list for a message
// and trimming the white space around a value read from a file.
#pragma once

#include <string>
#include <string_view>

namespace kstate::strings {

// The items of any range of strings, in order, with `separator` between them.
template <typename Range>
std::string join(const Range& items, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) {
      out += separator;
    }
    out += std::string_view(item);
    first = false;
  }
  return out;
}

// `text` without the spaces, tabs and line breaks around it.
inline std::string_view trim(std::string_view text) {
  constexpr std::string_view white_space = " \t\r\n";
  const std::size_t begin = text.find_first_not_of(white_space);
  if (begin == std::string_view::npos) {
    return {};
  }
  return text.substr(begin, text.find_last_not_of(white_space) - begin + 1);
}

}  // namespace kstate::strings
