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
/* What the stapled OCSP response says about the leaf, checked as RFC 6960 section 3.2 asks: 0 good; 1 no staple;
   2 unreadable or not "successful"; 3 the signature does not verify or the signer may not speak for the issuer;
   4 outside thisUpdate..nextUpdate (5 minutes of leeway); 5 revoked; 6 unknown or not about this certificate;
   7 no issuer to check against; 8 none stapled though the leaf demands one (Must-Staple); 9 none stapled, and the leaf names no OCSP
   responder. */
/* The chain to judge status against: the verified one when there is one, else the one the server sent. */
static inline STACK_OF(X509) *cpl_client_status_chain(SSL *ssl) {
    STACK_OF(X509) *chain = SSL_get0_verified_chain(ssl);
    return chain != NULL ? chain : SSL_get_peer_cert_chain(ssl);
}
/* How many certificates that chain holds (0 when there is none). Its last is the trust anchor when it is the
   verified chain. */
static inline int cpl_client_status_chain_count(SSL *ssl) {
    STACK_OF(X509) *chain = cpl_client_status_chain(ssl);
    return chain != NULL ? sk_X509_num(chain) : 0;
}
/* What an OCSP response (stapled or fetched, DER) says about the certificate at `index` of that chain (0: the leaf),
   issued by the one after it: the codes of cpl_client_ocsp_staple_status from 0 to 7. */
static inline int cpl_client_ocsp_der_status_at(SSL *ssl, int index, const unsigned char *p, long len) {
    OCSP_RESPONSE *resp = d2i_OCSP_RESPONSE(NULL, &p, len);
    if (resp == NULL) { ERR_clear_error(); return 2; }
    int result = 2;
    OCSP_BASICRESP *bs = NULL;
    OCSP_CERTID *id = NULL;
    STACK_OF(X509) *chain = cpl_client_status_chain(ssl);
    if (OCSP_response_status(resp) != OCSP_RESPONSE_STATUS_SUCCESSFUL) goto done;
    if ((bs = OCSP_response_get1_basic(resp)) == NULL) goto done;
    if (chain == NULL || index < 0 || sk_X509_num(chain) < index + 2) { result = 7; goto done; }
    if (OCSP_basic_verify(bs, chain, SSL_CTX_get_cert_store(SSL_get_SSL_CTX(ssl)), 0) <= 0) { result = 3; goto done; }
    if ((id = OCSP_cert_to_id(NULL, sk_X509_value(chain, index), sk_X509_value(chain, index + 1))) == NULL) { result = 7; goto done; }
    int status = -1, reason = -1;
    ASN1_GENERALIZEDTIME *revoked = NULL, *thisUpdate = NULL, *nextUpdate = NULL;
    if (OCSP_resp_find_status(bs, id, &status, &reason, &revoked, &thisUpdate, &nextUpdate) != 1) { result = 6; goto done; }
    if (OCSP_check_validity(thisUpdate, nextUpdate, 300, -1) != 1) { result = 4; goto done; }
    result = status == V_OCSP_CERTSTATUS_GOOD ? 0 : status == V_OCSP_CERTSTATUS_REVOKED ? 5 : 6;
done:
    OCSP_CERTID_free(id);
    OCSP_BASICRESP_free(bs);
    OCSP_RESPONSE_free(resp);
    ERR_clear_error();
    return result;
}
static inline int cpl_client_ocsp_der_status(SSL *ssl, const unsigned char *p, long len) {
    return cpl_client_ocsp_der_status_at(ssl, 0, p, len);
}
static inline int cpl_client_ocsp_staple_status(SSL *ssl) {
    const unsigned char *p = NULL;
    long len = SSL_get_tlsext_status_ocsp_resp(ssl, &p);
    if (len <= 0 || p == NULL) {
        /* None stapled: 8 when the leaf demands one (TLS feature status_request, RFC 7633). */
        STACK_OF(X509) *peer = SSL_get_peer_cert_chain(ssl);
        X509 *leaf = peer != NULL && sk_X509_num(peer) > 0 ? sk_X509_value(peer, 0) : NULL;
        if (leaf != NULL && X509_get_ext_by_NID(leaf, NID_tlsfeature, -1) >= 0) return 8;
        /* 9: the certificate names no OCSP responder, so there is no status to demand. */
        STACK_OF(OPENSSL_STRING) *urls = leaf != NULL ? X509_get1_ocsp(leaf) : NULL;
        int named = urls != NULL && sk_OPENSSL_STRING_num(urls) > 0;
        X509_email_free(urls);
        return named ? 1 : 9;
    }
    return cpl_client_ocsp_der_status(ssl, p, len);
}
/* Copies the first OCSP responder URL (which 0) or first CRL distribution point URI (which 1) of the certificate at
   `index` of the status chain (0: the leaf) into buf, NUL terminated; returns its length, 0 when it names none, -1
   when it does not fit. */
