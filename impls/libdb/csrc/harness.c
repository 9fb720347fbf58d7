/*
 * The harness's side of libdb: a handful of flat calls over libdb's method tables (env, db,
 * txn begin/get/put/scan/commit/abort), and the two hooks that reach points inside
 * DB_TXN->commit without touching libdb's source.
 *
 * The same file is compiled once per flavour (prefix, fix, readerunfixed) with LB_FLAVOUR set,
 * so every exported name carries the flavour (lbdb_fix_txn_begin); the build keeps only those
 * names global in each flavour's object, so the three copies of libdb live in one process.
 *
 * The hooks are link-time wraps (ld --wrap) of calls that cross libdb's object files:
 *   __lock_vec with a single DB_LOCK_PUT_READ request: __txn_commit releasing the read locks
 *     of a transaction that wrote, after its pivot check passed and before its commit record;
 *   __lock_sicommit with is_commit set: __txn_end persisting the SIREAD markers, after the
 *     commit record and before the status becomes TXN_COMMITTED.
 * Each calls lbdb_commit_point (defined by the Rust side), which decides whether the calling
 * thread is a transaction under a schedule and, if so, pauses it there.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

#define LB_CAT2(a, b) a##b
#define LB_CAT(a, b) LB_CAT2(a, b)
#define LB(name) LB_CAT(LB_CAT(LB_CAT(lbdb_, LB_FLAVOUR), _), name)

/* The points, as the Rust side numbers them. */
#define LB_POINT_CHECKED 1
#define LB_POINT_RECORDED 2

/* Defined in Rust (loadbearing_libdb::hooks); shared by the three flavours. */
extern void lbdb_commit_point(int point);

/* libdb's internal signatures, with its internal handle types as opaque pointers. */
int __real___lock_vec(void *env, void *locker, u_int32_t flags, DB_LOCKREQ *list, int nlist,
    DB_LOCKREQ **elistp);
int __real___lock_sicommit(void *env, void *locker, int is_commit);

int
__wrap___lock_vec(void *env, void *locker, u_int32_t flags, DB_LOCKREQ *list, int nlist,
    DB_LOCKREQ **elistp)
{
	if (nlist == 1 && list[0].op == DB_LOCK_PUT_READ)
		lbdb_commit_point(LB_POINT_CHECKED);
	return (__real___lock_vec(env, locker, flags, list, nlist, elistp));
}

int
__wrap___lock_sicommit(void *env, void *locker, int is_commit)
{
	if (is_commit)
		lbdb_commit_point(LB_POINT_RECORDED);
	return (__real___lock_sicommit(env, locker, is_commit));
}

/* What a return code means to the harness: stable numbers, whatever db.h assigns. */
enum lb_kind {
	LB_OK = 0,
	LB_NOTFOUND = 1,
	LB_SNAPSHOT_CONFLICT = 2,
	LB_SNAPSHOT_UNSAFE = 3,
	LB_LOCK_NOTGRANTED = 4,
	LB_LOCK_DEADLOCK = 5,
	LB_OTHER = 6
};

int
LB(classify)(int ret)
{
	switch (ret) {
	case 0:
		return (LB_OK);
	case DB_NOTFOUND:
		return (LB_NOTFOUND);
	case DB_SNAPSHOT_CONFLICT:
		return (LB_SNAPSHOT_CONFLICT);
	case DB_SNAPSHOT_UNSAFE:
		return (LB_SNAPSHOT_UNSAFE);
	case DB_LOCK_NOTGRANTED:
		return (LB_LOCK_NOTGRANTED);
	case DB_LOCK_DEADLOCK:
		return (LB_LOCK_DEADLOCK);
	default:
		return (LB_OTHER);
	}
}

const char *
LB(strerror)(int ret)
{
	return (db_strerror(ret));
}

const char *
LB(version)(void)
{
	return (db_version(NULL, NULL, NULL));
}

/*
 * An environment wholly in memory: private regions, in-memory logs, in-memory databases.
 * Transactions never wait for a lock (DB_TXN_NOWAIT at begin): a write meeting another's write
 * lock fails DB_LOCK_NOTGRANTED at once, as first-updater-wins, and no step of a schedule can
 * block another.
 */
int
LB(env_open)(DB_ENV **out)
{
	DB_ENV *env;
	int ret;

	*out = NULL;
	if ((ret = db_env_create(&env, 0)) != 0)
		return (ret);
	if ((ret = env->log_set_config(env, DB_LOG_IN_MEMORY, 1)) != 0 ||
	    (ret = env->set_lg_bsize(env, 8 * 1024 * 1024)) != 0 ||
	    (ret = env->set_cachesize(env, 0, 4 * 1024 * 1024, 1)) != 0 ||
	    (ret = env->open(env, NULL,
	    DB_CREATE | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL |
	    DB_INIT_TXN | DB_PRIVATE | DB_THREAD, 0)) != 0) {
		(void)env->close(env, 0);
		return (ret);
	}
	*out = env;
	return (0);
}

