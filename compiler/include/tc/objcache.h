/* The object cache: compiled objects kept once per machine and user in $XDG_CACHE_HOME/tunehub (else
 * $HOME/.cache/tunehub, or the folder $TUNEHUB_CACHE_DIR names), each under the sha256 of everything that
 * made it, so that a later process (the next CLI build, a tuning job that re-builds a measured config, a
 * daemon serving another batch) takes the object instead of compiling it again. Backend-neutral: link.c
 * keeps the runtime object here, the LLVM backend one object per module it emits. The folder is used only
 * when it is this user's own and no one else may write to it (nor its parent); TUNEHUB_NO_CACHE set
 * (non-empty) turns the cache off. Deleting the folder is always safe. Kernel objects are kept under a size
 * cap (TUNEHUB_CACHE_MAX_MB, default 1024), least recently used first out. Never prints; thread-safe. */
#ifndef TC_OBJCACHE_H
#define TC_OBJCACHE_H

#include <stddef.h>

#include "th_status.h"

/* The cache folder ($TUNEHUB_CACHE_DIR, else $XDG_CACHE_HOME/tunehub, else $HOME/.cache/tunehub; absolute
 * paths only) in dir, made 0700 when missing; 0
 * when there is none to use: the cache is off, no home is known, or the folder (or its parent) is not this
 * user's own or others may write to it. */
int tc_objcache_dir(char *dir, size_t n);
/* How many objects this process looked up in the cache, and how many of them it found there. */
void tc_objcache_counts(unsigned *hits, unsigned *lookups);
/* The cache's file for the object whose key is the 32-byte digest, named prefix + hex + suffix
 * ("k-", ".o"), in path; 0 when there is no private cache folder to use (nothing is written then). The
 * folder is made 0700 when missing. */
int tc_objcache_path(const char *prefix, const unsigned char digest[32], const char *suffix, char *path,
                     size_t n);
/* 1 when path holds a non-empty regular file of this user's that starts as an ELF object does; its
 * modification time is brought to now (the cap removes the oldest first). */
int tc_objcache_hit(const char *path);
/* Copies the cached object at path to dst: TH_ERR_NOT_FOUND when the cached file cannot be read whole,
 * TH_ERR_IO (errno says why) when dst cannot be written. */
th_status tc_objcache_copy_out(const char *path, const char *dst);
/* Keeps n bytes as the object at path: a file of its own first, then a rename, so that a process that
 * reads it never sees half of it; then, now and then, removes the oldest kernel objects while the folder
 * holds more than the cap. Failures leave the cache as it was (it is only a cache). */
void tc_objcache_store(const char *path, const void *data, size_t n);
/* The cap on the folder's kernel objects, in bytes (TUNEHUB_CACHE_MAX_MB, 1 .. 1048576; default 1024). */
size_t tc_objcache_cap(void);
/* Removes the oldest files named prefix* in the cache folder of path until they hold at most cap bytes;
 * returns how many it removed. */
int tc_objcache_prune(const char *path, const char *prefix, size_t cap);

#endif
