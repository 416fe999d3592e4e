#ifndef C_PINNINGLAB_OPENSSL_SHIM_H
#define C_PINNINGLAB_OPENSSL_SHIM_H
// Macros and variadic functions of OpenSSL that the Swift importer cannot see become static inline
// functions prefixed `cpl_`.
#include <string.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/ocsp.h>

/* ---- lead (pkcs12) ---- */
static inline STACK_OF(X509) *cpl_p12_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int cpl_p12_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
static inline void cpl_p12_sk_X509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
static inline int cpl_p12_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *cpl_p12_sk_X509_value(const STACK_OF(X509) *stack, int i) { return sk_X509_value(stack, i); }
/* ---- end lead (pkcs12) ---- */

/* ---- clients ---- */
#include <openssl/ct.h>
/* ct: the SCTs OpenSSL collected for a connection (a STACK_OF(SCT) it owns). */
static inline int cpl_ct_sk_SCT_num(const STACK_OF(SCT) *stack) { return sk_SCT_num(stack); }
static inline SCT *cpl_ct_sk_SCT_value(const STACK_OF(SCT) *stack, int i) { return sk_SCT_value(stack, i); }
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
/* OCSP stapling, client side: ask for a staple, and judge the one that came. */
static inline int cpl_client_request_ocsp_staple(SSL *ssl) {
    return (int)SSL_set_tlsext_status_type(ssl, TLSEXT_STATUSTYPE_ocsp);
}
static inline void cpl_client_ctx_set_status_callback(SSL_CTX *ctx, int (*cb)(SSL *, void *)) {
    SSL_CTX_set_tlsext_status_cb(ctx, cb);
}
/* The revocation decision itself is Swift (PinningLabReferenceClients/RevocationDecision.swift); these are the
   macros and STACK_OF accessors it needs. The staple as OpenSSL holds it (the SSL owns the bytes): its length, or
   -1 when none came. */
static inline long cpl_client_ocsp_staple(SSL *ssl, const unsigned char **der) {
    return SSL_get_tlsext_status_ocsp_resp(ssl, der);
}
static inline int cpl_client_sk_string_num(const STACK_OF(OPENSSL_STRING) *stack) {
    return sk_OPENSSL_STRING_num(stack);
}
static inline const char *cpl_client_sk_string_value(const STACK_OF(OPENSSL_STRING) *stack, int index) {
    return sk_OPENSSL_STRING_value(stack, index);
}
static inline int cpl_client_sk_DIST_POINT_num(const STACK_OF(DIST_POINT) *stack) {
    return sk_DIST_POINT_num(stack);
}
static inline DIST_POINT *cpl_client_sk_DIST_POINT_value(const STACK_OF(DIST_POINT) *stack, int index) {
    return sk_DIST_POINT_value(stack, index);
}
static inline int cpl_client_sk_GENERAL_NAME_num(const STACK_OF(GENERAL_NAME) *stack) {
    return sk_GENERAL_NAME_num(stack);
}
static inline GENERAL_NAME *cpl_client_sk_GENERAL_NAME_value(const STACK_OF(GENERAL_NAME) *stack, int index) {
    return sk_GENERAL_NAME_value(stack, index);
}
/* ---- end clients ---- */

/* ---- engines (server) ---- */
/* Server defaults of the fixture engine: exactly the configured chain (no auto-chain from a store), partial and
   moving writes for non-blocking I/O, no session cache and no tickets (every connection is a full handshake, so a
   client verifies the chain every time). */
static inline void cpl_srv_ctx_defaults(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN | SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 0);
}
static inline int cpl_srv_ctx_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}
static inline int cpl_srv_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int cpl_srv_ctx_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}
/* Adds a reference to cert (the caller keeps its own). */
static inline int cpl_srv_ctx_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}
static inline void cpl_srv_ctx_set_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *)) {
    SSL_CTX_set_tlsext_servername_callback(ctx, cb);
}
/* OCSP stapling: the status callback runs when a client sends status_request; it hands OpenSSL a copy of the
   response (SSL_set_tlsext_status_ocsp_resp takes ownership of an OPENSSL_malloc'd buffer). */
