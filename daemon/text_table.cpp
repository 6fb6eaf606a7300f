// Aligned text tables (see text_table.hpp).
#include "daemon/text_table.hpp"

#include <algorithm>

namespace kstate::daemon {

void print_table(const std::vector<std::vector<std::string>>& rows, std::ostream& out, std::string_view indent) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string text(indent);
    for (std::size_t i = 0; i < row.size(); ++i) {
      text += row[i];
      if (i + 1 < row.size()) {
        text += std::string(widths[i] - row[i].size() + 3, ' ');
      }
    }
    out << text << "\n";
  }
}

}  // namespace kstate::daemon
