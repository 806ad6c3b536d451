#ifndef SHOWBATCH_COPENSSL_SHIM_H
#define SHOWBATCH_COPENSSL_SHIM_H
/* OpenSSL's libcrypto from the Debian package libssl-dev: AES-256-GCM, HMAC, random bytes. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#endif
