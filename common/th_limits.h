/* The sizes of tunehub's fixed buffers, in one place: the few that are bounds of their own (what an
 * operator's path, a message, a key or a name may hold) and the ones that derive from them (a path
 * under a data directory is the directory and a name; a message that names every valid target is a
 * list and a reason). A buffer is declared with these macros, or with an expression of them that
 * says what it holds, never with a number sized by eye against another buffer. Each size counts the
 * terminating NUL. */
#ifndef TH_LIMITS_H
#define TH_LIMITS_H

/* ---- paths ---- */
/* A path the operator gives: --data-dir, --token-file, --web-dir, a --db URL. Longer ones are
 * refused where they are parsed. */
#define TH_DIR_MAX 1024
/* What the store and the daemon add to a data directory for their own folders and files, separator
 * included: "/artifacts/ab", "/tmp", "/tunehub.db", "/daemon.lock", "/work/worker-<pid>". */
#define TH_SUFFIX_MAX 64
/* A folder or file of the store's own under a data directory (artifacts_dir, tmp_dir, a lock file).
 */
#define TH_SUBDIR_MAX (TH_DIR_MAX + TH_SUFFIX_MAX)
/* One path component, separator included: a file name read from a folder (NAME_MAX 255), a digest's
 * file, a temp file's name, a host name. */
#define TH_NAME_MAX 256
/* A file in one of the store's folders: an artifact (artifacts/ab/<64 hex>), a temp file, an entry
 * that a sweep reads from a folder. store_artifact_path and store_tmp_file write one. */
#define TH_PATH_MAX (TH_SUBDIR_MAX + TH_NAME_MAX)

/* ---- messages ---- */
/* The reason one step failed, as a library call writes it (db err, store_errmsg, a parse error). */
#define TH_ERR_MAX 1024
/* A message that wraps such a reason with what was being done ("cannot open the store X: <err>"),
 * and a log line. */
#define TH_MSG_MAX (2 * TH_ERR_MAX)
/* A one-line reason a request is refused, naming the limit or the expected form. */
#define TH_WHY_MAX 512
/* A list of the valid values of a parameter (every target name a daemon accepts). */
#define TH_LIST_MAX 2048
/* A refusal that names every valid value: a reason and the list. */
#define TH_WHY_LIST_MAX (TH_WHY_MAX + TH_LIST_MAX)

/* ---- keys and names ---- */
/* A target string ("llvm -mcpu=znver3", "cuda -arch=sm_90"). */
#define TH_TARGET_MAX 256
/* A workload key, or every field of a model key as text. */
#define TH_KEY_MAX 512
/* A digest as hex: 64 hex digits of SHA-256. */
#define TH_HEX_MAX (64 + 1)
/* A digest as an OCI reference: "sha256:" and the hex. */
#define TH_DIGEST_MAX (7 + 64 + 1)
/* An entity tag: the digest reference in double quotes. */
#define TH_ETAG_MAX (TH_DIGEST_MAX + 2)

#endif
