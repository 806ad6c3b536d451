#ifndef SHOWBATCH_CGPGME_SHIM_H
#define SHOWBATCH_CGPGME_SHIM_H
/* GPGME from the Debian package libgpgme-dev, for OpenPGP-encrypted outputs. */
#include <gpgme.h>
#endif
