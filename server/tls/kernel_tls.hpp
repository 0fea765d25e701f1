// The kernel's TLS (kTLS, the "tls" upper layer protocol of TCP): whether this kernel has it,
// probed once per process. A session asks for it with tls.ktls (tls_context.cpp); TlsStream
// attaches the layer to a socket only where this says it is there.
#pragma once

namespace weft::http {

/// Returns whether this kernel can take over TLS records (the "tls" upper layer protocol is
/// listed in /proc/sys/net/ipv4/tcp_available_ulp, after one attach that loads its module);
/// without it records are made in user space. Decided once per process.
bool kernel_tls_available();

}  // namespace weft::http
