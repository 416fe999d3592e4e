#ifndef C_PINNINGLAB_GNUTLS_SHIM_H
#define C_PINNINGLAB_GNUTLS_SHIM_H
// GnuTLS globals and macros the Swift importer cannot use (e.g. the global `gnutls_free` function
// pointer, rejected by Swift 6) become static inline functions prefixed `cpl_`.
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <gnutls/abstract.h>
#include <string.h>

static inline void cpl_gnutls_free(void *p) { gnutls_free(p); }

/* ---- engines (server) ---- */
/* OCSP stapling: GnuTLS frees the response it is handed with gnutls_free, so it gets a gnutls_malloc'd copy. */
static inline int cpl_gnutls_set_ocsp_response(gnutls_datum_t *out, const unsigned char *der, unsigned int len) {
    out->data = gnutls_malloc(len);
    if (out->data == NULL) { out->size = 0; return GNUTLS_E_MEMORY_ERROR; }
    memcpy(out->data, der, len);
    out->size = len;
    return 0;
}
static inline void cpl_gnutls_transport_set_fd(gnutls_session_t s, int fd) { gnutls_transport_set_int2(s, fd, fd); }

/* Verifies the peer's (client's) chain against the credentials' trust list, requiring the TLS client EKU. */
static inline int cpl_gnutls_verify_client_peer(gnutls_session_t s, unsigned int *status) {
    gnutls_typed_vdata_st data;
    data.type = GNUTLS_DT_KEY_PURPOSE_OID;
    data.data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT;
    data.size = 0;
    return gnutls_certificate_verify_peers(s, &data, 1, status);
}

/* RFC 4514 subject of a DER certificate into out (NUL-terminated); returns the length or -1. */
static inline int cpl_gnutls_subject_rfc4514(const unsigned char *der, unsigned int len, char *out, unsigned int outlen) {
    gnutls_x509_crt_t crt;
    gnutls_datum_t in = { (unsigned char *)der, len };
    gnutls_datum_t dn = { NULL, 0 };
    int n = -1;
    if (gnutls_x509_crt_init(&crt) < 0) return -1;
    if (gnutls_x509_crt_import(crt, &in, GNUTLS_X509_FMT_DER) >= 0 && gnutls_x509_crt_get_dn3(crt, &dn, 0) >= 0) {
        n = dn.size < outlen ? (int)dn.size : (int)outlen - 1;
        memcpy(out, dn.data, (size_t)n);
        out[n] = 0;
        gnutls_free(dn.data);
    }
    gnutls_x509_crt_deinit(crt);
    return n;
}
/* A datum holding a copy of `len` bytes, allocated with gnutls_malloc (GnuTLS frees what a db retrieve function
   returns); an empty datum when the allocation fails. */
static inline gnutls_datum_t cpl_gnutls_datum_copy(const unsigned char *bytes, unsigned int len) {
    gnutls_datum_t d = { NULL, 0 };
    d.data = gnutls_malloc(len > 0 ? len : 1);
    if (d.data != NULL) {
        if (len > 0) memcpy(d.data, bytes, len);
        d.size = len;
    }
    return d;
}
/* ---- end engines ---- */

#endif
