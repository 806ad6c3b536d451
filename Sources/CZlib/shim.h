// zlib from the Debian package zlib1g-dev, for gzip outputs.
#include <zlib.h>
