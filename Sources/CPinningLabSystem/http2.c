// HTTP/2 sessions over nghttp2, loaded with dlopen: see CPinningLabHTTP2.h. The few nghttp2 declarations used here
// are written out below from nghttp2's documented API (nghttp2/nghttp2.h, ABI version 14); nothing else of it is
// assumed. Every nghttp2 object is created and freed here; a cpl_h2 owns its session.
#include "CPinningLabHTTP2.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

// MARK: nghttp2's declarations (the subset used)

typedef struct nghttp2_session nghttp2_session;
typedef struct nghttp2_session_callbacks nghttp2_session_callbacks;
// Every frame starts with its header; only the header is read here.
typedef struct {
    size_t length;
    int32_t stream_id;
    uint8_t type;
    uint8_t flags;
    uint8_t reserved;
} nghttp2_frame_hd;
typedef union { nghttp2_frame_hd hd; } nghttp2_frame;
typedef struct {
    uint8_t *name;
    uint8_t *value;
    size_t namelen;
    size_t valuelen;
    uint8_t flags;
} nghttp2_nv;
typedef struct {
    int32_t settings_id;
    uint32_t value;
} nghttp2_settings_entry;
typedef union {
    int fd;
    void *ptr;
} nghttp2_data_source;
typedef ssize_t (*nghttp2_data_source_read_callback)(
    nghttp2_session *, int32_t, uint8_t *, size_t, uint32_t *, nghttp2_data_source *, void *);
typedef struct {
    nghttp2_data_source source;
    nghttp2_data_source_read_callback read_callback;
} nghttp2_data_provider;
typedef struct {
    int age;
    int version_num;
    const char *version_str;
    const char *proto_str;
} nghttp2_info;

typedef int (*on_begin_headers_cb)(nghttp2_session *, const nghttp2_frame *, void *);
typedef int (*on_header_cb)(
    nghttp2_session *, const nghttp2_frame *, const uint8_t *, size_t, const uint8_t *, size_t, uint8_t, void *);
typedef int (*on_frame_recv_cb)(nghttp2_session *, const nghttp2_frame *, void *);
typedef int (*on_data_chunk_recv_cb)(nghttp2_session *, uint8_t, int32_t, const uint8_t *, size_t, void *);
typedef int (*on_stream_close_cb)(nghttp2_session *, int32_t, uint32_t, void *);

enum {
    NGHTTP2_DATA = 0,
    NGHTTP2_HEADERS = 1,
    NGHTTP2_FLAG_END_STREAM = 0x01,
    NGHTTP2_DATA_FLAG_EOF = 0x01,
    NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS = 0x03,
    NGHTTP2_NO_ERROR = 0,
    NGHTTP2_REFUSED_STREAM = 0x07,
    NGHTTP2_ERR_INVALID_ARGUMENT = -501,
    NGHTTP2_ERR_NOMEM = -901,
    NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE = -521,
};

static struct {
    int (*callbacks_new)(nghttp2_session_callbacks **);
    void (*callbacks_del)(nghttp2_session_callbacks *);
    void (*set_on_begin_headers)(nghttp2_session_callbacks *, on_begin_headers_cb);
    void (*set_on_header)(nghttp2_session_callbacks *, on_header_cb);
    void (*set_on_frame_recv)(nghttp2_session_callbacks *, on_frame_recv_cb);
    void (*set_on_data_chunk_recv)(nghttp2_session_callbacks *, on_data_chunk_recv_cb);
    void (*set_on_stream_close)(nghttp2_session_callbacks *, on_stream_close_cb);
    int (*server_new)(nghttp2_session **, const nghttp2_session_callbacks *, void *);
    int (*client_new)(nghttp2_session **, const nghttp2_session_callbacks *, void *);
    void (*session_del)(nghttp2_session *);
    ssize_t (*mem_recv)(nghttp2_session *, const uint8_t *, size_t);
    ssize_t (*mem_send)(nghttp2_session *, const uint8_t **);
    int (*want_read)(nghttp2_session *);
    int (*want_write)(nghttp2_session *);
    int (*submit_settings)(nghttp2_session *, uint8_t, const nghttp2_settings_entry *, size_t);
    int (*submit_response)(nghttp2_session *, int32_t, const nghttp2_nv *, size_t, const nghttp2_data_provider *);
    int32_t (*submit_request)(nghttp2_session *, const void *, const nghttp2_nv *, size_t, const nghttp2_data_provider *, void *);
    int (*submit_rst_stream)(nghttp2_session *, uint8_t, int32_t, uint32_t);
    int (*terminate_session)(nghttp2_session *, uint32_t);
    const char *(*strerror)(int);
    nghttp2_info *(*version)(int);
} lib;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int load_state;  // 0 not tried, 1 loaded, -1 failed
static char load_reason[512];
static const char *load_version = "";