static inline int cpl_client_status_url(SSL *ssl, int index, int which, char *buf, int cap) {
    STACK_OF(X509) *chain = cpl_client_status_chain(ssl);
    X509 *cert = chain != NULL && index >= 0 && sk_X509_num(chain) > index ? sk_X509_value(chain, index) : NULL;
    if (cert == NULL || cap < 1) return 0;
    int n = 0;
    if (which == 0) {
        STACK_OF(OPENSSL_STRING) *urls = X509_get1_ocsp(cert);
        const char *url = urls != NULL && sk_OPENSSL_STRING_num(urls) > 0 ? sk_OPENSSL_STRING_value(urls, 0) : NULL;
        if (url != NULL) { n = (int)strlen(url); if (n < cap) memcpy(buf, url, (size_t)n + 1); else n = -1; }
        X509_email_free(urls);
        return n;
    }
    STACK_OF(DIST_POINT) *points = X509_get_ext_d2i(cert, NID_crl_distribution_points, NULL, NULL);
    for (int i = 0; points != NULL && n == 0 && i < sk_DIST_POINT_num(points); i++) {
        DIST_POINT *dp = sk_DIST_POINT_value(points, i);
        if (dp->distpoint == NULL || dp->distpoint->type != 0) continue;
        GENERAL_NAMES *names = dp->distpoint->name.fullname;
        for (int j = 0; n == 0 && j < sk_GENERAL_NAME_num(names); j++) {
            GENERAL_NAME *name = sk_GENERAL_NAME_value(names, j);
            if (name->type != GEN_URI) continue;
            int len = ASN1_STRING_length(name->d.uniformResourceIdentifier);
            if (len >= cap) { n = -1; break; }
            memcpy(buf, ASN1_STRING_get0_data(name->d.uniformResourceIdentifier), (size_t)len);
            buf[len] = 0;
            n = len;
        }
    }
    CRL_DIST_POINTS_free(points);
    ERR_clear_error();
    return n;
}
/* The DER OCSP request for the certificate at `index` (0: the leaf; SHA-1 CertID, no nonce) in buf; its length,
   or -1. */
static inline int cpl_client_ocsp_request(SSL *ssl, int index, unsigned char *buf, int cap) {
    STACK_OF(X509) *chain = cpl_client_status_chain(ssl);
    if (chain == NULL || index < 0 || sk_X509_num(chain) < index + 2) return -1;
    OCSP_CERTID *id = OCSP_cert_to_id(NULL, sk_X509_value(chain, index), sk_X509_value(chain, index + 1));
    OCSP_REQUEST *req = OCSP_REQUEST_new();
    int n = -1;
    if (id != NULL && req != NULL && OCSP_request_add0_id(req, id) != NULL) {
        id = NULL;  /* the request owns it now */
        int len = i2d_OCSP_REQUEST(req, NULL);
        if (len > 0 && len <= cap) { unsigned char *out = buf; n = i2d_OCSP_REQUEST(req, &out); }
    }
    OCSP_CERTID_free(id);
    OCSP_REQUEST_free(req);
    ERR_clear_error();
    return n;
}
/* What a CRL (DER) says about the certificate at `index` of the status chain (0: the leaf): 0 not listed;
   2 unreadable; 3 not issued or not signed by the certificate's issuer (the next in the chain); 4 not current
   (thisUpdate ahead, or nextUpdate past: stale); 5 the certificate is listed (revoked); 7 no issuer. */
static inline int cpl_client_crl_status(SSL *ssl, int index, const unsigned char *p, long len) {
    STACK_OF(X509) *chain = cpl_client_status_chain(ssl);
    if (chain == NULL || index < 0 || sk_X509_num(chain) < index + 2) return 7;
    X509 *cert = sk_X509_value(chain, index), *issuer = sk_X509_value(chain, index + 1);
    X509_CRL *crl = d2i_X509_CRL(NULL, &p, len);
    if (crl == NULL) { ERR_clear_error(); return 2; }
    int result;
    X509_REVOKED *entry = NULL;
    EVP_PKEY *key = X509_get0_pubkey(issuer);
    const ASN1_TIME *next = X509_CRL_get0_nextUpdate(crl);
    if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(issuer)) != 0 || key == NULL
        || X509_CRL_verify(crl, key) != 1) result = 3;
    else if (X509_cmp_current_time(X509_CRL_get0_lastUpdate(crl)) > 0 || next == NULL || X509_cmp_current_time(next) < 0) result = 4;
    else result = X509_CRL_get0_by_cert(crl, &entry, cert) == 1 ? 5 : 0;
    X509_CRL_free(crl);
    ERR_clear_error();
    return result;
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
