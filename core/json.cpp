// Implementation of the RapidJSON helpers in json.hpp.
#include "core/json.hpp"

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

namespace kstate::json {

namespace {

// Go's encoding/json (and so the API server) refuses deeper documents; RapidJSON's
// parser, writer, copy and comparison recurse once per level, so a deeper document
// from a server or a file would overflow the stack.
constexpr int max_nesting_depth = 10'000;

// Builds the document from the reader's events, converting numbers itself: RapidJSON
// 1.1's own conversion misreads some (0e151 -> -1.57e-235, "0.000...0" with 31 zeros
// -> 1.2e-240) and crashes on others (0.0333333333333333378E-333). Integers keep
// RapidJSON's types (int, uint, int64, uint64; larger ones become doubles); decimals
// go through strtod, which is correctly rounded (as Go's ParseFloat, so values read
// back from the API server compare equal to the manifest's).
class DocumentBuilder {
 public:
  DocumentBuilder(Document& document, bool drop_managed_fields)
      : document_(document), drop_managed_fields_(drop_managed_fields) {}

  bool Null() { return skipped_scalar() || document_.Null(); }
  bool Bool(bool value) { return skipped_scalar() || document_.Bool(value); }
  bool Int(int value) { return skipped_scalar() || document_.Int(value); }
  bool Uint(unsigned value) { return skipped_scalar() || document_.Uint(value); }
  bool Int64(std::int64_t value) { return skipped_scalar() || document_.Int64(value); }
  bool Uint64(std::uint64_t value) { return skipped_scalar() || document_.Uint64(value); }
  bool Double(double value) { return skipped_scalar() || document_.Double(value); }
  bool String(const char* text, rapidjson::SizeType length, bool copy) {
    return skipped_scalar() || document_.String(text, length, copy);
  }
  bool Key(const char* text, rapidjson::SizeType length, bool copy) {
    if (skip_depth_ > 0) {
      return true;
    }
    std::string_view key(text, length);
    next_role_ = Role::other;
    if (!frames_.empty()) {
      Frame& frame = frames_.back();
      if (frame.role == Role::metadata && key == "managedFields") {
        ++frame.dropped_members;
        skip_next_value_ = true;
        return true;
      }
      if (key == "metadata" &&
          (frame.role == Role::root || frame.role == Role::item || frame.role == Role::event_object)) {
        next_role_ = Role::metadata;
      } else if (frame.role == Role::root && key == "items") {
        next_role_ = Role::items;
      } else if (frame.role == Role::root && key == "object") {
        next_role_ = Role::event_object;
      }
    }
    return document_.Key(text, length, copy);
  }
  // RapidJSON's reader recurses once per level: stopping at the limit bounds the stack.
  bool StartObject() {
    if (!enter()) {
      return false;
    }
    if (skipping_container()) {
      return true;
    }
    push_frame(true);
    return document_.StartObject();
  }
  bool EndObject(rapidjson::SizeType members) {
    --depth_;
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    if (drop_managed_fields_) {
      members -= frames_.back().dropped_members;
      frames_.pop_back();
    }
    return document_.EndObject(members);
  }
  bool StartArray() {
    if (!enter()) {
      return false;
    }
    if (skipping_container()) {
      return true;
    }
    push_frame(false);
    return document_.StartArray();
  }
  bool EndArray(rapidjson::SizeType elements) {
    --depth_;
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    if (drop_managed_fields_) {
      frames_.pop_back();
    }
    return document_.EndArray(elements);
  }

  bool RawNumber(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    if (skipped_scalar()) {
      return true;
    }
    std::string number(text, length);
    if (number.find_first_of(".eE") == std::string::npos) {
      const char* end = number.data() + number.size();
      if (number[0] == '-') {
        std::int64_t value = 0;
        if (auto [ptr, ec] = std::from_chars(number.data(), end, value); ec == std::errc() && ptr == end) {
          return document_.Int64(value);
        }
      } else {
        std::uint64_t value = 0;
        if (auto [ptr, ec] = std::from_chars(number.data(), end, value); ec == std::errc() && ptr == end) {
          return document_.Uint64(value);
        }
      }
    }
    double value = std::strtod(number.c_str(), nullptr);
    if (std::isinf(value)) {
      out_of_range_ = true;  // as RapidJSON and Go: a number beyond double is an error
      return false;
    }
    return document_.Double(value);
  }

  bool out_of_range() const { return out_of_range_; }
  bool too_deep() const { return too_deep_; }

 private:
  // Where an object or array sits, as far as dropping managedFields needs to know: the
  // document itself, a list's items, a watch event's object, and their metadata.
  enum class Role : std::uint8_t { root, items, item, event_object, metadata, other };
  struct Frame {
    Role role;
    rapidjson::SizeType dropped_members = 0;
  };

  bool enter() {
    too_deep_ = ++depth_ > max_nesting_depth;
    return !too_deep_;
  }

  // A scalar that is the value of a dropped member, or inside one.
  bool skipped_scalar() {
    if (skip_depth_ > 0) {
      return true;
    }
    if (skip_next_value_) {
      skip_next_value_ = false;
      return true;
    }
    next_role_ = Role::other;
    return false;
  }

