/*
 * fanout: the load generator of scripts/bench. One thread, epoll, no library.
 *
 * It connects N members spread over K sessions (member i is in session i mod K) over
 * WebSocket (navsyncd, bench/broadcast) or RESP (Redis pub/sub), waits until every one
 * has joined, then has P publishers (publisher j sends to session j mod K) send M
 * messages in all: as fast as a window of commands in flight allows, or at a fixed
 * rate. It counts every copy a member receives and prints one line of key=value
 * figures: how long the joins took, deliveries per second, the server's CPU per
 * million deliveries and its memory (from /proc, with --server-pid), and the time from
 * a message's send to each member's receipt of it.
 *
 * Messages come from a template: {seq} is the message's number, {ts} the sending time
 * in microseconds of the realtime clock (a member takes it from the "ts=" it finds in
 * a copy), {session} the session's number. `fanout --help` lists the options.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum proto { WS, RESP };
enum role { MEMBER, PUBLISHER };
enum state { IDLE, CONNECTING, UPGRADING, JOINING, READY, DEAD };

typedef struct {
    int fd, role, state, session, index;
    char *in;  size_t in_len, in_cap;
    char *out; size_t out_len, out_off, out_cap;
    int awaiting;           /* replies still expected to the join or subscribe */
    int writable_watch;     /* EPOLLOUT is on */
    long received;          /* member: copies counted */
    long sent, to_send;     /* publisher */
    int in_flight;
    double next_send;       /* publisher at a rate: when the next one is due */
} conn;

static struct {
    int proto, port, members, sessions, publishers, window, join_replies, pub_join;
    int concurrency, src_addrs, kernel_ts, server_pid;
    long messages;
    double rate, pub_rate, settle, timeout;
    const char *host, *path, *subprotocol, *join, *template, *match, *channel;
} opt = {
    .proto = WS, .port = 0, .members = 100, .sessions = 1, .publishers = -1, .window = 64,
    .join_replies = 1, .concurrency = 1000, .src_addrs = 1, .messages = 1000, .settle = 0.5,
    .timeout = 120, .host = "127.0.0.1", .path = "/", .channel = "bench",
    .template = "{\"seq\":{seq},\"note\":\"ts={ts}\"}",
};

static conn *conns;
static int nconns, epfd;
static long deliveries, expected, errors, conn_errors, sent_total, messages_seq;
static int members_ready, publishers_ready, connecting_now, next_to_connect;
static double last_progress;

/* ---- time, /proc -------------------------------------------------------- */

static double now_s(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
static int64_t wall_us(void) {
    struct timespec t; clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}
static double server_cpu_s(void) {   /* user + system CPU of --server-pid */
    if (!opt.server_pid) return 0;
    char p[64], buf[1024]; snprintf(p, sizeof p, "/proc/%d/stat", opt.server_pid);
    FILE *f = fopen(p, "r"); if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f); fclose(f); buf[n] = 0;
    char *s = strrchr(buf, ')'); if (!s) return 0;
    unsigned long utime = 0, stime = 0;   /* fields 14 and 15; ')' ends field 2 */
    sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime);
    return (utime + stime) / (double)sysconf(_SC_CLK_TCK);
}
static long server_rss_kb(void) {
    if (!opt.server_pid) return 0;
    char p[64], line[256]; long kb = 0; snprintf(p, sizeof p, "/proc/%d/status", opt.server_pid);
    FILE *f = fopen(p, "r"); if (!f) return 0;
    while (fgets(line, sizeof line, f)) if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
    fclose(f); return kb;
}

static void die(const char *fmt, ...) {
    va_list a; va_start(a, fmt); fputs("fanout: ", stderr); vfprintf(stderr, fmt, a); va_end(a);
    fputc('\n', stderr); exit(2);
}

/* ---- latency: a log-linear histogram of microseconds (64 steps per doubling) ---- */

