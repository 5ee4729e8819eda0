#ifndef NAVSYNC_CSSL_SHIM_H
#define NAVSYNC_CSSL_SHIM_H
/* OpenSSL 3 (Debian's libssl-dev): TLS over memory BIOs, certificates, digests and the
   signatures of JWTs. Several of its calls are macros, which Swift does not import:
   they are wrapped below as inline functions. */
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>

static inline int navsync_ssl_ctx_tls12_or_later(SSL_CTX *ctx) {
    return SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}
static inline void navsync_ssl_ctx_no_renegotiation(SSL_CTX *ctx) { SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION); }
static inline long navsync_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline int navsync_ssl_set_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
static inline long navsync_bio_pending(BIO *bio) { return (long)BIO_ctrl_pending(bio); }
static inline void navsync_bio_set_eof_is_retry(BIO *bio) { BIO_set_mem_eof_return(bio, -1); }
static inline int navsync_reason(unsigned long e) { return ERR_GET_REASON(e); }
static inline EVP_PKEY *navsync_ec_p256_key(void) { return EVP_EC_gen("P-256"); }
/* An X509v3 extension in OpenSSL's config syntax ("DNS:localhost,IP:127.0.0.1"). */
static inline int navsync_x509_add_ext(X509 *cert, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext) return 0;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}
#endif
