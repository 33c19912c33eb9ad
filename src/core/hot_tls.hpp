// Thread-local variables read on every allocation or op: with the initial-exec model an access
// is one instruction, not a call to __tls_get_addr (libhal is a shared library). Only for small
// trivially destructible variables: a library loaded by dlopen (hal's Python module) takes
// them from the few hundred bytes of static TLS that glibc keeps spare for this.
#pragma once

#define HAL_HOT_TLS [[gnu::tls_model("initial-exec")]]