  // An object or array that starts a dropped member's value, or is inside one.
  bool skipping_container() {
    if (skip_depth_ > 0 || skip_next_value_) {
      skip_next_value_ = false;
      ++skip_depth_;
      return true;
    }
    return false;
  }

  void push_frame(bool is_object) {
    if (!drop_managed_fields_) {
      return;
    }
    Role role = next_role_;
    if (frames_.empty()) {
      role = is_object ? Role::root : Role::other;
    } else if (frames_.back().role == Role::items) {
      role = is_object ? Role::item : Role::other;
    } else if ((role == Role::metadata || role == Role::event_object) && !is_object) {
      role = Role::other;
    } else if (role == Role::items && is_object) {
      role = Role::other;
    }
    frames_.push_back(Frame{role});
    next_role_ = Role::other;
  }

  Document& document_;
  const bool drop_managed_fields_;
  std::vector<Frame> frames_;  // the open objects and arrays, when dropping managedFields
  Role next_role_ = Role::other;
  bool skip_next_value_ = false;
  int skip_depth_ = 0;  // open objects and arrays inside a dropped member's value
  int depth_ = 0;
  bool out_of_range_ = false;
  bool too_deep_ = false;
};

Result<Document> parse_into(Document doc, std::string_view text, bool drop_managed_fields = false) {
  rapidjson::Reader reader;
  rapidjson::MemoryStream bytes(text.data(), text.size());
  rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> stream(bytes);
  DocumentBuilder builder(doc, drop_managed_fields);
  auto generate = [&](Document&) {
    return !reader.Parse<rapidjson::kParseNumbersAsStringsFlag>(stream, builder).IsError();
  };
  doc.Populate(generate);
  if (builder.too_deep()) {
    return Error(ErrorKind::invalid_input,
                 "invalid JSON: nested deeper than " + std::to_string(max_nesting_depth) + " levels");
  }
  if (reader.HasParseError()) {
    std::string what = builder.out_of_range() ? "Number too big to be stored in double."
                                              : rapidjson::GetParseError_En(reader.GetParseErrorCode());
    return Error(ErrorKind::invalid_input,
                 "invalid JSON at offset " + std::to_string(reader.GetErrorOffset()) + ": " + what);
  }
  return doc;
}

}  // namespace

Result<Document> parse(std::string_view text) {
  return parse_into(Document(), text);
}

Result<Document> parse(std::string_view text, Allocator& pool) {
  return parse_into(Document(&pool), text);
}

Result<Document> parse_api_answer(std::string_view text) {
  return parse_into(Document(), text, /*drop_managed_fields=*/true);
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

PoolAllocator::~PoolAllocator() {
  while (current_ != nullptr) {
    Chunk* previous = current_->previous;
    std::free(current_);
    current_ = previous;
  }
}

PoolAllocator::Chunk* PoolAllocator::new_chunk(std::size_t capacity, Chunk* previous) {
  auto* chunk = static_cast<Chunk*>(std::malloc(sizeof(Chunk) + capacity));
  if (chunk == nullptr) {
    throw std::bad_alloc();
  }
  chunk->previous = previous;
  chunk->capacity = capacity;
  chunk->used = 0;
  reserved_ += sizeof(Chunk) + capacity;
  return chunk;
}

void PoolAllocator::reserve(std::size_t bytes) {
  if (current_ == nullptr || current_->capacity - current_->used < bytes) {
    current_ = new_chunk(bytes, current_);
  }
}

void* PoolAllocator::Malloc(std::size_t size) {
  if (size == 0) {
    return nullptr;
  }
  size = (size + 7) & ~std::size_t{7};  // RapidJSON stores pointers and doubles: 8-byte alignment
  if (current_ != nullptr && current_->capacity - current_->used >= size) {
    void* block = data(current_) + current_->used;
    current_->used += size;
    return block;
  }
  if (size > next_capacity_ && current_ != nullptr) {
    // A large block (a long string, a big array) gets a chunk of its own, linked
    // behind the current one so that the current chunk's free space is not lost.
    Chunk* own = new_chunk(size, current_->previous);
    own->used = size;
    current_->previous = own;
    return data(own);
  }
  current_ = new_chunk(std::max(size, next_capacity_), current_);
  next_capacity_ = std::min(next_capacity_ * 2, largest_chunk_bytes);
  current_->used = size;
  return data(current_);
}

void* PoolAllocator::Realloc(void* original, std::size_t original_size, std::size_t new_size) {
  if (original == nullptr) {
    return Malloc(new_size);
  }
  if (new_size == 0) {
    return nullptr;
  }
  original_size = (original_size + 7) & ~std::size_t{7};
  new_size = (new_size + 7) & ~std::size_t{7};
  if (original_size >= new_size) {
    return original;
  }
  // The last block of the current chunk grows in place when there is room (RapidJSON
  // grows arrays and objects this way while parsing).
  if (current_ != nullptr && data(current_) + current_->used - original_size == original &&
      current_->capacity - current_->used >= new_size - original_size) {
    current_->used += new_size - original_size;
    return original;
  }
  void* moved = Malloc(new_size);
  std::memcpy(moved, original, original_size);
  return moved;
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

std::string string_at(const Value& object, std::initializer_list<std::string_view> path) {
  return std::string(string_or(find_path(object, path), ""));
}

std::string resource_version(const Value& object) {
  return string_at(object, {"metadata", "resourceVersion"});
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
