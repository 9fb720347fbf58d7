/*
 * A thin C face of Berkeley DB 5.3 (Debian's libdb5.3-dev) for the `bdb` engine
 * (src/bdb.rs): Berkeley DB's handles are structs of function pointers, which Rust cannot
 * call without their layout; these functions call them and return Berkeley DB's own codes
 * (0, DB_NOTFOUND, DB_LOCK_DEADLOCK, DB_LOCK_NOTGRANTED, an errno), named by lb_bdb_strerror.
 *
 * One private environment in a folder (its regions in this process's memory), transactional,
 * with multiversion concurrency control so that a transaction begun with DB_TXN_SNAPSHOT
 * reads the committed versions of its start without read locks (snapshot isolation: no SSI in
 * this release). Writers take page locks; a writer that meets a page changed since its
 * snapshot fails with DB_LOCK_DEADLOCK (an update conflict). A snapshot transaction never
 * waits for a lock (DB_TXN_NOWAIT: DB_LOCK_NOTGRANTED at once): with the wait, 5.3.28 crashed
 * in __bam_get_root when a writer waiting for a page another transaction had written woke up
 * after that commit (lost_update's interleavings, a private free-threaded environment). The
 * detector and the timeout below stay for the loading transactions.
 */
#include <db.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Every lock wait ends after this many microseconds (DB_LOCK_NOTGRANTED): nothing hangs. */
#define LB_LOCK_TIMEOUT_US 10000000

int lb_bdb_env_open(const char *home, DB_ENV **out) {
    DB_ENV *env = NULL;
    int rc = db_env_create(&env, 0);
    if (rc != 0) return rc;
    if ((rc = env->set_lk_detect(env, DB_LOCK_DEFAULT)) != 0 ||
        (rc = env->set_timeout(env, LB_LOCK_TIMEOUT_US, DB_SET_LOCK_TIMEOUT)) != 0 ||
        (rc = env->set_cachesize(env, 0, 4 * 1024 * 1024, 1)) != 0 ||
        (rc = env->open(env, home,
                        DB_CREATE | DB_PRIVATE | DB_THREAD | DB_INIT_TXN | DB_INIT_LOCK |
                            DB_INIT_LOG | DB_INIT_MPOOL | DB_MULTIVERSION,
                        0)) != 0) {
        env->close(env, 0);
        return rc;
    }
    *out = env;
    return 0;
}

void lb_bdb_env_close(DB_ENV *env) { env->close(env, 0); }

/* A btree database `name` in the file `file` of the environment, created if absent. */
int lb_bdb_db_open(DB_ENV *env, const char *file, const char *name, DB **out) {
    DB *db = NULL;
    int rc = db_create(&db, env, 0);
    if (rc != 0) return rc;
    rc = db->open(db, NULL, file, name, DB_BTREE,
                  DB_CREATE | DB_THREAD | DB_AUTO_COMMIT | DB_MULTIVERSION, 0600);
    if (rc != 0) {
        db->close(db, 0);
        return rc;
    }
    *out = db;
    return 0;
}

void lb_bdb_db_close(DB *db) { db->close(db, 0); }

/* Removes every record, one by one in one transaction (DB->truncate under multiversion
 * concurrency control left pages a later writer crashed on). */
int lb_bdb_db_clear(DB_ENV *env, DB *db) {
    DB_TXN *txn = NULL;
    int rc = env->txn_begin(env, NULL, &txn, 0);
    if (rc != 0) return rc;
    DBC *cursor = NULL;
    if ((rc = db->cursor(db, txn, &cursor, 0)) != 0) {
        txn->abort(txn);
        return rc;
    }
    DBT k, v;
    memset(&k, 0, sizeof k);
    memset(&v, 0, sizeof v);
    k.flags = DB_DBT_REALLOC;
    v.flags = DB_DBT_REALLOC;
    while ((rc = cursor->get(cursor, &k, &v, DB_NEXT)) == 0) {
        if ((rc = cursor->del(cursor, 0)) != 0) break;
    }
    free(k.data);
    free(v.data);
    int closed = cursor->close(cursor);
    if (rc == DB_NOTFOUND) rc = closed;
    if (rc != 0) {
        txn->abort(txn);
        return rc;
    }
    return txn->commit(txn, 0);
}

/* A transaction; `snapshot` nonzero: DB_TXN_SNAPSHOT. */
int lb_bdb_begin(DB_ENV *env, int snapshot, DB_TXN **out) {
    return env->txn_begin(env, NULL, out, snapshot ? DB_TXN_SNAPSHOT | DB_TXN_NOWAIT : 0);
}

int lb_bdb_commit(DB_TXN *txn) { return txn->commit(txn, 0); }

int lb_bdb_abort(DB_TXN *txn) { return txn->abort(txn); }

static void key_dbt(DBT *k, const char *key) {
    memset(k, 0, sizeof *k);
    k->data = (void *)key;
    k->size = (u_int32_t)strlen(key);
}

/* The value of `key` (NUL-terminated) into val[0..cap]; its length in *len. */
int lb_bdb_get(DB *db, DB_TXN *txn, const char *key, unsigned char *val, unsigned cap,
               unsigned *len) {
    DBT k, v;
    key_dbt(&k, key);
    memset(&v, 0, sizeof v);
    v.data = val;
    v.ulen = cap;
    v.flags = DB_DBT_USERMEM;
    int rc = db->get(db, txn, &k, &v, 0);
    if (rc == 0) *len = v.size;
    return rc;
}

int lb_bdb_put(DB *db, DB_TXN *txn, const char *key, const unsigned char *val, unsigned len) {
    DBT k, v;
    key_dbt(&k, key);
    memset(&v, 0, sizeof v);
    v.data = (void *)val;
    v.size = len;
    return db->put(db, txn, &k, &v, 0);
}

int lb_bdb_del(DB *db, DB_TXN *txn, const char *key) {
    DBT k;
    key_dbt(&k, key);
    return db->del(db, txn, &k, 0);
}

/* Every key of the database in order, each followed by a NUL, into out[0..cap]; the bytes
 * written in *len. ENOMEM if they do not fit. */
int lb_bdb_scan(DB *db, DB_TXN *txn, char *out, unsigned cap, unsigned *len) {
    DBC *cursor = NULL;
    int rc = db->cursor(db, txn, &cursor, 0);
    if (rc != 0) return rc;
    DBT k, v;
    memset(&k, 0, sizeof k);
    memset(&v, 0, sizeof v);
    /* Free-threaded handles return records only into memory the caller owns. */
    k.flags = DB_DBT_REALLOC;
    v.flags = DB_DBT_REALLOC;
    unsigned used = 0;
    while ((rc = cursor->get(cursor, &k, &v, DB_NEXT)) == 0) {
        if (used + k.size + 1 > cap) {
            rc = ENOMEM;
            break;
        }
        memcpy(out + used, k.data, k.size);
        used += k.size;
        out[used++] = '\0';
    }
    free(k.data);
    free(v.data);
    int closed = cursor->close(cursor);
    if (rc == DB_NOTFOUND) rc = closed;
    *len = used;
    return rc;
}

const char *lb_bdb_strerror(int rc) { return db_strerror(rc); }

/* The library's version line, as the engine's column names it. */
const char *lb_bdb_version(void) { return db_version(NULL, NULL, NULL); }
