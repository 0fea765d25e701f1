// The calling fiber's processor, as the server's per-processor state (metrics counters, pools)
// is indexed by it.
#pragma once

namespace weft::http {

/// Returns the calling fiber's processor index (0 off a processor: a plain thread).
unsigned processor_index();

}  // namespace weft::http