static const char *candidates[] = {
#ifdef __APPLE__
    "libnghttp2.14.dylib", "/opt/homebrew/lib/libnghttp2.14.dylib", "/usr/local/lib/libnghttp2.14.dylib",
    "/opt/homebrew/opt/libnghttp2/lib/libnghttp2.14.dylib", "/opt/homebrew/opt/nghttp2/lib/libnghttp2.14.dylib",
    "/usr/local/opt/libnghttp2/lib/libnghttp2.14.dylib",
#else
    "libnghttp2.so.14",
#endif
};

static int load_now(void) {
    void *handle = NULL;
    const char *first_error = NULL;
    char first[256] = "";
    // PINLAB_NGHTTP2_LIBRARY names the one library to load (a path), instead of the usual places.
    const char *chosen = getenv("PINLAB_NGHTTP2_LIBRARY");
    const char *only[] = {chosen};
    const char **names = chosen && *chosen ? only : candidates;
    size_t count = chosen && *chosen ? 1 : sizeof candidates / sizeof candidates[0];
    for (size_t i = 0; i < count && !handle; i++) {
        handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!handle && !first_error) {
            first_error = dlerror();
            snprintf(first, sizeof first, "%s", first_error ? first_error : "not found");
            first_error = first;
        }
    }
    if (!handle) {
        snprintf(load_reason, sizeof load_reason,
                 "HTTP/2 is unavailable: the nghttp2 library could not be loaded (%s); install it with "
#ifdef __APPLE__
                 "`brew install nghttp2`",
#else
                 "`apt-get install libnghttp2-14`",
#endif
                 first);
        return -1;
    }
#define LOAD(field, symbol)                                                                                    \
    do {                                                                                                       \
        *(void **)(&lib.field) = dlsym(handle, symbol);                                                        \
        if (!lib.field) {                                                                                      \
            snprintf(load_reason, sizeof load_reason,                                                          \
                     "HTTP/2 is unavailable: the loaded nghttp2 library has no %s (it is too old or not "      \
                     "nghttp2); install a current one",                                                         \
                     symbol);                                                                                  \
            dlclose(handle);                                                                                   \
            return -1;                                                                                         \
        }                                                                                                      \
    } while (0)
    LOAD(callbacks_new, "nghttp2_session_callbacks_new");
    LOAD(callbacks_del, "nghttp2_session_callbacks_del");
    LOAD(set_on_begin_headers, "nghttp2_session_callbacks_set_on_begin_headers_callback");
    LOAD(set_on_header, "nghttp2_session_callbacks_set_on_header_callback");
    LOAD(set_on_frame_recv, "nghttp2_session_callbacks_set_on_frame_recv_callback");
    LOAD(set_on_data_chunk_recv, "nghttp2_session_callbacks_set_on_data_chunk_recv_callback");
    LOAD(set_on_stream_close, "nghttp2_session_callbacks_set_on_stream_close_callback");
    LOAD(server_new, "nghttp2_session_server_new");
    LOAD(client_new, "nghttp2_session_client_new");
    LOAD(session_del, "nghttp2_session_del");
    LOAD(mem_recv, "nghttp2_session_mem_recv");
    LOAD(mem_send, "nghttp2_session_mem_send");
    LOAD(want_read, "nghttp2_session_want_read");
    LOAD(want_write, "nghttp2_session_want_write");
    LOAD(submit_settings, "nghttp2_submit_settings");
    LOAD(submit_response, "nghttp2_submit_response");
    LOAD(submit_request, "nghttp2_submit_request");
    LOAD(submit_rst_stream, "nghttp2_submit_rst_stream");
    LOAD(terminate_session, "nghttp2_session_terminate_session");
    LOAD(strerror, "nghttp2_strerror");
    LOAD(version, "nghttp2_version");
