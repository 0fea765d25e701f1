#include "server/core/processor.hpp"

#include "runtime/scheduler.hpp"

namespace weft::http {

unsigned processor_index() {
  rt::Processor* p = rt::Processor::current();
  return p ? p->index() : 0;
}

}  // namespace weft::http