int
LB(env_close)(DB_ENV *env)
{
	return (env->close(env, 0));
}

/* An in-memory btree named `name`, multiversion; page_size 0 keeps libdb's default. */
int
LB(db_open)(DB_ENV *env, const char *name, u_int32_t page_size, DB **out)
{
	DB *db;
	int ret;

	*out = NULL;
	if ((ret = db_create(&db, env, 0)) != 0)
		return (ret);
	if (page_size != 0 && (ret = db->set_pagesize(db, page_size)) != 0) {
		(void)db->close(db, 0);
		return (ret);
	}
	if ((ret = db->open(db, NULL, NULL, name, DB_BTREE,
	    DB_CREATE | DB_AUTO_COMMIT | DB_MULTIVERSION | DB_THREAD, 0)) != 0) {
		(void)db->close(db, 0);
		return (ret);
	}
	*out = db;
	return (0);
}

int
LB(db_close)(DB *db)
{
	return (db->close(db, 0));
}

/* snapshot != 0: a DB_TXN_SNAPSHOT (SSI) transaction; else a plain one (setup, final reads). */
int
LB(txn_begin)(DB_ENV *env, int snapshot, DB_TXN **out)
{
	u_int32_t flags = DB_TXN_NOWAIT | DB_TXN_WRITE_NOSYNC;

	if (snapshot)
		flags |= DB_TXN_SNAPSHOT;
	return (env->txn_begin(env, NULL, out, flags));
}

int
LB(txn_commit)(DB_TXN *txn)
{
	return (txn->commit(txn, 0));
}

int
LB(txn_abort)(DB_TXN *txn)
{
	return (txn->abort(txn));
}

/* Values are 8-byte integers in native order; *found is 0 when the key is absent. */
int
LB(get)(DB *db, DB_TXN *txn, const char *key, int64_t *value, int *found)
{
	DBT k, d;
	int ret;

	memset(&k, 0, sizeof(k));
	memset(&d, 0, sizeof(d));
	k.data = (void *)key;
	k.size = (u_int32_t)strlen(key);
	d.data = value;
	d.ulen = sizeof(*value);
	d.flags = DB_DBT_USERMEM;
	*found = 0;
	ret = db->get(db, txn, &k, &d, 0);
	if (ret == 0 && d.size == sizeof(*value))
		*found = 1;
	else if (ret == 0)
		ret = EINVAL; /* a filler or a foreign value: not ours to read */
	return (ret == DB_NOTFOUND ? 0 : ret);
}

int
LB(put)(DB *db, DB_TXN *txn, const char *key, const void *data, u_int32_t size)
{
	DBT k, d;

	memset(&k, 0, sizeof(k));
	memset(&d, 0, sizeof(d));
	k.data = (void *)key;
	k.size = (u_int32_t)strlen(key);
	d.data = (void *)data;
	d.size = size;
	return (db->put(db, txn, &k, &d, 0));
}

/*
 * Every key of the database whose value is an 8-byte integer, in key order, each followed by
 * '\n', into buf (cap bytes; *len set to the bytes needed, so a short buffer can be retried).
 */
int
LB(scan)(DB *db, DB_TXN *txn, char *buf, size_t cap, size_t *len)
{
	DBC *c;
	DBT k, d;
	int ret, t_ret;

	*len = 0;
	if ((ret = db->cursor(db, txn, &c, 0)) != 0)
		return (ret);
	memset(&k, 0, sizeof(k));
	memset(&d, 0, sizeof(d));
	while ((ret = c->get(c, &k, &d, DB_NEXT)) == 0) {
		if (d.size != sizeof(int64_t))
			continue;
		if (*len + k.size + 1 <= cap) {
			memcpy(buf + *len, k.data, k.size);
			buf[*len + k.size] = '\n';
		}
		*len += k.size + 1;
	}
	if (ret == DB_NOTFOUND)
		ret = 0;
	if ((t_ret = c->close(c)) != 0 && ret == 0)
		ret = t_ret;
	return (ret);
}

/* The database's leaf page count (DB->stat), to check a layout put keys on separate pages. */
int
LB(leaf_pages)(DB *db, DB_TXN *txn, u_int32_t *out)
{
	DB_BTREE_STAT *sp;
	int ret;

	*out = 0;
	if ((ret = db->stat(db, txn, &sp, 0)) != 0)
		return (ret);
	*out = sp->bt_leaf_pg;
	free(sp);
	return (0);
}
