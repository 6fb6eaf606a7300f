// Table output, what `kubectl get` asks for (Accept: application/json;as=Table;v=v1;
// g=meta.k8s.io): columns and cells as kube-apiserver's printers make them. The
// Deployment's columns are those of recording 54; the other kinds have the Name and
// Age columns every kind has. Pure functions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "tests/emulator/catalog.hpp"

namespace kstate::emulator {

struct TableColumn {
  std::string name;
  std::string type;  // "string", "integer"
  std::string format;
  std::string description;
  int priority = 0;  // 1: only in -o wide
};

std::vector<TableColumn> table_columns(const ResourceType& type);
// The row's cells, in column order.
json::Value table_cells(const ResourceType& type, const json::Value& object, std::chrono::system_clock::time_point now,
                        json::Allocator& allocator);
// The Age column's form (k8s.io/apimachinery duration.HumanDuration): 24s, 2m30s, 5m, 3h10m, 2d4h...
std::string human_duration(std::chrono::seconds age);

}  // namespace kstate::emulator