#undef LOAD
    nghttp2_info *info = lib.version(0);
    load_version = info && info->version_str ? info->version_str : "";
    return 1;  // the handle stays open for the life of the process
}

int cpl_h2_load(char *reason, unsigned long length) {
    pthread_mutex_lock(&load_lock);
    if (load_state == 0) load_state = load_now();
    int state = load_state;
    pthread_mutex_unlock(&load_lock);
    if (state != 1 && reason && length > 0) snprintf(reason, length, "%s", load_reason);
    return state == 1;
}

const char *cpl_h2_library_version(void) { return load_version; }

// MARK: sessions

enum { MAX_STREAMS = 256, MAX_VALUE = 1024, MAX_BODY = 1 << 20 };

typedef struct {
    int32_t id;
    char *authority, *path, *method, *scheme, *host;
    int ended, responded, closed, status;
    uint32_t error_code;
    uint8_t *body;  // server: the response body being sent
    size_t body_length, body_sent;
    unsigned long received;  // client: response body bytes
} stream;

struct cpl_h2 {
    nghttp2_session *session;
    int server;
    int count;
    stream streams[MAX_STREAMS];
};

static stream *find(cpl_h2 *h2, int32_t id) {
    for (int i = h2->count - 1; i >= 0; i--)
        if (h2->streams[i].id == id) return &h2->streams[i];
    return NULL;
}

static void free_stream(stream *s) {
    free(s->authority);
    free(s->path);
    free(s->method);
    free(s->scheme);
    free(s->host);
    free(s->body);
}

