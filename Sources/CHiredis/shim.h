#ifndef NAVSYNC_CHIREDIS_SHIM_H
#define NAVSYNC_CHIREDIS_SHIM_H
/* Only hiredis's RESP reader and command formatter are used: navsync drives the
   socket itself on its libuv loop (its own timeouts, heartbeat and reconnects). */
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#endif
