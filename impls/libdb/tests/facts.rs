//! What the harness rests on, observed on real libdb rather than read from its source.

use loadbearing_libdb::db::{Code, Env, Flavour};

/// A snapshot transaction's snapshot is taken at its first page access, not at
/// `DB_ENV->txn_begin`: hence the harness's read of a never-written btree at begin.
#[test]
fn a_snapshot_is_taken_at_the_first_page_access() {
    let mut env = Env::open(Flavour::Prefix).unwrap();
    let db = env.database("kv", 0).unwrap();
    let other = env.database("other", 0).unwrap();
    let setup = env.begin(false).unwrap();
    env.put(db, &setup, "k", 1).unwrap();
    env.put(other, &setup, "o", 1).unwrap();
    env.commit(setup).unwrap();

    let lazy = env.begin(true).unwrap();
    let pinned = env.begin(true).unwrap();
    assert_eq!(env.get(other, &pinned, "o").unwrap(), Some(1));
    let writer = env.begin(false).unwrap();
    env.put(db, &writer, "k", 2).unwrap();
    env.commit(writer).unwrap();
    assert_eq!(
        env.get(db, &lazy, "k").unwrap(),
        Some(2),
        "begun before, reads after"
    );
    assert_eq!(
        env.get(db, &pinned, "k").unwrap(),
        Some(1),
        "its snapshot predates it"
    );
    env.commit(lazy).unwrap();
    env.commit(pinned).unwrap();
}

/// Write locks and versions are per page: two snapshot writers of different keys on one leaf
/// page collide (first updater wins by page), where the model's first-updater-wins is per key.
#[test]
fn two_writers_of_one_page_collide_even_on_different_keys() {
    let mut env = Env::open(Flavour::Fix).unwrap();
    let db = env.database("kv", 0).unwrap();
    let setup = env.begin(false).unwrap();
    env.put(db, &setup, "alice", 1).unwrap();
    env.put(db, &setup, "bob", 1).unwrap();
    env.commit(setup).unwrap();
    let t1 = env.begin(true).unwrap();
    let t2 = env.begin(true).unwrap();
    env.put(db, &t1, "alice", 0).unwrap();
    let refused = env.put(db, &t2, "bob", 0).unwrap_err();
    assert!(
        matches!(refused.code, Code::LockNotGranted | Code::LockDeadlock),
        "{refused}"
    );
    env.abort(t2).unwrap();
    env.commit(t1).unwrap();
}

#[test]
fn each_flavour_is_its_own_libdb_5_3_34() {
    for f in Flavour::ALL {
        assert!(f.version().contains("5.3.34"), "{f}: {}", f.version());
        let env = Env::open(f).unwrap();
        drop(env);
    }
}
