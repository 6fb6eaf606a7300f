// Aligned text tables as kubectl prints them: each column as wide as its widest cell,
// three spaces between columns, the last column not padded. Used by `kstate discover`
// and `kstate inventory`.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace kstate::daemon {

// `rows[0]` is usually the header. Every line starts with `indent`.
void print_table(const std::vector<std::vector<std::string>>& rows, std::ostream& out, std::string_view indent = {});

}  // namespace kstate::daemon
