#ifndef C_PINNINGLAB_OPENSSL_SHIM_H
#define C_PINNINGLAB_OPENSSL_SHIM_H
// Macros and variadic functions of OpenSSL that the Swift importer cannot see become static inline
// functions prefixed `cpl_`.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>

#endif
