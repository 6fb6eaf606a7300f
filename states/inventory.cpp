// Encoding, decoding and merging of kstate's inventory (see inventory.hpp). Decoding is
// strict on purpose: a half-readable inventory is treated as corrupt, because guessing
// which entries are missing is exactly how a pruner ends up deleting too much.
#include "states/inventory.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "core/credentials.hpp"
#include "core/encoding.hpp"

namespace kstate::states {

namespace {

bool by_key(const InventoryEntry& a, const InventoryEntry& b) {
  return a.key_fields() < b.key_fields();
}

void sort_and_deduplicate(std::vector<InventoryEntry>& entries) {
  // An inventory kstate wrote is already in order, one entry per key.
  const auto out_of_order = [](const InventoryEntry& a, const InventoryEntry& b) { return !by_key(a, b); };
  if (std::adjacent_find(entries.begin(), entries.end(), out_of_order) == entries.end()) {
    return;
  }
  // stable: of two entries with one key, the later one (appended last) wins.
  std::stable_sort(entries.begin(), entries.end(), by_key);
  std::vector<InventoryEntry> unique;
  unique.reserve(entries.size());
  for (auto& entry : entries) {
    if (!unique.empty() && unique.back().key_fields() == entry.key_fields()) {
      unique.back() = std::move(entry);
    } else {
      unique.push_back(std::move(entry));
    }
  }
  entries = std::move(unique);
}

}  // namespace

std::string format_time(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(time));
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text, length);
}

std::string ObjectKey::to_string() const {
  std::string text = group.empty() ? kind : kind + "." + group;
  if (!ns.empty())
    text += "/" + ns;
  return text + "/" + name;
}

namespace {

auto fields_of(const ObjectKey& key) {
  return std::tie(key.group, key.kind, key.ns, key.name);
}

}  // namespace

bool Inventory::is_pending(const ObjectKey& key) const {
  return std::binary_search(pending.begin(), pending.end(), key, [](const auto& a, const auto& b) {
    if constexpr (std::is_same_v<std::decay_t<decltype(a)>, ObjectKey>) {
      return fields_of(a) < b.key_fields();
    } else {
      return a.key_fields() < fields_of(b);
    }
  });
}

const InventoryEntry* Inventory::find(const ObjectKey& key) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), key, [](const InventoryEntry& entry, const ObjectKey& k) {
    return entry.key_fields() < fields_of(k);
  });
  if (it == entries.end() || it->key_fields() != fields_of(key))
    return nullptr;
  return &*it;
}

namespace {

// The fields entries of one group share in format 2; names, UIDs and sources are listed
// once per entry. Ordered as the entries are (group, kind, namespace first), so groups
// are written in a stable order.
struct GroupKey {
  std::string group, kind, ns, version, since, missing_since;
  friend auto operator<=>(const GroupKey&, const GroupKey&) = default;
};

// The manifest files entries were declared in, written once each: relative to the
// directory they all share ("sourceRoot"), and referred to by their index. With one
// file per object (10,000 files) the paths would otherwise be most of the inventory.
struct SourceTable {
  std::string root;
  std::vector<std::string> relative;         // sorted
  std::map<std::string, std::size_t> index;  // full path -> index in relative