#define BUCKETS (128 + 40 * 64)
static uint64_t histogram[BUCKETS], samples, latency_max;
static int bucket_of(uint64_t v) {
    if (v < 128) return (int)v;
    int e = 63 - __builtin_clzll(v);
    int b = 128 + (e - 7) * 64 + (int)((v >> (e - 6)) & 63);
    return b < BUCKETS ? b : BUCKETS - 1;
}
static uint64_t value_of(int b) {
    if (b < 128) return (uint64_t)b;
    int e = (b - 128) / 64 + 7;
    return (uint64_t)(64 + (b - 128) % 64) << (e - 6);
}
static uint64_t percentile(double p) {
    uint64_t want = (uint64_t)(p * samples), seen = 0;
    for (int b = 0; b < BUCKETS; b++) { seen += histogram[b]; if (seen > want) return value_of(b); }
    return 0;
}

/* ---- buffers and writes --------------------------------------------------- */

static void reserve(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    if (!(*buf = realloc(*buf, c))) die("out of memory");
    *cap = c;
}
static void watch(conn *c, int writable) {
    if (c->writable_watch == writable) return;
    struct epoll_event ev = { .events = EPOLLIN | (writable ? EPOLLOUT : 0), .data.u32 = (uint32_t)c->index };
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->writable_watch = writable;
}
static void close_conn(conn *c) {
    if (c->state == DEAD) return;
    if (c->state == CONNECTING || c->state == UPGRADING || c->state == JOINING) connecting_now--;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1; c->state = DEAD; conn_errors++;
}
/* While a read is taken apart, what it makes us send waits, and goes in one write after
 * it: a publisher refilling its window sends its messages together, as a client would. */
static int corked;

static void flush(conn *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0) { if (errno == EAGAIN) break; close_conn(c); return; }
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out_len) { c->out_off = c->out_len = 0; watch(c, 0); } else watch(c, 1);
}
static void send_bytes(conn *c, const char *data, size_t len) {
    if (c->state == DEAD) return;
    reserve(&c->out, &c->out_cap, c->out_len + len);
    memcpy(c->out + c->out_len, data, len); c->out_len += len;
    if (!c->writable_watch && !corked) flush(c);
}
/* A client's WebSocket frame: FIN, the opcode, masked (RFC 6455 5.3) with a fixed key. */
static void send_frame(conn *c, int opcode, const char *payload, size_t len) {
    static const unsigned char key[4] = { 0x37, 0xfa, 0x21, 0x3d };
    char head[14]; size_t h = 0;
    head[h++] = (char)(0x80 | opcode);
    if (len < 126) head[h++] = (char)(0x80 | len);
    else if (len < 65536) { head[h++] = (char)(0x80 | 126); head[h++] = (char)(len >> 8); head[h++] = (char)len; }
    else { head[h++] = (char)(0x80 | 127); for (int i = 7; i >= 0; i--) head[h++] = (char)((uint64_t)len >> (8 * i)); }
    memcpy(head + h, key, 4); h += 4;
    reserve(&c->out, &c->out_cap, c->out_len + h + len);
    memcpy(c->out + c->out_len, head, h);
    char *p = c->out + c->out_len + h;
    for (size_t i = 0; i < len; i++) p[i] = (char)(payload[i] ^ key[i & 3]);
    c->out_len += h + len;
    if (!c->writable_watch && !corked) flush(c);
}

/* ---- templates ------------------------------------------------------------- */

/* The template with {seq}, {ts} and {session} replaced, into buf (cap bytes); its length. */
static size_t fill(char *buf, size_t cap, const char *template, long seq, int session) {
    size_t n = 0;
    for (const char *t = template; *t && n + 24 < cap; ) {
        if (!strncmp(t, "{seq}", 5)) { n += (size_t)sprintf(buf + n, "%ld", seq); t += 5; }
        else if (!strncmp(t, "{ts}", 4)) { n += (size_t)sprintf(buf + n, "%lld", (long long)wall_us()); t += 4; }
        else if (!strncmp(t, "{session}", 9)) { n += (size_t)sprintf(buf + n, "%d", session); t += 9; }
        else buf[n++] = *t++;
    }
    buf[n] = 0; return n;
}
static void send_resp(conn *c, int argc, const char **argv, const size_t *lens) {
    char head[32];
    send_bytes(c, head, (size_t)sprintf(head, "*%d\r\n", argc));
    for (int i = 0; i < argc; i++) {
        send_bytes(c, head, (size_t)sprintf(head, "$%zu\r\n", lens[i]));
        send_bytes(c, argv[i], lens[i]); send_bytes(c, "\r\n", 2);
    }
}

