#ifndef NAVSYNC_CUV_SHIM_H
#define NAVSYNC_CUV_SHIM_H
#include <uv.h>
/* malloc_trim: the runtime hands memory freed after bursts (joins, catch-ups) back to
   the system when it is idle; glibc's <malloc.h> is not in Swift's Glibc module. */
#include <malloc.h>
/* uv_loop_configure is variadic, which Swift cannot call: the one use, made a function. */
static inline int navsync_uv_measure_idle_time(uv_loop_t *loop) {
    return uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
}
#endif
