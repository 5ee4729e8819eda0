#ifndef NAVSYNC_CCURL_SHIM_H
#define NAVSYNC_CCURL_SHIM_H
/* libcurl (Debian's libcurl4-openssl-dev): navsyncd's outgoing HTTP, the backend's hooks
   and webhooks, through the multi-socket interface on the libuv loop. curl_easy_setopt,
   curl_multi_setopt and curl_easy_getinfo are variadic, which Swift does not import:
   they are wrapped below by the type of their argument. */
#include <curl/curl.h>

static inline CURLcode navsync_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode navsync_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode navsync_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode navsync_easy_setopt_write(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode navsync_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode navsync_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode navsync_multi_setopt_pointer(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode navsync_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode navsync_multi_socket_function(CURLM *m, int (*f)(CURL *, curl_socket_t, int, void *, void *)) {
    return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f);
}
static inline CURLMcode navsync_multi_timer_function(CURLM *m, int (*f)(CURLM *, long, void *)) {
    return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f);
}
/* What curl_multi_info_read gives for a finished transfer. */
static inline CURLcode navsync_msg_result(CURLMsg *msg) { return msg->data.result; }
#endif
