// libFuzzer target for the inventory decoder (states/inventory.hpp): the JSON kept in the
// ApplySet parent Secret, which anyone allowed to edit that Secret can change, and which
// decides what prune may delete. Besides the sanitizers' findings it checks the decoder's
// promises: a decoded inventory is sorted with one entry per key, every recorded entry has
// a kind, version, name and UID, every pending one a kind, version and name; encoding it
// and decoding that gives the same inventory, and encoding is stable.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "states/inventory.hpp"

namespace {

void require(bool condition) {
  if (!condition) {
    std::abort();
  }
}

void check_entries(const std::vector<kstate::states::InventoryEntry>& entries, bool recorded) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& entry = entries[i];
    require(!entry.kind.empty() && !entry.version.empty() && !entry.name.empty());
    require(!recorded || !entry.uid.empty());
    require(!recorded || (!entry.since && !entry.missing_since));
    require(i == 0 || entries[i - 1].key_fields() < entry.key_fields());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = kstate::states::decode_inventory(text);
  if (!decoded.ok()) {
    require(decoded.error().kind == kstate::ErrorKind::invalid_input);
    require(!decoded.error().message.empty());
    return 0;
  }
  check_entries(decoded->entries, true);
  check_entries(decoded->pending, false);
  const std::string encoded = kstate::states::encode_inventory(*decoded);
  auto again = kstate::states::decode_inventory(encoded);
  require(again.ok());
  require(*again == *decoded);
  require(kstate::states::encode_inventory(*again) == encoded);
  return 0;
}
