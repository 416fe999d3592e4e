#ifndef C_PINNINGLAB_GNUTLS_SHIM_H
#define C_PINNINGLAB_GNUTLS_SHIM_H
// GnuTLS globals and macros the Swift importer cannot use (e.g. the global `gnutls_free` function
// pointer, rejected by Swift 6) become static inline functions prefixed `cpl_`.
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <gnutls/abstract.h>

static inline void cpl_gnutls_free(void *p) { gnutls_free(p); }

#endif
