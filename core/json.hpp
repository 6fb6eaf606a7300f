// JSON values for every layer: Kubernetes objects travel as RapidJSON documents.
// These helpers keep the RapidJSON boilerplate (allocators, writers, deep copies,
// member look-up) in one place.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kstate::json {

using Document = rapidjson::Document;
using Value = rapidjson::Value;
using Allocator = rapidjson::Document::AllocatorType;

// Parses text into a document; errors name the byte offset.
Result<Document> parse(std::string_view text);
// Compact and indented (2 spaces) serialisation.
std::string dump(const Value& value);
std::string dump_pretty(const Value& value);
// A deep copy with its own allocator.
Document copy(const Value& value);

// Member look-up that tolerates non-objects; nullptr when absent.
const Value* find(const Value& object, std::string_view key);
Value* find(Value& object, std::string_view key);
// Follows a path of member names ("metadata", "name"); nullptr when any step is absent.
const Value* find_path(const Value& object, std::initializer_list<std::string_view> path);
// The string at key, or nullopt when absent or not a string.
std::optional<std::string_view> get_string(const Value& object, std::string_view key);
std::string_view string_or(const Value* value, std::string_view fallback);

// Sets object[key] = value (copying key and value into the allocator), replacing any old member.
void set(Value& object, std::string_view key, Value value, Allocator& allocator);
void set_string(Value& object, std::string_view key, std::string_view value, Allocator& allocator);
// Returns object[key], creating an empty object there if absent.
Value& ensure_object(Value& object, std::string_view key, Allocator& allocator);
Value make_string(std::string_view text, Allocator& allocator);

}  // namespace kstate::json
