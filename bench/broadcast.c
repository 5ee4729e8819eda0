/*
 * broadcast: the bare limit scripts/bench compares navsyncd's fan-out with. A libuv
 * WebSocket server with no sessions, no state and no parsing of what it carries: every
 * text or binary message a connection sends goes to every upgraded connection (the
 * sender too) as one shared frame, and each connection's frames are written once per
 * loop iteration with one writev. What navsyncd does beyond this is its work.
 *
 *   broadcast --port N        (0: any free port, printed as "listening on PORT")
 */
#define _GNU_SOURCE
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

typedef struct frame { int refs; size_t len; char bytes[]; } frame;

typedef struct client {
    uv_tcp_t tcp;
    int upgraded, closing;
    char *in; size_t in_len, in_cap;
    frame **queued; int n_queued, cap_queued;   /* written at this iteration's end */
    struct client *prev, *next, *next_dirty;
    int dirty;
} client;

typedef struct { uv_write_t req; frame **frames; int n; } write_req;

static uv_loop_t *loop;
static client *clients, *dirty;

static frame *frame_new(int opcode, const char *payload, size_t len) {
    frame *f = malloc(sizeof *f + len + 10);
    size_t h = 0;
    f->bytes[h++] = (char)(0x80 | opcode);
    if (len < 126) f->bytes[h++] = (char)len;
    else if (len < 65536) { f->bytes[h++] = 126; f->bytes[h++] = (char)(len >> 8); f->bytes[h++] = (char)len; }
    else { f->bytes[h++] = 127; for (int i = 7; i >= 0; i--) f->bytes[h++] = (char)((unsigned long long)len >> (8 * i)); }
    memcpy(f->bytes + h, payload, len);
    f->len = h + len; f->refs = 0;
    return f;
}
static frame *frame_raw(const char *bytes, size_t len) {
    frame *f = malloc(sizeof *f + len);
    memcpy(f->bytes, bytes, len); f->len = len; f->refs = 0;
    return f;
}
static void frame_release(frame *f) { if (--f->refs == 0) free(f); }

static void queue(client *c, frame *f) {
    if (c->closing) return;
    if (c->n_queued == c->cap_queued) {
        c->cap_queued = c->cap_queued ? c->cap_queued * 2 : 16;
        c->queued = realloc(c->queued, (size_t)c->cap_queued * sizeof *c->queued);
    }
    f->refs++; c->queued[c->n_queued++] = f;
    if (!c->dirty) { c->dirty = 1; c->next_dirty = dirty; dirty = c; }
}

static void on_closed(uv_handle_t *h) {
    client *c = (client *)h;
    free(c->in); free(c->queued); free(c);
}
static void drop(client *c) {
    if (c->closing) return;
    c->closing = 1;
    if (c->prev) c->prev->next = c->next; else clients = c->next;
    if (c->next) c->next->prev = c->prev;
    for (int i = 0; i < c->n_queued; i++) frame_release(c->queued[i]);
    c->n_queued = 0;
    if (!c->dirty) uv_close((uv_handle_t *)&c->tcp, on_closed);   /* a dirty one closes at the flush */
}

static void on_written(uv_write_t *req, int status) {
    write_req *w = (write_req *)req;
    client *c = (client *)req->handle;
    for (int i = 0; i < w->n; i++) frame_release(w->frames[i]);
    free(w->frames); free(w);
    if (status < 0) drop(c);
}

/* After each poll: every connection with frames queued gets one writev of all of them
 * (uv_try_write); what the socket does not take yet goes to uv_write, which keeps the
 * frames until it is written. */
static void flush_all(uv_check_t *check) {
    (void)check;
    uv_buf_t bufs[256];
    while (dirty) {
        client *c = dirty; dirty = c->next_dirty; c->dirty = 0;
        if (c->closing) { uv_close((uv_handle_t *)&c->tcp, on_closed); continue; }
        for (int start = 0; start < c->n_queued; start += 256) {
            int n = c->n_queued - start < 256 ? c->n_queued - start : 256, first = 0;
            frame **fs = c->queued + start;
            for (int i = 0; i < n; i++) bufs[i] = uv_buf_init(fs[i]->bytes, (unsigned)fs[i]->len);
            int r = uv_try_write((uv_stream_t *)&c->tcp, bufs, (unsigned)n);
            size_t done = r > 0 ? (size_t)r : 0;
            while (first < n && done >= bufs[first].len) { done -= bufs[first].len; frame_release(fs[first++]); }
            if (first == n) continue;
            bufs[first].base += done; bufs[first].len -= done;
            write_req *w = malloc(sizeof *w);
            w->n = n - first; w->frames = malloc((size_t)w->n * sizeof *w->frames);
            memcpy(w->frames, fs + first, (size_t)w->n * sizeof *w->frames);
            if (uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs + first, (unsigned)w->n, on_written) < 0) {
                for (int i = 0; i < w->n; i++) frame_release(w->frames[i]);
                free(w->frames); free(w);
            }
        }
        c->n_queued = 0;
    }
}

