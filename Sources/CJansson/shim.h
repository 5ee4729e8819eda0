#ifndef NAVSYNC_CJANSSON_SHIM_H
#define NAVSYNC_CJANSSON_SHIM_H
#include <jansson.h>

/* jansson's type tests are function-like macros, which Swift does not import.
   These wrappers give Swift the same tests as real functions. */
static inline int navsync_json_type(const json_t *v) { return (int)json_typeof(v); }
static inline int navsync_json_error_code(const json_error_t *e) { return (int)json_error_code(e); }
#endif
