// The current thread's log fields (see log_fields.hpp).
#include "core/log_fields.hpp"

namespace kstate {
namespace {
thread_local const LogFields* current = nullptr;
}  // namespace

const LogFields* current_log_fields() {
  return current;
}

ScopedLogFields::ScopedLogFields(const LogFields& fields) : previous_(current) {
  current = &fields;
}

ScopedLogFields::~ScopedLogFields() {
  current = previous_;
}

}  // namespace kstate
