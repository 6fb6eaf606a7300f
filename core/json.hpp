// JSON values for every layer: Kubernetes objects travel as RapidJSON documents.
// These helpers keep the RapidJSON boilerplate (allocators, writers, deep copies,
// member look-up) in one place.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kstate::json {

// The allocator of every kstate document (RapidJSON's Allocator concept): memory is
// handed out from chunks that start at 1 KiB and double up to 64 KiB, and is released
// all at once with the allocator. RapidJSON's own MemoryPoolAllocator starts every
// document with a 64 KiB chunk however small the object, so 1,000 manifests of about
// a kilobyte each reserved 64 MB, and touching those chunks was ~13% of manifest
// loading (page faults) and most of a first reconcile's peak RSS.
class PoolAllocator {
 public:
  static constexpr bool kNeedFree = false;  // RapidJSON never calls Free for each value

  PoolAllocator() = default;
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;
  ~PoolAllocator();

  void* Malloc(std::size_t size);
  void* Realloc(void* original, std::size_t original_size, std::size_t new_size);
  static void Free(void* /*pointer*/) {}

  // Bytes taken from the system, chunk headers included (for tests and memory figures).
  std::size_t reserved_bytes() const { return reserved_; }
  // Makes sure the chunk in use has `bytes` free, taking one of exactly that size when
  // it has not: values of a size known beforehand then take no more than they need.
  void reserve(std::size_t bytes);

  static constexpr std::size_t first_chunk_bytes = 1024;
  static constexpr std::size_t largest_chunk_bytes = 64 * 1024;

 private:
  struct Chunk {
    Chunk* previous;
    std::size_t capacity;
    std::size_t used;
  };
  Chunk* new_chunk(std::size_t capacity, Chunk* previous);
  static char* data(Chunk* chunk) { return reinterpret_cast<char*>(chunk + 1); }

  Chunk* current_ = nullptr;  // small allocations come from here
  std::size_t next_capacity_ = first_chunk_bytes;
  std::size_t reserved_ = 0;
};

using Document = rapidjson::GenericDocument<rapidjson::UTF8<>, PoolAllocator>;
using Value = Document::ValueType;
using Allocator = PoolAllocator;

// Parses text into a document; errors name the byte offset.
Result<Document> parse(std::string_view text);
// The same, its values allocated from `pool`, which must outlive the document.
Result<Document> parse(std::string_view text, Allocator& pool);
// An answer of the API server (an object, a list, a watch event), parsed without the
// objects' metadata.managedFields: the object's own, each list item's, the event
// object's (not those nested deeper, e.g. in a template). kstate never reads them, and
// they are 40-50% of the JSON of a typical object. Anything else is kept as parse does.
Result<Document> parse_api_answer(std::string_view text);
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
// The string at a path of member names, copied; empty when any step is absent or the
// value is not a string (an object's name, namespace, uid, a condition's status).
std::string string_at(const Value& object, std::initializer_list<std::string_view> path);
// metadata.resourceVersion, empty when absent (a PUT's precondition, a watch's start).
std::string resource_version(const Value& object);

// Sets object[key] = value (copying key and value into the allocator), replacing any old member.
void set(Value& object, std::string_view key, Value value, Allocator& allocator);
void set_string(Value& object, std::string_view key, std::string_view value, Allocator& allocator);
// Returns object[key], creating an empty object there if absent.
Value& ensure_object(Value& object, std::string_view key, Allocator& allocator);
Value make_string(std::string_view text, Allocator& allocator);

}  // namespace kstate::json
