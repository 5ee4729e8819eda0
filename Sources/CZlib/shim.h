#ifndef NAVSYNC_CZLIB_SHIM_H
#define NAVSYNC_CZLIB_SHIM_H
/* zlib (Debian's zlib1g-dev): permessage-deflate's raw deflate, and CRC-32. Its init
   calls are macros over the *_ functions, wrapped here for Swift. */
#include <zlib.h>

static inline int navsync_deflate_init(z_stream *s, int level, int window_bits) {
    return deflateInit2(s, level, Z_DEFLATED, -window_bits, 8, Z_DEFAULT_STRATEGY);
}
static inline int navsync_inflate_init(z_stream *s, int window_bits) {
    return inflateInit2(s, -window_bits);
}
#endif