/// Drops the closed streams (answered and done), keeping the open ones in order.
static void compact(cpl_h2 *h2) {
    int kept = 0;
    for (int i = 0; i < h2->count; i++) {
        if (h2->streams[i].closed) free_stream(&h2->streams[i]);
        else h2->streams[kept++] = h2->streams[i];
    }
    h2->count = kept;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    cpl_h2 *h2 = user;
    if (!h2->server || frame->hd.type != NGHTTP2_HEADERS || find(h2, frame->hd.stream_id)) return 0;
    // A server keeps the streams still open; closed ones make room (during mem_recv, before its caller looks).
    if (h2->count >= MAX_STREAMS) compact(h2);
    if (h2->count >= MAX_STREAMS) {
        lib.submit_rst_stream(session, 0, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    stream *s = &h2->streams[h2->count++];
    memset(s, 0, sizeof *s);
    s->id = frame->hd.stream_id;
    return 0;
}

static char *copy_value(const uint8_t *value, size_t length) {
    if (length > MAX_VALUE) length = MAX_VALUE;
    char *text = malloc(length + 1);
    if (!text) return NULL;
    memcpy(text, value, length);
    text[length] = 0;
    return text;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user) {
    (void)session;
    (void)flags;
    cpl_h2 *h2 = user;
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    stream *s = find(h2, frame->hd.stream_id);
    if (!s) return 0;
    if (!h2->server) {
        if (namelen == 7 && memcmp(name, ":status", 7) == 0 && valuelen == 3)
            s->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
        return 0;
    }
    char **slot = NULL;
    if (namelen == 10 && memcmp(name, ":authority", 10) == 0) slot = &s->authority;
    else if (namelen == 5 && memcmp(name, ":path", 5) == 0) slot = &s->path;
    else if (namelen == 7 && memcmp(name, ":method", 7) == 0) slot = &s->method;
    else if (namelen == 7 && memcmp(name, ":scheme", 7) == 0) slot = &s->scheme;
    else if (namelen == 4 && memcmp(name, "host", 4) == 0) slot = &s->host;
    if (slot && !*slot) *slot = copy_value(value, valuelen);
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    (void)session;
    cpl_h2 *h2 = user;
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        stream *s = find(h2, frame->hd.stream_id);
        if (s) s->ended = 1;
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data, size_t length, void *user) {
    (void)session;
    (void)flags;
    (void)data;
    stream *s = find(user, id);
    if (s) s->received += length;
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t id, uint32_t error_code, void *user) {
    (void)session;
    stream *s = find(user, id);
    if (s) {
        s->closed = 1;
        s->error_code = error_code;
    }
    return 0;
}

cpl_h2 *cpl_h2_new(int server) {
    if (!cpl_h2_load(NULL, 0)) return NULL;
    cpl_h2 *h2 = calloc(1, sizeof *h2);
    if (!h2) return NULL;
    h2->server = server;
    nghttp2_session_callbacks *callbacks = NULL;
    if (lib.callbacks_new(&callbacks) != 0) {
        free(h2);
        return NULL;
    }
    lib.set_on_begin_headers(callbacks, on_begin_headers);
    lib.set_on_header(callbacks, on_header);
    lib.set_on_frame_recv(callbacks, on_frame_recv);
    lib.set_on_data_chunk_recv(callbacks, on_data_chunk);
    lib.set_on_stream_close(callbacks, on_stream_close);
    int rc = server ? lib.server_new(&h2->session, callbacks, h2) : lib.client_new(&h2->session, callbacks, h2);
    lib.callbacks_del(callbacks);  // the session keeps its own copy
    if (rc != 0) {
        free(h2);
        return NULL;
    }
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
    if (lib.submit_settings(h2->session, 0, settings, server ? 1 : 0) != 0) {
        cpl_h2_free(h2);
        return NULL;
    }
    return h2;
}

void cpl_h2_free(cpl_h2 *h2) {
    if (!h2) return;
    if (h2->session) lib.session_del(h2->session);
    for (int i = 0; i < h2->count; i++) free_stream(&h2->streams[i]);
    free(h2);
}

int cpl_h2_receive(cpl_h2 *h2, const uint8_t *data, unsigned long length) {
    ssize_t n = lib.mem_recv(h2->session, data, length);
    return n < 0 ? (int)n : 0;
}

long cpl_h2_next_output(cpl_h2 *h2, const uint8_t **out) {
    return (long)lib.mem_send(h2->session, out);
}

int cpl_h2_alive(cpl_h2 *h2) { return lib.want_read(h2->session) || lib.want_write(h2->session); }

void cpl_h2_goaway(cpl_h2 *h2) { lib.terminate_session(h2->session, NGHTTP2_NO_ERROR); }

const char *cpl_h2_error_text(int code) { return load_state == 1 ? lib.strerror(code) : "nghttp2 is not loaded"; }

int cpl_h2_stream_count(const cpl_h2 *h2) { return h2->count; }

int32_t cpl_h2_stream_id(const cpl_h2 *h2, int index) {
    return index >= 0 && index < h2->count ? h2->streams[index].id : -1;
}

const char *cpl_h2_stream_header(const cpl_h2 *h2, int index, const char *name) {
    if (index < 0 || index >= h2->count) return NULL;
    const stream *s = &h2->streams[index];
    if (strcmp(name, ":authority") == 0) return s->authority;
    if (strcmp(name, ":path") == 0) return s->path;
    if (strcmp(name, ":method") == 0) return s->method;
    if (strcmp(name, ":scheme") == 0) return s->scheme;
    if (strcmp(name, "host") == 0) return s->host;
    return NULL;
}

int cpl_h2_stream_awaits_response(const cpl_h2 *h2, int index) {
    if (index < 0 || index >= h2->count) return 0;
    const stream *s = &h2->streams[index];
    return s->ended && !s->responded && !s->closed;
}

static ssize_t read_body(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                         nghttp2_data_source *source, void *user) {
    (void)session;
    (void)source;
    stream *s = find(user, id);
    if (!s) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
    }
    size_t left = s->body_length - s->body_sent;
    size_t n = left < length ? left : length;
    if (n) memcpy(buf, s->body + s->body_sent, n);
    s->body_sent += n;
    if (s->body_sent == s->body_length) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

int cpl_h2_respond(cpl_h2 *h2, int index, int status, const uint8_t *body, unsigned long length) {
    if (index < 0 || index >= h2->count || status < 100 || status > 999 || length > MAX_BODY)
        return NGHTTP2_ERR_INVALID_ARGUMENT;
    stream *s = &h2->streams[index];
    free(s->body);
    s->body = malloc(length ? length : 1);
    if (!s->body) return NGHTTP2_ERR_NOMEM;
    if (length) memcpy(s->body, body, length);
    s->body_length = length;
    s->body_sent = 0;
    char status_text[4];
    snprintf(status_text, sizeof status_text, "%03d", status);
    char length_text[24];
    snprintf(length_text, sizeof length_text, "%lu", length);
    nghttp2_nv headers[] = {
        {(uint8_t *)":status", (uint8_t *)status_text, 7, 3, 0},
        {(uint8_t *)"content-type", (uint8_t *)"application/json", 12, 16, 0},
        {(uint8_t *)"content-length", (uint8_t *)length_text, 14, strlen(length_text), 0},
        {(uint8_t *)"server", (uint8_t *)"pinninglab-h2", 6, 13, 0},
    };
    nghttp2_data_provider provider = {{.ptr = NULL}, read_body};
    int rc = lib.submit_response(h2->session, s->id, headers, 4, &provider);
    if (rc == 0) s->responded = 1;
    return rc;
}

int cpl_h2_request(cpl_h2 *h2, const char *authority, const char *path) {
    if (h2->server || h2->count >= MAX_STREAMS) return NGHTTP2_ERR_INVALID_ARGUMENT;
    nghttp2_nv headers[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
        {(uint8_t *)":scheme", (uint8_t *)"https", 7, 5, 0},
        {(uint8_t *)":authority", (uint8_t *)authority, 10, strlen(authority), 0},
        {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0},
        {(uint8_t *)"user-agent", (uint8_t *)"pinninglab-reference", 10, 20, 0},
    };
    int32_t id = lib.submit_request(h2->session, NULL, headers, 5, NULL, NULL);
    if (id < 0) return id;
    stream *s = &h2->streams[h2->count];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->authority = copy_value((const uint8_t *)authority, strlen(authority));
    s->path = copy_value((const uint8_t *)path, strlen(path));
    return h2->count++;
}

int cpl_h2_stream_status(const cpl_h2 *h2, int index) {
    return index >= 0 && index < h2->count ? h2->streams[index].status : 0;
}

int cpl_h2_stream_closed(const cpl_h2 *h2, int index, uint32_t *error_code) {
    if (index < 0 || index >= h2->count) return 0;
    if (error_code) *error_code = h2->streams[index].error_code;
    return h2->streams[index].closed;
}

unsigned long cpl_h2_stream_body_length(const cpl_h2 *h2, int index) {
    return index >= 0 && index < h2->count ? h2->streams[index].received : 0;
}
