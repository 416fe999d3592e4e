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

/* ---- lead (pkcs12) ---- */
static inline STACK_OF(X509) *cpl_p12_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int cpl_p12_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
static inline void cpl_p12_sk_X509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
static inline int cpl_p12_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *cpl_p12_sk_X509_value(const STACK_OF(X509) *stack, int i) { return sk_X509_value(stack, i); }
/* ---- end lead (pkcs12) ---- */

/* ---- clients ---- */
static inline long cpl_client_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline int cpl_client_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int cpl_client_ctx_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}
static inline int cpl_client_sk_X509_num(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}
static inline X509 *cpl_client_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}
static inline int cpl_client_bio_set_mem_eof_return(BIO *bio, int value) {
    return (int)BIO_set_mem_eof_return(bio, value);
}
static inline int cpl_client_tls1_2_version(void) { return TLS1_2_VERSION; }
/* ---- end clients ---- */

#endif
