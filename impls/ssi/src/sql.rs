//! The statements the SQL engines (PostgreSQL, MariaDB, SQLite) run for a workload's predicate
//! reads, updates and deletes, as a person writes them for a `kv (k, v, w)` table: one text for
//! all three, each engine giving its own placeholders (`$1`, `?`, `?1`).

use loadbearing_workload::workload::{Pred, Set};

use crate::program::{Change, Rows};

/// `SELECT` of the rows a predicate matches, with their writers, in key order.
pub fn select(pred: Pred) -> String {
    format!("SELECT k, v, w FROM kv{} ORDER BY k", condition(pred))
}

/// ` WHERE v % 3 = 0`, or nothing for every row.
fn condition(pred: Pred) -> String {
    pred.sql("v")
        .map_or(String::new(), |c| format!(" WHERE {c}"))
}

/// The `WHERE` clause of a statement targeting `rows`, with `key` as the key's placeholder
/// where it is one key, and that key.
fn target<'r>(rows: &'r Rows, key: &str) -> (String, Option<&'r str>) {
    match rows {
        Rows::Key(k) => (format!(" WHERE k = {key}"), Some(k)),
        Rows::Where(p) => (condition(*p), None),
    }
}

/// One `UPDATE` of the targeted rows (`writer` and `key` the placeholders of the writer column
/// and the key), `returning` appended where the engine returns the rows it changed, and the
/// key to bind, if any.
pub fn update<'r>(
    rows: &'r Rows,
    set: Set,
    writer: &str,
    key: &str,
    returning: &str,
) -> (String, Option<&'r str>) {
    let (condition, bound) = target(rows, key);
    (
        format!(
            "UPDATE kv SET v = {}, w = {writer}{condition}{returning}",
            set.sql("v")
        ),
        bound,
    )
}

/// One `DELETE` of the targeted rows, returning each row's key and writer (the version it
/// removes), and the key to bind, if any.
pub fn delete<'r>(rows: &'r Rows, key: &str) -> (String, Option<&'r str>) {
    let (condition, bound) = target(rows, key);
    (format!("DELETE FROM kv{condition} RETURNING k, w"), bound)
}

/// The version log's row of a deletion (a version too, written by the deleting transaction),
/// with the engine's three placeholders for key, writer and the writer of the row removed.
pub fn log_deletion(placeholders: [&str; 3]) -> String {
    let [k, w, prev] = placeholders;
    format!("INSERT INTO kv_versions (k, w, prev) VALUES ({k}, {w}, {prev})")
}

/// The rows a delete removed, in key order.
pub fn deleted(keys: impl IntoIterator<Item = String>) -> Vec<Change> {
    let mut changed: Vec<Change> = keys
        .into_iter()
        .map(|key| Change {
            key,
            value: None,
            replaced: None,
        })
        .collect();
    changed.sort_by(|a, b| a.key.cmp(&b.key));
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_workload::workload::Cmp;

    #[test]
    fn statements_read_as_a_person_writes_them() {
        let eq20 = Pred::Compare(Cmp::Eq, 20);
        assert_eq!(
            select(eq20),
            "SELECT k, v, w FROM kv WHERE v = 20 ORDER BY k"
        );
        assert_eq!(select(Pred::All), "SELECT k, v, w FROM kv ORDER BY k");
        assert_eq!(
            update(
                &Rows::Where(Pred::All),
                Set::Add(10),
                "$1",
                "$2",
                " RETURNING k, v"
            ),
            (
                "UPDATE kv SET v = v + 10, w = $1 RETURNING k, v".to_string(),
                None
            )
        );
        assert_eq!(
            update(&Rows::Key("x".into()), Set::To(12), "?", "?", ""),
            (
                "UPDATE kv SET v = 12, w = ? WHERE k = ?".to_string(),
                Some("x")
            )
        );
        assert_eq!(
            delete(&Rows::Where(eq20), "?1"),
            (
                "DELETE FROM kv WHERE v = 20 RETURNING k, w".to_string(),
                None
            )
        );
        assert_eq!(
            log_deletion(["$1", "$2", "$3"]),
            "INSERT INTO kv_versions (k, w, prev) VALUES ($1, $2, $3)"
        );
    }
}
