#ifndef SHOWBATCH_CLINUX_SHIM_H
#define SHOWBATCH_CLINUX_SHIM_H
/* Linux calls Swift cannot make itself: prctl is variadic. From glibc's headers (libc6-dev). */
#include <sys/prctl.h>
#include <sys/resource.h>

/* No core file (RLIMIT_CORE 0, which systemd-coredump and apport honour too) and not dumpable
   (the kernel writes no core at all, and only root may read the process's memory).
   0 when both were set. */
static inline int showbatch_keep_memory_private(void) {
    struct rlimit none = { 0, 0 };
    int limited = setrlimit(RLIMIT_CORE, &none);
    int undumpable = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    return limited | undumpable;
}
#endif
