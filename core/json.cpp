// Implementation of the RapidJSON helpers in json.hpp.
#include "core/json.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace kstate::json {

Result<Document> parse(std::string_view text) {
  Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(text.data(), text.size());
  if (doc.HasParseError()) {
    return Error(ErrorKind::invalid_input, std::string("invalid JSON at offset ") +
                                               std::to_string(doc.GetErrorOffset()) + ": " +
                                               rapidjson::GetParseError_En(doc.GetParseError()));
  }
  return doc;
}

std::string dump(const Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

std::string dump_pretty(const Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  value.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

Document copy(const Value& value) {
  Document doc;
  doc.CopyFrom(value, doc.GetAllocator());
  return doc;
}

const Value* find(const Value& object, std::string_view key) {
  if (!object.IsObject()) {
    return nullptr;
  }
  auto it = object.FindMember(Value(rapidjson::StringRef(key.data(), key.size())));
  return it == object.MemberEnd() ? nullptr : &it->value;
}

Value* find(Value& object, std::string_view key) {
  if (!object.IsObject()) {
    return nullptr;
  }
  auto it = object.FindMember(Value(rapidjson::StringRef(key.data(), key.size())));
  return it == object.MemberEnd() ? nullptr : &it->value;
}

const Value* find_path(const Value& object, std::initializer_list<std::string_view> path) {
  const Value* current = &object;
  for (auto key : path) {
    current = find(*current, key);
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

std::optional<std::string_view> get_string(const Value& object, std::string_view key) {
  const Value* v = find(object, key);
  if (v == nullptr || !v->IsString()) {
    return std::nullopt;
  }
  return std::string_view(v->GetString(), v->GetStringLength());
}

std::string_view string_or(const Value* value, std::string_view fallback) {
  if (value == nullptr || !value->IsString()) {
    return fallback;
  }
  return {value->GetString(), value->GetStringLength()};
}

Value make_string(std::string_view text, Allocator& allocator) {
  return Value(text.data(), static_cast<rapidjson::SizeType>(text.size()), allocator);
}

void set(Value& object, std::string_view key, Value value, Allocator& allocator) {
  if (Value* existing = find(object, key)) {
    *existing = std::move(value);
    return;
  }
  object.AddMember(make_string(key, allocator), value, allocator);
}

void set_string(Value& object, std::string_view key, std::string_view value, Allocator& allocator) {
  set(object, key, make_string(value, allocator), allocator);
}

Value& ensure_object(Value& object, std::string_view key, Allocator& allocator) {
  if (Value* existing = find(object, key)) {
    if (!existing->IsObject()) {
      existing->SetObject();
    }
    return *existing;
  }
  object.AddMember(make_string(key, allocator), Value(rapidjson::kObjectType), allocator);
  return *find(object, key);
}

}  // namespace kstate::json
