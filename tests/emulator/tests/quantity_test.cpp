// Quantities as kube-apiserver stores them (k8s.io/apimachinery resource.Quantity):
// the canonical form per suffix family, the verbatim fast path, nano rounding and
// the three parse errors. Recordings 31-33 show 0.5 -> 500m, "1000m" -> 1, 1Gi and
// "1073741824" kept; the other rows follow the same rules.
#include "tests/emulator/quantity.hpp"

#include <catch2/catch.hpp>

namespace quantity_test {

using namespace kstate::emulator;

TEST_CASE("quantities are stored in canonical form, keeping their suffix family") {
  struct Row {
    const char* given;
    const char* stored;
  };
  const Row rows[] = {
      // recordings 31-33
      {"0.5", "500m"},
      {"1000m", "1"},
      {"1Gi", "1Gi"},
      {"1073741824", "1073741824"},
      // decimal SI: the exponent goes down to a multiple of three, trailing zeros up
      {"1", "1"},
      {"100m", "100m"},
      {"1500m", "1500m"},
      {"1.5", "1500m"},
      {"2000", "2k"},
      {"1500", "1500"},
      {"1.0", "1"},
      {"10.0k", "10k"},
      {"0.001", "1m"},
      {"1000k", "1M"},
      {"-0.5", "-500m"},
      {"250M", "250M"},
      {"2.5G", "2500M"},
      // binary SI: powers of 1024, or decimal when below 1024 or fractional
      {"1024Mi", "1Gi"},
      {"1536Mi", "1536Mi"},
      {"1.5Gi", "1536Mi"},
      {"0.5Gi", "512Mi"},
      {"0.5Ki", "512"},
      {"8Mi", "8Mi"},
      {"2048Ki", "2Mi"},
      {"1.1Ki", "1126400m"},
      {"-2048Ki", "-2Mi"},
      // decimal exponent
      {"1e3", "1e3"},
      {"1E6", "1E6"},
      {"1.5e3", "1500"},
      {"10e3", "10e3"},
      {"12e-3", "12e-3"},
      {"1e-3", "1e-3"},
      {"100e-3", "100e-3"},
      {"1000e-3", "1"},
      // zero in any form
      {"0", "0"},
      {"0.0", "0"},
      {"0Gi", "0"},
      {"-0", "0"},
      // already canonical-looking text is kept as written (the parser's fast path)
      {"+1", "+1"},
      {"01", "01"},
      {"01Gi", "01Gi"},
      {" 2Gi ", "2Gi"},
      // nano is the smallest unit: smaller values round up, away from zero
      {"0.1n", "1n"},
      {"1.5n", "2n"},
      {"-0.1n", "-1n"},
      {"1n", "1n"},
  };
  for (const auto& row : rows) {
    INFO(row.given);
    auto canonical = canonical_quantity(row.given);
    REQUIRE(canonical.text);
    CHECK(*canonical.text == row.stored);
  }
}

TEST_CASE("text that is not a quantity is refused with kube-apiserver's reason") {
  struct Row {
    const char* given;
    QuantityError error;
  };
  const Row rows[] = {
      {"", QuantityError::format},      {"abc", QuantityError::format}, {"1 Gi", QuantityError::format},
      {"1Gb", QuantityError::format},   {"1e", QuantityError::suffix},  {"1Gii", QuantityError::suffix},
      {"1mi", QuantityError::suffix},   {"1x", QuantityError::format},  {"--1", QuantityError::suffix},
      {"1.2.3", QuantityError::format},
  };
  for (const auto& row : rows) {
    INFO(row.given);
    auto canonical = canonical_quantity(row.given);
    CHECK_FALSE(canonical.text);
    CHECK(canonical.error == row.error);
  }
  CHECK(quantity_error_message(QuantityError::format) ==
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
}

}  // namespace quantity_test