static inline void cpl_srv_ctx_set_status_callback(SSL_CTX *ctx, int (*cb)(SSL *, void *)) {
    SSL_CTX_set_tlsext_status_cb(ctx, cb);
}
static inline int cpl_srv_set_ocsp_response(SSL *ssl, const unsigned char *der, size_t len) {
    unsigned char *copy = OPENSSL_malloc(len);
    if (copy == NULL) return 0;
    memcpy(copy, der, len);
    if (SSL_set_tlsext_status_ocsp_resp(ssl, copy, (long)len) != 1) { OPENSSL_free(copy); return 0; }
    return 1;
}
/// A fresh ex_data index for SSL objects (SSL_get_ex_new_index is a macro), so that the server session and the
/// client's verify state never share a slot.
static inline int cpl_ssl_ex_new_index(void) { return SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL); }
static inline int cpl_srv_err_reason(unsigned long e) { return ERR_GET_REASON(e); }
static inline int cpl_srv_err_is_sys(unsigned long e) { return ERR_SYSTEM_ERROR(e) ? 1 : 0; }
static inline int cpl_srv_reason_unexpected_eof(void) { return SSL_R_UNEXPECTED_EOF_WHILE_READING; }
static inline int cpl_srv_verify_peer(int required) {
    return SSL_VERIFY_PEER | (required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0);
}
/* RFC 4514 (RFC 2253 flags) subject of a DER certificate into out; returns the length or -1. */
static inline int cpl_srv_subject_rfc2253(const unsigned char *der, long len, char *out, int outlen) {
    const unsigned char *p = der;
    X509 *x = d2i_X509(NULL, &p, len);
    if (x == NULL) { ERR_clear_error(); return -1; }
    BIO *bio = BIO_new(BIO_s_mem());
    int n = -1;
    if (bio != NULL && X509_NAME_print_ex(bio, X509_get_subject_name(x), 0, XN_FLAG_RFC2253) >= 0) {
        n = BIO_read(bio, out, outlen - 1);
        if (n < 0) n = 0;
        out[n] = 0;
    }
    BIO_free(bio);
    X509_free(x);
    return n;
}
/* Session resumption (off unless a configuration asks): a session-ID context shared by every context of the
   engine (so that the SNI switch keeps sessions valid), the server session cache for session IDs, and stateless
   tickets under the given 80-byte key (16 name, 32 HMAC, 32 AES), with `dec` told the outcome of each ticket.
   Session IDs alone issue no TLS 1.3 ticket (TLS 1.3 has no session IDs). Returns 1 on success. */
static inline int cpl_srv_ctx_resumption(SSL_CTX *ctx, int ids, int tickets, const unsigned char *key80,
                                         SSL_CTX_decrypt_session_ticket_fn dec) {
    static const unsigned char sid_ctx[] = "pinninglab";
    if (SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1) != 1) return 0;
    if (ids) SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    if (tickets) {
        SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
        if (SSL_CTX_set_num_tickets(ctx, 2) != 1) return 0;
        if (SSL_CTX_set_tlsext_ticket_keys(ctx, (void *)key80, 80) != 1) return 0;
        if (SSL_CTX_set_session_ticket_cb(ctx, NULL, dec, NULL) != 1) return 0;
    }
    return 1;
}
/* TLS 1.3 early data (0-RTT): tickets allow up to `max` bytes and the server reads them. No anti-replay: the fixture
   accepts every 0-RTT attempt it can (as a careless interceptor does); what is judged is whether a client sent any. */
static inline int cpl_srv_ctx_early_data(SSL_CTX *ctx, uint32_t max) {
    if (SSL_CTX_set_max_early_data(ctx, max) != 1) return 0;
    if (SSL_CTX_set_recv_max_early_data(ctx, max) != 1) return 0;
    SSL_CTX_set_options(ctx, SSL_OP_NO_ANTI_REPLAY);
    return 1;
}
/* What OpenSSL does with a ticket when no decrypt callback is installed. */
static inline SSL_TICKET_RETURN cpl_srv_ticket_default(SSL_TICKET_STATUS status) {
    switch (status) {
    case SSL_TICKET_SUCCESS: return SSL_TICKET_RETURN_USE;
    case SSL_TICKET_SUCCESS_RENEW: return SSL_TICKET_RETURN_USE_RENEW;
    case SSL_TICKET_EMPTY: case SSL_TICKET_NO_DECRYPT: return SSL_TICKET_RETURN_IGNORE_RENEW;
    case SSL_TICKET_NONE: return SSL_TICKET_RETURN_IGNORE;
    default: return SSL_TICKET_RETURN_ABORT;
    }
}
static inline int cpl_srv_ticket_decrypted(SSL_TICKET_STATUS status) {
    return status == SSL_TICKET_SUCCESS || status == SSL_TICKET_SUCCESS_RENEW;
}
/* ---- end engines ---- */

#endif
