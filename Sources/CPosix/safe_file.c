#define _GNU_SOURCE
#include "safe_file.h"

#include <fcntl.h>
#include <sys/vfs.h>

long sa_fstatfs_type(int fd)
{
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0)
        return -1;
    return (long)fs.f_type;
}

int sa_o_path(void) { return O_PATH; }
