// HTTP/2 through nghttp2, loaded at run time (dlopen) so that building PinningLab never needs libnghttp2-dev: the
// runtime library (libnghttp2.so.14, which curl depends on) is enough, and without it HTTP/2 is reported unavailable.
// Only plain C types cross this header; nghttp2's own declarations stay in http2.c. One `cpl_h2` is one nghttp2
// session (server or client) with the streams it has seen; its owner frees it with cpl_h2_free.
#ifndef CPINNINGLAB_HTTP2_H
#define CPINNINGLAB_HTTP2_H

#include <stdint.h>

typedef struct cpl_h2 cpl_h2;

/// Loads libnghttp2 once (later calls return the first answer; PINLAB_NGHTTP2_LIBRARY, when set, names the one file
/// to load): 1 when it is usable, else 0 with the reason in
/// `reason` (NUL-terminated, truncated to `length`).
int cpl_h2_load(char *reason, unsigned long length);
/// The loaded library's version, e.g. "1.52.0"; "" when not loaded.
const char *cpl_h2_library_version(void);
/// A new session: `server` 1 answers requests (it expects the client's connection preface), 0 sends them. The
/// initial SETTINGS frame is queued. NULL when the library is not loaded or out of memory.
cpl_h2 *cpl_h2_new(int server);
void cpl_h2_free(cpl_h2 *h2);
/// Feeds bytes received from the peer: 0, or a negative nghttp2 error code (the connection is then unusable).
int cpl_h2_receive(cpl_h2 *h2, const uint8_t *data, unsigned long length);
/// The next bytes to send (valid until the next call on `h2`): their count, 0 when there is nothing to send, or a
/// negative nghttp2 error code.
long cpl_h2_next_output(cpl_h2 *h2, const uint8_t **out);
/// 1 when the session still wants to read or write, 0 when it is done (GOAWAY sent or received and streams closed).
int cpl_h2_alive(cpl_h2 *h2);
/// Queues a GOAWAY (NO_ERROR): the session ends once it is sent.
void cpl_h2_goaway(cpl_h2 *h2);
/// nghttp2's words for an error code.
const char *cpl_h2_error_text(int code);

/// Streams, in the order they were opened. A server keeps at most 256 open at once (more are refused); closed ones
/// are dropped when room is needed, inside cpl_h2_receive, so indexes stay valid between two receives.
int cpl_h2_stream_count(const cpl_h2 *h2);
int32_t cpl_h2_stream_id(const cpl_h2 *h2, int index);
/// A request header the stream carried (":authority", ":path", ":method", ":scheme", "host"), or NULL. Values are
/// kept up to 1024 bytes.
const char *cpl_h2_stream_header(const cpl_h2 *h2, int index, const char *name);
/// Server: 1 once the request ended (END_STREAM) and not yet answered.
int cpl_h2_stream_awaits_response(const cpl_h2 *h2, int index);
/// Server: answers the stream with `status` and `body` (copied), as application/json. 0 or a negative error code.
int cpl_h2_respond(cpl_h2 *h2, int index, int status, const uint8_t *body, unsigned long length);
/// Client: opens a stream GET https://authority/path; returns its index, or a negative error code.
int cpl_h2_request(cpl_h2 *h2, const char *authority, const char *path);
/// Client: the response's :status (0 until the headers arrived).
int cpl_h2_stream_status(const cpl_h2 *h2, int index);
/// 1 once the stream closed; `error_code` then holds its HTTP/2 error code (0: NO_ERROR).
int cpl_h2_stream_closed(const cpl_h2 *h2, int index, uint32_t *error_code);
/// Client: the number of body bytes received on the stream.
unsigned long cpl_h2_stream_body_length(const cpl_h2 *h2, int index);

#endif
