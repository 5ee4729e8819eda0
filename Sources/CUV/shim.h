#ifndef NAVSYNC_CUV_SHIM_H
#define NAVSYNC_CUV_SHIM_H
#include <uv.h>
#endif
