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
/* The SSH host key check: showbatch reads known_hosts itself, as OpenSSH does. */
typedef int (*sb_sshkey_callback)(CURL *easy, const struct curl_khkey *knownkey, const struct curl_khkey *foundkey,
                                  enum curl_khmatch match, void *context);
static inline CURLcode sb_easy_setopt_sshkey(CURL *handle, sb_sshkey_callback value) {
    return curl_easy_setopt(handle, CURLOPT_SSH_KEYFUNCTION, value);
}
static inline CURLMcode sb_multi_poll(CURLM *handle, int timeout_ms, int *ready) {
    return curl_multi_poll(handle, NULL, 0, timeout_ms, ready);
}
/* CURLMsg.data is a union; Swift reads the result through this. */
static inline CURLcode sb_message_result(CURLMsg *message) {
    return message->data.result;
}
#endif
