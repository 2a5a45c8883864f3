// libdebuginfod is opened with dlopen, as libdw itself does, so the agent still runs (with
// debuginfod off) where libdebuginfod1 is not installed, and builds without its headers.
#define _GNU_SOURCE
#include "CDebuginfod.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct debuginfod_client debuginfod_client;
typedef int (*progress_fn)(debuginfod_client *, long, long);

static struct {
    debuginfod_client *(*begin)(void);
    void (*end)(debuginfod_client *);
    int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
    void (*set_progressfn)(debuginfod_client *, progress_fn);
    void (*set_user_data)(debuginfod_client *, void *);
    void *(*get_user_data)(debuginfod_client *);
    int loaded;
} lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    void *handle = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) return;
    lib.begin = dlsym(handle, "debuginfod_begin");
    lib.end = dlsym(handle, "debuginfod_end");
    lib.find_debuginfo = dlsym(handle, "debuginfod_find_debuginfo");
    lib.set_progressfn = dlsym(handle, "debuginfod_set_progressfn");
    lib.set_user_data = dlsym(handle, "debuginfod_set_user_data");
    lib.get_user_data = dlsym(handle, "debuginfod_get_user_data");
    lib.loaded = lib.begin && lib.end && lib.find_debuginfo && lib.set_progressfn && lib.set_user_data
        && lib.get_user_data;
}

int sa_debuginfod_available(void) {
    pthread_once(&once, load);
    return lib.loaded;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct deadline {
    int64_t at;
    int expired;
};

// libdebuginfod calls this about once a second while a transfer is under way, also when a
// server accepts and then says nothing: a non-zero return aborts the whole query.
static int check_deadline(debuginfod_client *client, long a, long b) {
    (void)a;
    (void)b;
    struct deadline *deadline = lib.get_user_data(client);
    if (deadline && now_ns() > deadline->at) {
        deadline->expired = 1;
        return 1;
    }
    return 0;
}

int sa_debuginfod_find_debuginfo(const char *build_id_hex, double max_seconds, char **path) {
    *path = NULL;
    if (!sa_debuginfod_available()) return -ENOSYS;
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (!urls || !*urls) return -ENOSYS;
    debuginfod_client *client = lib.begin();
    if (!client) return -ENOMEM;
    struct deadline deadline = { now_ns() + (int64_t)(max_seconds * 1e9), 0 };
    lib.set_user_data(client, &deadline);
    lib.set_progressfn(client, check_deadline);
    // Length 0: the build-id is hex text.
    int fd = lib.find_debuginfo(client, (const unsigned char *)build_id_hex, 0, path);
    lib.end(client);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    free(*path);
    *path = NULL;
    return deadline.expired ? -ETIME : fd;
}