  explicit SourceTable(const std::vector<const std::vector<InventoryEntry>*>& lists) {
    std::set<std::string> paths;
    for (const auto* list : lists) {
      for (const InventoryEntry& entry : *list) {
        paths.insert(entry.source);
      }
    }
    if (!paths.empty()) {
      // The longest common prefix of the first and last (sorted) paths is every path's,
      // cut after its last '/' so that a name is never split.
      const std::string& first = *paths.begin();
      const std::string& last = *paths.rbegin();
      std::size_t common = 0;
      while (common < first.size() && common < last.size() && first[common] == last[common]) {
        ++common;
      }
      const std::size_t slash = first.rfind('/', common == 0 ? 0 : common - 1);
      root = common == 0 || slash == std::string::npos ? std::string() : first.substr(0, slash + 1);
    }
    for (const std::string& path : paths) {
      index.emplace(path, relative.size());
      relative.push_back(path.substr(root.size()));
    }
  }
};

void write_groups(rapidjson::Writer<rapidjson::StringBuffer>& writer, const std::vector<InventoryEntry>& entries,
                  bool with_uids, const SourceTable& sources) {
  std::map<GroupKey, std::vector<const InventoryEntry*>> groups;
  for (const InventoryEntry& entry : entries) {
    GroupKey key{entry.group,
                 entry.kind,
                 entry.ns,
                 entry.version,
                 entry.since ? format_time(*entry.since) : std::string(),
                 entry.missing_since ? format_time(*entry.missing_since) : std::string()};
    groups[std::move(key)].push_back(&entry);
  }
  const auto string = [&](const std::string& value) {
    writer.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
  };
  const auto field = [&](const char* name, const std::string& value) {
    writer.Key(name);
    string(value);
  };
  writer.StartArray();
  for (const auto& [key, members] : groups) {
    writer.StartObject();
    field("group", key.group);
    field("version", key.version);
    field("kind", key.kind);
    field("namespace", key.ns);
    if (!key.since.empty()) {
      field("since", key.since);
    }
    if (!key.missing_since.empty()) {
      field("missingSince", key.missing_since);
    }
    writer.Key("names");
    writer.StartArray();
    for (const InventoryEntry* entry : members) {
      string(entry->name);
    }
    writer.EndArray();
    if (with_uids) {
      writer.Key("uids");
      writer.StartArray();
      for (const InventoryEntry* entry : members) {
        string(entry->uid);
      }
      writer.EndArray();
    }
    writer.Key("sources");
    writer.StartArray();
    for (const InventoryEntry* entry : members) {
      writer.Uint64(sources.index.at(entry->source));
    }
    writer.EndArray();
    writer.EndObject();
  }
  writer.EndArray();
}

// Times of pending entries: optional (older inventories have none), but when present
// they must be readable, or the entry's grace period would be a guess.
Status decode_times(const json::Value& value, const std::string& where, InventoryEntry& entry) {
  const std::pair<const char*, std::optional<std::chrono::system_clock::time_point>*> times[] = {
      {"since", &entry.since}, {"missingSince", &entry.missing_since}};
  for (const auto& [name, target] : times) {
    if (json::find(value, name) == nullptr)
      continue;
    auto text = json::get_string(value, name);
    auto time = text ? parse_rfc3339(*text) : std::nullopt;
    if (!time)
      return Error(ErrorKind::invalid_input, "inventory " + where + " has no RFC 3339 time in '" + name + "'");
    *target = *time;
  }
  return ok_status();
}

// Format 1: one object per entry with all its fields. Pending entries have no UID yet;
// recorded ones must have one.
Status decode_entries_v1(const json::Value& list, const char* what, bool need_uid, std::vector<InventoryEntry>& out) {
  out.reserve(list.Size());
  std::size_t index = 0;
  for (const json::Value& value : list.GetArray()) {
    InventoryEntry entry;
    struct Field {
      const char* name;
      std::string* target;
      bool required;
    };
    const Field fields[] = {
        {"group", &entry.group, true},    {"version", &entry.version, true}, {"kind", &entry.kind, true},
        {"namespace", &entry.ns, true},   {"name", &entry.name, true},       {"uid", &entry.uid, need_uid},
        {"source", &entry.source, false},
    };
    const std::string where = std::string(what) + " " + std::to_string(index);
    for (const Field& field : fields) {
      auto text = value.IsObject() ? json::get_string(value, field.name) : std::nullopt;
      if (!text) {
        if (!field.required && value.IsObject() && json::find(value, field.name) == nullptr)
          continue;
        return Error(ErrorKind::invalid_input, "inventory " + where + " has no string field '" + field.name + "'");
      }
      *field.target = std::string(*text);
    }
    if (!need_uid) {
      if (auto times = decode_times(value, where, entry); !times.ok())
        return times;
      entry.uid.clear();  // a pending entry has no object yet, so no UID (kstate wrote "")
    }
    if (entry.kind.empty() || entry.name.empty() || entry.version.empty() || (need_uid && entry.uid.empty()))
      return Error(
          ErrorKind::invalid_input,
          "inventory " + where + (need_uid ? " lacks a kind, version, name or uid" : " lacks a kind, version or name"));
    out.push_back(std::move(entry));
    ++index;
  }
  return ok_status();
}

// Format 2: groups of entries that share group, version, kind and namespace (and, for
// pending entries, their times), each with its names, their UIDs when recorded, and the
// index of each one's file in the inventory's source table.
Status decode_groups_v2(const json::Value& list, const char* what, bool need_uid,
                        const std::vector<std::string>& sources, std::vector<InventoryEntry>& out) {
  std::size_t index = 0;
  for (const json::Value& value : list.GetArray()) {
    const std::string where = std::string(what) + " group " + std::to_string(index++);
    if (!value.IsObject())
      return Error(ErrorKind::invalid_input, "inventory " + where + " is not an object");
    InventoryEntry shared;
    struct Field {
      const char* name;
      std::string* target;
    };
    const Field fields[] = {
        {"group", &shared.group}, {"version", &shared.version}, {"kind", &shared.kind}, {"namespace", &shared.ns}};
    for (const Field& field : fields) {
      auto text = json::get_string(value, field.name);
      if (!text)
        return Error(ErrorKind::invalid_input, "inventory " + where + " has no string field '" + field.name + "'");
      *field.target = std::string(*text);
    }
    if (shared.kind.empty() || shared.version.empty())
      return Error(ErrorKind::invalid_input, "inventory " + where + " lacks a kind or version");
    if (!need_uid) {
      if (auto times = decode_times(value, where, shared); !times.ok())
        return times;
    }
    const json::Value* names = json::find(value, "names");
    const json::Value* uids = json::find(value, "uids");
    const json::Value* files = json::find(value, "sources");
    if (names == nullptr || !names->IsArray())
      return Error(ErrorKind::invalid_input, "inventory " + where + " has no names array");
    if (need_uid && (uids == nullptr || !uids->IsArray() || uids->Size() != names->Size()))
      return Error(ErrorKind::invalid_input, "inventory " + where + " has no uids array as long as its names");
    if (files != nullptr && (!files->IsArray() || files->Size() != names->Size()))
      return Error(ErrorKind::invalid_input, "inventory " + where + " has a sources array not as long as its names");
    for (rapidjson::SizeType i = 0; i < names->Size(); ++i) {
      const json::Value& name = (*names)[i];
      const json::Value* uid = need_uid ? &(*uids)[i] : nullptr;
      const json::Value* file = files != nullptr ? &(*files)[i] : nullptr;
      const std::string entry_where = where + " entry " + std::to_string(i);
      if (!name.IsString() || name.GetStringLength() == 0 ||
          (uid != nullptr && (!uid->IsString() || uid->GetStringLength() == 0)))
        return Error(ErrorKind::invalid_input,
                     "inventory " + entry_where + (need_uid ? " lacks a name or uid" : " lacks a name"));
      if (file != nullptr && (!file->IsUint64() || file->GetUint64() >= sources.size()))
        return Error(ErrorKind::invalid_input, "inventory " + entry_where + " has no source in the sources table");
      InventoryEntry entry = shared;
      entry.name.assign(name.GetString(), name.GetStringLength());
      if (uid != nullptr) {
        entry.uid.assign(uid->GetString(), uid->GetStringLength());
      }
      if (file != nullptr) {
        entry.source = sources[file->GetUint64()];
      }
      out.push_back(std::move(entry));
    }
  }
  return ok_status();
}

// Format 2's source table: "sourceRoot" joined to each of "sources".
Result<std::vector<std::string>> decode_sources(const json::Value& root) {
  std::vector<std::string> sources;
  const json::Value* table = json::find(root, "sources");
  if (table == nullptr)
    return sources;
  const json::Value* prefix = json::find(root, "sourceRoot");
  if (!table->IsArray() || (prefix != nullptr && !prefix->IsString()))
    return Error(ErrorKind::invalid_input, "inventory's sources are not an array of strings with a string root");
  const std::string common = prefix != nullptr ? std::string(prefix->GetString(), prefix->GetStringLength()) : "";
  sources.reserve(table->Size());
  for (const json::Value& path : table->GetArray()) {
    if (!path.IsString())
      return Error(ErrorKind::invalid_input, "inventory's sources are not an array of strings with a string root");
    sources.push_back(common + std::string(path.GetString(), path.GetStringLength()));
  }
  return sources;
}

}  // namespace