/* ---- what arrives ------------------------------------------------------------ */

static void publish(conn *c);

static void became_ready(conn *c) {
    c->state = READY; connecting_now--; last_progress = now_s();
    if (c->role == MEMBER) members_ready++; else publishers_ready++;
}
static void joined_reply(conn *c) {
    if (c->state == JOINING && --c->awaiting <= 0) became_ready(c);
}

/* A message's copy: counted for a member (with its latency), a window slot for a publisher. */
static void on_message(conn *c, const char *p, size_t len, int64_t rx_us) {
    if (c->state == JOINING) { joined_reply(c); return; }
    if (c->role == PUBLISHER) {
        if (memmem(p, len, "\"type\":\"error\"", 14)) errors++;
        else if (opt.match && !memmem(p, len, opt.match, strlen(opt.match))) return;
        c->in_flight--; last_progress = now_s(); publish(c); return;
    }
    if (opt.match && !memmem(p, len, opt.match, strlen(opt.match))) return;
    c->received++; deliveries++; last_progress = now_s();
    const char *ts = memmem(p, len, "ts=", 3);
    if (ts) {
        int64_t sent = strtoll(ts + 3, NULL, 10);
        if (sent > 0 && rx_us >= sent) {
            uint64_t us = (uint64_t)(rx_us - sent);
            histogram[bucket_of(us)]++; samples++; if (us > latency_max) latency_max = us;
        }
    }
}

/* WebSocket frames from a server (unmasked); the upgrade's answer before them. */
static size_t parse_ws(conn *c, const char *p, size_t len, int64_t rx_us) {
    size_t used = 0;
    if (c->state == UPGRADING) {
        const char *end = memmem(p, len, "\r\n\r\n", 4);
        if (!end) return 0;
        if (len < 12 || memcmp(p + 9, "101", 3)) {
            fprintf(stderr, "fanout: the upgrade was refused: %.*s\n", (int)(strchr(p, '\r') - p), p);
            close_conn(c); return len;
        }
        used = (size_t)(end + 4 - p);
        if (c->role == MEMBER || opt.pub_join) {
            if (opt.join) {
                char j[4096]; size_t n = fill(j, sizeof j, opt.join, 0, c->session);
                c->state = JOINING; c->awaiting = opt.join_replies; send_frame(c, 1, j, n);
                if (c->awaiting <= 0) became_ready(c);
            } else became_ready(c);
        } else became_ready(c);
    }
    while (c->state != DEAD && len - used >= 2) {
        const unsigned char *h = (const unsigned char *)p + used;
        int opcode = h[0] & 0x0f; uint64_t n = h[1] & 0x7f; size_t head = 2;
        if (n == 126) { if (len - used < 4) break; n = (uint64_t)h[2] << 8 | h[3]; head = 4; }
        else if (n == 127) { if (len - used < 10) break; n = 0; for (int i = 2; i < 10; i++) n = n << 8 | h[i]; head = 10; }
        if (len - used < head + n) break;
        const char *payload = p + used + head;
        if (opcode == 1 || opcode == 2 || opcode == 0) on_message(c, payload, (size_t)n, rx_us);
        else if (opcode == 9) send_frame(c, 10, payload, (size_t)n);
        else if (opcode == 8) { close_conn(c); return len; }
        used += head + (size_t)n;
    }
    return used;
}

