// The output of `kstate inventory`: the JSON document tools ingest (its schema is in
// docs/inventory.md and only grows: fields are added, never renamed or removed, while
// schemaVersion stays 1) and the text a person reads. Pure: an Inventory in, text out.
#pragma once

#include <cstdint>
#include <ostream>

#include "inventory/summary.hpp"

namespace kstate::daemon {

// What the run cost, for the text footer and the JSON's `requests`.
struct InventoryRun {
  std::uint64_t requests = 0;
};

// Written as it is made (no copy of the document in memory: 10,000 pods make ~6 MB).
void write_inventory_json(const inventory::Inventory& inventory, const InventoryRun& run, std::ostream& out);
void print_inventory_text(const inventory::Inventory& inventory, const InventoryRun& run, std::ostream& out);

}  // namespace kstate::daemon
