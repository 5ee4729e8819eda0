#ifndef NAVSYNC_CUV_SHIM_H
#define NAVSYNC_CUV_SHIM_H
#include <uv.h>
/* malloc_trim: the runtime hands memory freed after bursts (joins, catch-ups) back to
   the system when it is idle; glibc's <malloc.h> is not in Swift's Glibc module. */
#include <malloc.h>
#endif