/* One RESP element: a bulk string or an integer (what pub/sub answers with). */
static int resp_element(const char *p, size_t len, size_t *at, const char **s, size_t *n) {
    const char *end = memmem(p + *at, len - *at, "\r\n", 2);
    if (!end) return 0;
    char kind = p[*at]; long v = strtol(p + *at + 1, NULL, 10);
    size_t after = (size_t)(end + 2 - p);
    if (kind == '$') {
        if (v < 0) { *s = NULL; *n = 0; *at = after; return 1; }
        if (len - after < (size_t)v + 2) return 0;
        *s = p + after; *n = (size_t)v; *at = after + (size_t)v + 2; return 1;
    }
    *s = p + *at; *n = after - 2 - *at; *at = after; return 1;   /* :N, +OK, -ERR */
}
static size_t parse_resp(conn *c, const char *p, size_t len, int64_t rx_us) {
    size_t used = 0;
    while (c->state != DEAD && used < len) {
        size_t at = used; const char *s; size_t n;
        if (p[at] == '*') {
            const char *end = memmem(p + at, len - at, "\r\n", 2);
            if (!end) break;
            int count = atoi(p + at + 1); at = (size_t)(end + 2 - p);
            const char *e[8]; size_t el[8]; int i;
            for (i = 0; i < count; i++) {
                if (!resp_element(p, len, &at, &s, &n)) break;
                if (i < 8) { e[i] = s; el[i] = n; }
            }
            if (i < count) break;
            if (count >= 3 && el[0] == 7 && !memcmp(e[0], "message", 7)) on_message(c, e[2], el[2], rx_us);
            else if (count >= 1 && el[0] == 9 && !memcmp(e[0], "subscribe", 9)) joined_reply(c);
        } else {
            if (!resp_element(p, len, &at, &s, &n)) break;
            if (c->role == PUBLISHER) {   /* PUBLISH's answer: the number it reached */
                if (p[used] == '-') errors++;
                c->in_flight--; publish(c);
            }
        }
        used = at;
    }
    return used;
}

static void on_readable(conn *c) {
    for (;;) {
        reserve(&c->in, &c->in_cap, c->in_len + 65536);
        struct iovec iov = { c->in + c->in_len, c->in_cap - c->in_len };
        char control[256];
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
        ssize_t n = recvmsg(c->fd, &m, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN)) { close_conn(c); return; }
        if (n < 0) return;
        int64_t rx = 0;
        if (opt.kernel_ts)
            for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
                    struct timespec t; memcpy(&t, CMSG_DATA(cm), sizeof t);
                    rx = (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
                }
        if (!rx) rx = wall_us();
        c->in_len += (size_t)n;
        corked = 1;
        size_t used = opt.proto == WS ? parse_ws(c, c->in, c->in_len, rx) : parse_resp(c, c->in, c->in_len, rx);
        corked = 0;
        if (c->state == DEAD) return;
        if (c->out_len && !c->writable_watch) flush(c);
        if (c->state == DEAD) return;
        memmove(c->in, c->in + used, c->in_len - used); c->in_len -= used;
        if ((size_t)n < iov.iov_len) return;
    }
}

/* ---- connecting ---------------------------------------------------------------- */

static void start_connect(conn *c) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket: %s (raise the open-files limit)", strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (opt.kernel_ts && c->role == MEMBER) setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    if (opt.src_addrs > 1) {   /* 127.0.0.1 … 127.0.0.A: one source address has ~28k ports */
        struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001u + (uint32_t)(c->index % opt.src_addrs)) };
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&src, sizeof src) < 0) die("bind: %s", strerror(errno));
    }
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
    inet_pton(AF_INET, opt.host, &to.sin_addr);
    c->fd = fd; c->state = CONNECTING; c->writable_watch = 1; connecting_now++;
    struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u32 = (uint32_t)c->index };
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0 && errno != EINPROGRESS) close_conn(c);
}
static void connected(conn *c) {
    int err = 0; socklen_t l = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
    if (err) { close_conn(c); return; }
    watch(c, 0);
    if (opt.proto == WS) {
        char req[1024];
        int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s%s%s\r\n",
            opt.path, opt.host, opt.port, opt.subprotocol ? "Sec-WebSocket-Protocol: " : "",
            opt.subprotocol ? opt.subprotocol : "", opt.subprotocol ? "\r\n" : "");
        c->state = UPGRADING; send_bytes(c, req, (size_t)n);
    } else if (c->role == MEMBER) {
        char ch[256]; size_t n = fill(ch, sizeof ch, opt.channel, 0, c->session);
        const char *argv[2] = { "SUBSCRIBE", ch }; size_t lens[2] = { 9, n };
        c->state = JOINING; c->awaiting = 1; send_resp(c, 2, argv, lens);
    } else became_ready(c);
}

