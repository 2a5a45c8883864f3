#ifndef CDEBUGINFOD_H
#define CDEBUGINFOD_H

/// 1 when libdebuginfod.so.1 could be loaded (once per process), else 0.
int sa_debuginfod_available(void);

/// Fetches (or finds in libdebuginfod's cache) the debug file of a build-id given as hex
/// text, from the servers in $DEBUGINFOD_URLS. Gives up after `max_seconds` wall time
/// however the servers behave. Returns 0 and a malloc'd path in *path, or -errno
/// (-ENOSYS: no library or no URLs; -ENOENT: no server has it; -ETIME: deadline).
int sa_debuginfod_find_debuginfo(const char *build_id_hex, double max_seconds, char **path);

#endif