std::string encode_inventory(const Inventory& inventory) {
  std::vector<InventoryEntry> entries = inventory.entries;
  sort_and_deduplicate(entries);
  std::vector<InventoryEntry> pending = inventory.pending;
  sort_and_deduplicate(pending);
  const SourceTable sources({&entries, &pending});
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("version");
  writer.Int(inventory_format_version);
  writer.Key("sourceRoot");
  writer.String(sources.root.c_str(), static_cast<rapidjson::SizeType>(sources.root.size()));
  writer.Key("sources");
  writer.StartArray();
  for (const std::string& path : sources.relative) {
    writer.String(path.c_str(), static_cast<rapidjson::SizeType>(path.size()));
  }
  writer.EndArray();
  writer.Key("entries");
  write_groups(writer, entries, true, sources);
  if (!pending.empty()) {
    writer.Key("pending");
    write_groups(writer, pending, false, sources);
  }
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

Result<Inventory> decode_inventory(std::string_view json_text) {
  auto document = json::parse(json_text);
  if (!document)
    return Error(ErrorKind::invalid_input, "inventory is not JSON: " + document.error().message);
  const json::Value& root = *document;
  const json::Value* version = json::find(root, "version");
  if (version == nullptr || !version->IsInt() || version->GetInt() < 1 || version->GetInt() > inventory_format_version)
    return Error(ErrorKind::invalid_input, "inventory has no or an unknown format version");
  std::vector<std::string> sources;
  if (version->GetInt() == 2) {
    auto table = decode_sources(root);
    if (!table)
      return table.error();
    sources = std::move(table).value();
  }
  const auto decode = [&](const json::Value& list, const char* what, bool need_uid, std::vector<InventoryEntry>& out) {
    return version->GetInt() == 1 ? decode_entries_v1(list, what, need_uid, out)
                                  : decode_groups_v2(list, what, need_uid, sources, out);
  };
  const json::Value* entries = json::find(root, "entries");
  if (entries == nullptr || !entries->IsArray())
    return Error(ErrorKind::invalid_input, "inventory has no entries array");
  Inventory inventory;
  if (auto decoded = decode(*entries, "entry", true, inventory.entries); !decoded.ok())
    return decoded.error();
  if (const json::Value* pending = json::find(root, "pending"); pending != nullptr) {
    if (!pending->IsArray())
      return Error(ErrorKind::invalid_input, "inventory's pending entries are not an array");
    if (auto decoded = decode(*pending, "pending entry", false, inventory.pending); !decoded.ok())
      return decoded.error();
    sort_and_deduplicate(inventory.pending);
  }
  sort_and_deduplicate(inventory.entries);
  return inventory;
}

LoadedInventory load_inventory(const json::Value* parent_secret) {
  LoadedInventory loaded;
  if (parent_secret == nullptr)
    return loaded;
  const json::Value* data = json::find(*parent_secret, "data");
  const json::Value* value = data == nullptr ? nullptr : json::find(*data, inventory_data_key);
  if (value == nullptr)
    return loaded;
  loaded.status = InventoryStatus::corrupt;
  if (!value->IsString()) {
    loaded.problem = "data." + std::string(inventory_data_key) + " is not a string";
    return loaded;
  }
  auto text = encoding::base64_decode(std::string_view(value->GetString(), value->GetStringLength()));
  if (!text) {
    loaded.problem = "data." + std::string(inventory_data_key) + " is not valid base64";
    return loaded;
  }
  auto inventory = decode_inventory(*text);
  if (!inventory) {
    loaded.problem = inventory.error().message;
    return loaded;
  }
  loaded.status = InventoryStatus::ok;
  loaded.inventory = std::move(inventory).value();
  return loaded;
}

Inventory merge_inventory(const Inventory& previous, const std::vector<InventoryEntry>& applied,
                          const std::vector<ObjectKey>& removed) {
  // An apply that returned no UID (dry run) proves nothing and changes nothing. Of two
  // applies of one key, the later wins (stable sort, then the last of each run).
  std::vector<const InventoryEntry*> recorded;
  recorded.reserve(applied.size());
  for (const InventoryEntry& entry : applied) {
    if (!entry.uid.empty()) {
      recorded.push_back(&entry);
    }
  }
  std::stable_sort(recorded.begin(), recorded.end(),
                   [](const InventoryEntry* a, const InventoryEntry* b) { return by_key(*a, *b); });
  const std::set<ObjectKey> removed_keys(removed.begin(), removed.end());
  const auto kept = [&removed_keys](const InventoryEntry& entry) {
    return removed_keys.empty() || removed_keys.count(entry.key()) == 0;
  };

  // Decoded and merged inventories are sorted with one entry per key; any other is
  // put in that order first.
  std::vector<InventoryEntry> sorted_previous;
  const std::vector<InventoryEntry>* previous_entries = &previous.entries;
  const auto out_of_order = [](const InventoryEntry& a, const InventoryEntry& b) { return !by_key(a, b); };
  if (std::adjacent_find(previous.entries.begin(), previous.entries.end(), out_of_order) != previous.entries.end()) {
    sorted_previous = previous.entries;
    sort_and_deduplicate(sorted_previous);
    previous_entries = &sorted_previous;
  }

  // One pass over both sorted lists. An entry applied in this cycle replaces the
  // previous one and carries no pending times; one deleted and re-created in this
  // cycle is recorded again (removals apply to the previous entries only).
  Inventory result;
  result.entries.reserve(previous_entries->size() + recorded.size());
  auto old_entry = previous_entries->begin();
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    if (i + 1 < recorded.size() && recorded[i + 1]->key_fields() == recorded[i]->key_fields()) {
      continue;
    }
    const InventoryEntry& entry = *recorded[i];
    for (; old_entry != previous_entries->end() && by_key(*old_entry, entry); ++old_entry) {
      if (kept(*old_entry)) {
        result.entries.push_back(*old_entry);
      }
    }
    if (old_entry != previous_entries->end() && old_entry->key_fields() == entry.key_fields()) {
      ++old_entry;
    }
    InventoryEntry& added = result.entries.emplace_back(entry);
    added.since.reset();
    added.missing_since.reset();
  }
  for (; old_entry != previous_entries->end(); ++old_entry) {
    if (kept(*old_entry)) {
      result.entries.push_back(*old_entry);
    }
  }
  return result;
}

}  // namespace kstate::states