/* ---- publishing ------------------------------------------------------------------ */

static int publishing;
static double publish_started;

static void send_one(conn *c) {
    static char m[1 << 16];
    size_t n = fill(m, sizeof m, opt.template, ++messages_seq, c->session);
    if (opt.proto == WS) send_frame(c, 1, m, n);
    else {
        char channel[256]; size_t cn = fill(channel, sizeof channel, opt.channel, 0, c->session);
        const char *argv[3] = { "PUBLISH", channel, m }; size_t lens[3] = { 7, cn, n };
        send_resp(c, 3, argv, lens);
    }
    c->sent++; c->in_flight++; sent_total++;
    long per_session = opt.members / opt.sessions + (c->session < opt.members % opt.sessions);
    expected += per_session;
}
/* Window mode: keep `window` in flight until this publisher's share is sent. */
static void publish(conn *c) {
    if (!publishing || opt.rate > 0 || opt.pub_rate > 0) return;
    while (c->state == READY && c->sent < c->to_send && c->in_flight < opt.window) send_one(c);
}

static void usage(void) {
    puts("usage: fanout --port N [options]\n"
         "  --proto ws|resp        WebSocket (default) or Redis pub/sub\n"
         "  --host A --path P      the server (127.0.0.1, /); --subprotocol S for the upgrade\n"
         "  --subs N               members (100); --sessions K spreads them, member i in session i mod K\n"
         "  --pubs P               publishers (one per session); publisher j sends to session j mod K\n"
         "  --msgs M               messages in all (1000); 0 only connects and joins\n"
         "  --window W             messages in flight per publisher (64), or a fixed pace:\n"
         "  --rate R | --pub-rate R  messages per second in all, or per publisher\n"
         "  --template T           the message; {seq} {ts} {session} are replaced\n"
         "  --join T               (ws) sent after the upgrade; --join-replies N frames answer it (1)\n"
         "  --pub-join             publishers join too; --channel T (resp) the channel ('bench')\n"
         "  --match S              only copies containing S count\n"
         "  --connect-concurrency C  connects under way at once (1000); --src-addrs A source addresses\n"
         "  --rx-ts kernel         latency to the kernel's receive time (SO_TIMESTAMPNS)\n"
         "  --server-pid PID       the server's CPU and memory from /proc\n"
         "  --settle S             seconds between the joins and the first message, or, with\n"
         "                         --msgs 0, before the memory is read (0.5)\n"
         "  --timeout S            give up after S seconds (120)\n"
         "prints one line: connect_s srv_connect_cpu_s deliveries expected lost errors deliveries_per_s\n"
         "srv_cpu_s_per_M_deliv lat_p50_us lat_p99_us lat_max_us srv_rss_*_kb srv_rss_per_conn_b ...");
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        #define ARG(name) (!strcmp(a, name) && (v || (die("%s needs a value", name), 0)) && ++i)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); return 0; }
        else if (!strcmp(a, "--pub-join")) opt.pub_join = 1;
        else if (ARG("--proto")) opt.proto = !strcmp(v, "resp") ? RESP : !strcmp(v, "ws") ? WS : (die("--proto ws or resp"), 0);
        else if (ARG("--host")) opt.host = v;
        else if (ARG("--port")) opt.port = atoi(v);
        else if (ARG("--path")) opt.path = v;
        else if (ARG("--subprotocol")) opt.subprotocol = v;
        else if (ARG("--subs")) opt.members = atoi(v);
        else if (ARG("--sessions")) opt.sessions = atoi(v);
        else if (ARG("--pubs")) opt.publishers = atoi(v);
        else if (ARG("--msgs")) opt.messages = atol(v);
        else if (ARG("--window")) opt.window = atoi(v);
        else if (ARG("--rate")) opt.rate = atof(v);
        else if (ARG("--pub-rate")) opt.pub_rate = atof(v);
        else if (ARG("--template")) opt.template = v;
        else if (ARG("--join")) opt.join = v;
        else if (ARG("--join-replies")) opt.join_replies = atoi(v);
        else if (ARG("--channel")) opt.channel = v;
        else if (ARG("--match")) opt.match = v;
        else if (ARG("--connect-concurrency")) opt.concurrency = atoi(v);
        else if (ARG("--src-addrs")) opt.src_addrs = atoi(v);
        else if (ARG("--rx-ts")) opt.kernel_ts = !strcmp(v, "kernel");
        else if (ARG("--server-pid")) opt.server_pid = atoi(v);
        else if (ARG("--settle")) opt.settle = atof(v);
        else if (ARG("--timeout")) opt.timeout = atof(v);
        else die("unknown option %s (see --help)", a);
        #undef ARG
    }
    if (opt.port <= 0) die("--port is required (see --help)");
    if (opt.sessions < 1 || opt.members < 0 || opt.window < 1) die("--sessions, --subs and --window must be positive");
    if (opt.publishers < 0) opt.publishers = opt.messages > 0 ? opt.sessions : 0;
    if (opt.messages > 0 && opt.publishers == 0) die("--msgs needs --pubs of 1 or more");

    struct rlimit r; getrlimit(RLIMIT_NOFILE, &r); r.rlim_cur = r.rlim_max; setrlimit(RLIMIT_NOFILE, &r);
    if ((rlim_t)(opt.members + opt.publishers + 16) > r.rlim_cur)
        die("%d connections need more open files than the limit of %lu", opt.members + opt.publishers, (unsigned long)r.rlim_cur);

    nconns = opt.members + opt.publishers;
    conns = calloc((size_t)nconns + 1, sizeof *conns);
    for (int i = 0; i < nconns; i++) {
        conn *c = &conns[i];
        c->index = i; c->fd = -1; c->role = i < opt.members ? MEMBER : PUBLISHER;
        c->session = (c->role == MEMBER ? i : i - opt.members) % opt.sessions;
        if (c->role == PUBLISHER) {
            int j = i - opt.members;
            c->to_send = opt.messages / opt.publishers + (j < opt.messages % opt.publishers);
        }
    }
    epfd = epoll_create1(EPOLL_CLOEXEC);

    double start = now_s(), joined_at = 0, settle_until = 0, ended = 0;
    double cpu0 = server_cpu_s(), cpu_joined = 0, cpu_publish = 0, cpu_end = 0;
    long rss_start = server_rss_kb(), rss_idle = 0;
    int timed_out = 0;
    struct epoll_event events[1024];
    last_progress = start;

    for (;;) {
        double t = now_s();
        if (t - start > opt.timeout) { timed_out = 1; break; }
        /* members first, then publishers, at most `concurrency` connects under way */
        /* (256 a turn, so that answers are read between: a generator that only
         * connects fills the server's listen queue with connections it cannot answer) */
        int limit = members_ready + conn_errors >= opt.members ? nconns : opt.members;
        for (int turn = 0; turn < 256 && next_to_connect < limit && connecting_now < opt.concurrency; turn++)
            start_connect(&conns[next_to_connect++]);
        if (!joined_at && members_ready + publishers_ready + conn_errors >= nconns) {
            joined_at = t; cpu_joined = server_cpu_s();
            settle_until = t + opt.settle;
        }
        if (joined_at && opt.messages == 0 && t >= settle_until) {   /* only joins: memory after --settle */
            rss_idle = server_rss_kb(); break;
        }
        if (joined_at && !publishing && t >= settle_until) {
            rss_idle = server_rss_kb();
            publishing = 1; publish_started = now_s(); cpu_publish = server_cpu_s(); last_progress = publish_started;
            double per_pub = opt.pub_rate > 0 ? 1 / opt.pub_rate : opt.rate > 0 ? opt.publishers / opt.rate : 0;
            for (int j = 0; j < opt.publishers; j++) {
                conn *c = &conns[opt.members + j];
                c->next_send = publish_started + per_pub * j / opt.publishers;
                publish(c);
            }
        }
        int wait_ms = 100;
        if (publishing && (opt.rate > 0 || opt.pub_rate > 0)) {
            double per_pub = opt.pub_rate > 0 ? 1 / opt.pub_rate : opt.publishers / opt.rate, soonest = t + 0.1;
            for (int j = 0; j < opt.publishers; j++) {
                conn *c = &conns[opt.members + j];
                while (c->state == READY && c->sent < c->to_send && c->next_send <= t) { send_one(c); c->next_send += per_pub; }
                if (c->state == READY && c->sent < c->to_send && c->next_send < soonest) soonest = c->next_send;
            }
            wait_ms = (int)((soonest - now_s()) * 1000); if (wait_ms < 0) wait_ms = 0;
        }
        if (publishing) {
            int all_sent = 1, answered = 1;
            for (int j = 0; j < opt.publishers; j++) {
                conn *c = &conns[opt.members + j];
                if (c->state == READY && c->sent < c->to_send) all_sent = 0;
                if (c->state == READY && c->in_flight > 0) answered = 0;
            }
            /* done when every copy arrived; given up when nothing arrived for 5 s */
            if ((all_sent && answered && deliveries >= expected) || now_s() - last_progress > 5) { ended = now_s(); break; }
        }
        int n = epoll_wait(epfd, events, 1024, wait_ms);
        for (int k = 0; k < n; k++) {
            conn *c = &conns[events[k].data.u32];
            if (c->state == DEAD) continue;
            if (c->state == CONNECTING) { if (events[k].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) connected(c); continue; }
            if (events[k].events & EPOLLOUT) flush(c);
            if (c->state != DEAD && events[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
        }
    }
    if (!ended) ended = now_s();
    cpu_end = server_cpu_s();
    long rss_end = server_rss_kb();
    if (!joined_at) { joined_at = now_s(); cpu_joined = cpu_end; }

    double publish_s = publishing ? ended - publish_started : 0, cpu_s = publishing ? cpu_end - cpu_publish : 0;
    printf("subs=%d sessions=%d pubs=%d msgs=%ld sent=%ld connect_s=%.3f srv_connect_cpu_s=%.2f conn_errors=%ld "
           "deliveries=%ld expected=%ld lost=%ld errors=%ld elapsed_s=%.3f deliveries_per_s=%.0f "
           "srv_cpu_s=%.2f srv_cpu_s_per_M_deliv=%.3f lat_p50_us=%llu lat_p99_us=%llu lat_max_us=%llu "
           "srv_rss_start_kb=%ld srv_rss_idle_kb=%ld srv_rss_end_kb=%ld srv_rss_per_conn_b=%ld timed_out=%d\n",
           opt.members, opt.sessions, opt.publishers, opt.messages, sent_total, joined_at - start, cpu_joined - cpu0,
           conn_errors, deliveries, expected, expected - deliveries, errors, publish_s,
           publish_s > 0 ? deliveries / publish_s : 0, cpu_s, deliveries ? cpu_s / (deliveries / 1e6) : 0,
           (unsigned long long)percentile(0.5), (unsigned long long)percentile(0.99), (unsigned long long)latency_max,
           rss_start, rss_idle ? rss_idle : rss_end, rss_end,
           nconns ? ((rss_idle ? rss_idle : rss_end) - rss_start) * 1024 / nconns : 0, timed_out);
    return conn_errors || timed_out ? 1 : 0;
}
