#define _GNU_SOURCE
/* A tiny TLS load generator: every request on a new TCP connection and a full TLS handshake (no session
   resumption, ever), certificate verified against a CA file, one HTTP/1.1 GET, response read by Content-Length.
   Usage: loadgen HOST PORT CAFILE TLSVER(1.2|1.3) THREADS SECONDS
   Prints: handshakes=N errors=E seconds=S rate=R */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *host;
static int port;
static SSL_CTX *ctx;
static double deadline;
static atomic_long ok_count, err_count;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int one_request(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    inet_pton(AF_INET, host, &sa.sin_addr);
    int rc = -1;
    SSL *ssl = NULL;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) goto out;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, "localhost");
    SSL_set1_host(ssl, "localhost");
    if (SSL_connect(ssl) != 1) goto out;
    static const char req[] = "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (SSL_write(ssl, req, sizeof req - 1) <= 0) goto out;
    char buf[4096];
    size_t have = 0;
    long want = -1;
    for (;;) {
        int n = SSL_read(ssl, buf + have, (int)(sizeof buf - 1 - have));
        if (n <= 0) break;
        have += (size_t)n;
        buf[have] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (end) {
            char *cl = strcasestr(buf, "Content-Length:");
            if (cl && want < 0) want = strtol(cl + 15, NULL, 10);
            if (want >= 0 && (long)(have - (size_t)(end + 4 - buf)) >= want) break;
        }
        if (have >= sizeof buf - 1) break;
    }
    if (have > 12 && strncmp(buf, "HTTP/1.", 7) == 0 && strncmp(buf + 9, "200", 3) == 0) rc = 0;
    SSL_shutdown(ssl);
out:
    if (ssl) SSL_free(ssl);
    close(fd);
    ERR_clear_error();
    return rc;
}

static void *worker(void *arg) {
    (void)arg;
    while (now() < deadline) {
        if (one_request() == 0) atomic_fetch_add(&ok_count, 1);
        else atomic_fetch_add(&err_count, 1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s HOST PORT CAFILE 1.2|1.3 THREADS SECONDS\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    int threads = atoi(argv[5]);
    double seconds = atof(argv[6]);
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    int v = strcmp(argv[4], "1.2") == 0 ? TLS1_2_VERSION : TLS1_3_VERSION;
    SSL_CTX_set_min_proto_version(ctx, v);
    SSL_CTX_set_max_proto_version(ctx, v);
    if (SSL_CTX_load_verify_locations(ctx, argv[3], NULL) != 1) {
        fprintf(stderr, "cannot load %s\n", argv[3]);
        return 2;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* Warm-up request, which also checks that the server answers. */
    if (one_request() != 0) {
        fprintf(stderr, "the server at %s:%d did not answer a request\n", host, port);
        ERR_print_errors_fp(stderr);
        return 1;
    }
    double start = now();
    deadline = start + seconds;
    pthread_t t[256];
    if (threads > 256) threads = 256;
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double elapsed = now() - start;
    printf("handshakes=%ld errors=%ld seconds=%.3f rate=%.1f\n", atomic_load(&ok_count), atomic_load(&err_count),
           elapsed, atomic_load(&ok_count) / elapsed);
    return 0;
}
