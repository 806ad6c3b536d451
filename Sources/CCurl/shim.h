#ifndef SHOWBATCH_CCURL_SHIM_H
#define SHOWBATCH_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and friends are variadic, which Swift cannot call: typed wrappers. */
static inline CURLcode sb_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode sb_easy_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode sb_easy_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
typedef size_t (*sb_data_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode sb_easy_setopt_callback(CURL *handle, CURLoption option, sb_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode sb_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode sb_easy_getinfo_offset(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode sb_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode sb_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}
static inline CURLSHcode sb_share_setopt_long(CURLSH *handle, CURLSHoption option, long value) {
    return curl_share_setopt(handle, option, value);
}
/* CURLMsg.data is a union; Swift reads the result through this. */
static inline CURLcode sb_message_result(CURLMsg *message) {
    return message->data.result;
}
#endif
