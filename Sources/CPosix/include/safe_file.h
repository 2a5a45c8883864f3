#ifndef SAFE_FILE_H
#define SAFE_FILE_H

/// fstatfs(fd)'s f_type (a file system magic number), or -1 with errno. Swift's Glibc module
/// does not export <sys/vfs.h>.
long sa_fstatfs_type(int fd);

/// open(2)'s O_PATH, which Swift's Glibc module does not export (it needs _GNU_SOURCE): a
/// descriptor naming a file without opening it.
int sa_o_path(void);

#endif