static void broadcast(frame *f) {
    for (client *c = clients; c; c = c->next) if (c->upgraded) queue(c, f);
    if (f->refs == 0) free(f);
}

/* The HTTP upgrade (RFC 6455 4.2): 101 with the key's SHA-1 in base64. */
static size_t upgrade(client *c) {
    char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end) return 0;
    *end = 0;
    char *key = strcasestr(c->in, "\nSec-WebSocket-Key:");
    if (!key) { drop(c); return 0; }
    key += 19; while (*key == ' ') key++;
    size_t key_len = strcspn(key, "\r\n");
    unsigned char digest[SHA_DIGEST_LENGTH], joined[128];
    char accept[64], answer[256];
    if (key_len > 60) { drop(c); return 0; }
    memcpy(joined, key, key_len);
    memcpy(joined + key_len, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11", 36);
    SHA1(joined, key_len + 36, digest);
    EVP_EncodeBlock((unsigned char *)accept, digest, SHA_DIGEST_LENGTH);
    int n = snprintf(answer, sizeof answer, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", accept);
    c->upgraded = 1;
    queue(c, frame_raw(answer, (size_t)n));
    return (size_t)(end + 4 - c->in);
}

/* Client frames are masked (RFC 6455 5.3); a data message is broadcast as it is. */
static size_t frames(client *c) {
    size_t used = 0;
    while (!c->closing && c->in_len - used >= 6) {
        unsigned char *h = (unsigned char *)c->in + used;
        int opcode = h[0] & 0x0f;
        unsigned long long n = h[1] & 0x7f; size_t head = 2;
        if (!(h[1] & 0x80)) { drop(c); break; }
        if (n == 126) { if (c->in_len - used < 8) break; n = (unsigned long long)h[2] << 8 | h[3]; head = 4; }
        else if (n == 127) { if (c->in_len - used < 14) break; n = 0; for (int i = 2; i < 10; i++) n = n << 8 | h[i]; head = 10; }
        if (n > 16u << 20) { drop(c); break; }
        if (c->in_len - used < head + 4 + n) break;
        unsigned char *mask = h + head, *p = h + head + 4;
        for (unsigned long long i = 0; i < n; i++) p[i] ^= mask[i & 3];
        if (opcode == 1 || opcode == 2) broadcast(frame_new(opcode, (char *)p, (size_t)n));
        else if (opcode == 9) queue(c, frame_new(10, (char *)p, (size_t)n));
        else if (opcode == 8) { drop(c); break; }
        used += head + 4 + (size_t)n;
    }
    return used;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    client *c = (client *)h;
    (void)suggested;
    if (c->in_cap - c->in_len < 65536) {
        c->in_cap = c->in_len + 65536;
        c->in = realloc(c->in, c->in_cap);
    }
    *buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    client *c = (client *)s;
    (void)buf;
    if (n < 0) { drop(c); return; }
    c->in_len += (size_t)n;
    if (!c->upgraded) {
        size_t used = upgrade(c);
        memmove(c->in, c->in + used, c->in_len - used); c->in_len -= used;
    }
    if (c->upgraded && !c->closing) {
        size_t used = frames(c);
        memmove(c->in, c->in + used, c->in_len - used); c->in_len -= used;
    }
    if (c->closing) uv_read_stop(s);
}

static void on_connection(uv_stream_t *server, int status) {
    if (status < 0) return;
    client *c = calloc(1, sizeof *c);
    uv_tcp_init(loop, &c->tcp);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) { uv_close((uv_handle_t *)&c->tcp, on_closed); return; }
    uv_tcp_nodelay(&c->tcp, 1);
    c->next = clients; if (clients) clients->prev = c; clients = c;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int main(int argc, char **argv) {
    int port = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) port = atoi(argv[++i]);
        else { fprintf(stderr, "usage: broadcast --port N   (0: a free port, printed)\n"); return 2; }
    }
    if (port < 0) { fprintf(stderr, "usage: broadcast --port N   (0: a free port, printed)\n"); return 2; }
    loop = uv_default_loop();
    uv_tcp_t server; uv_check_t check;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    uv_tcp_init(loop, &server);
    int r = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    if (!r) r = uv_listen((uv_stream_t *)&server, 4096, on_connection);
    if (r) { fprintf(stderr, "broadcast: port %d: %s\n", port, uv_strerror(r)); return 1; }
    int len = sizeof addr;
    uv_tcp_getsockname(&server, (struct sockaddr *)&addr, &len);
    printf("listening on %d\n", ntohs(addr.sin_port)); fflush(stdout);
    uv_check_init(loop, &check);
    uv_check_start(&check, flush_all);
    return uv_run(loop, UV_RUN_DEFAULT);
}
