//! Against a real Apache Kafka 4.4 broker, started by the tests (see `harness`).

mod common;

use std::sync::Arc;

use common::*;
use loadbearing_impls_kafka::group_commit::{CommitError, Fence};
use loadbearing_impls_kafka::harness::broker_or_skip;
use loadbearing_impls_kafka::kafka::{LiveGroupMetadata, PlainProducer};

#[test]
fn issue_732_plain_producer_stale_write_lands() {
    let Some(broker) = broker_or_skip("issue_732_plain_producer_stale_write_lands") else {
        return;
    };
    let s = Scenario::new(broker, "plain732");
    let (_a, mut zombie, _b, _owner) = overlap(&s, |a| {
        let p = PlainProducer::new(&s.bootstrap, &s.snapshots, 0).unwrap();
        let mut f = s.flow_over(a, p, Arc::new(LiveGroupMetadata(a.consumer.clone())), |c| {
            c.fence(Fence::Unfenced)
        });
        f.mark_zombie();
        f
    });
    zombie.flush().expect("nothing stops the plain producer");
    assert_eq!(
        s.recovered_key(),
        Some(((ZOMBIE_UPTO - 1) as u64, fold_upto(ZOMBIE_UPTO - 1))),
        "#732: the stale flush overwrote the newer snapshot"
    );
}

#[test]
fn issue_732_prevented_by_the_generation_fence() {
    let Some(broker) = broker_or_skip("issue_732_prevented_by_the_generation_fence") else {
        return;
    };
    let s = Scenario::new(broker, "fence732");
    let (a, mut zombie, _b, _owner) = overlap(&s, |a| {
        let mut f = s.flow(a, &unique("A-txn"), |c| c);
        f.mark_zombie();
        f
    });
    let err = zombie
        .flush()
        .expect_err("the zombie's flush must be fenced");
    eprintln!("zombie flush: {err}");
    eprintln!(
        "A now: {:?}",
        loadbearing_impls_kafka::kafka::group_metadata_of(&a.consumer)
    );
    assert!(matches!(err, CommitError::Fenced { .. }), "{err}");
    assert_eq!(
        s.recovered_key(),
        Some(((EVENTS - 1) as u64, fold_upto(EVENTS - 1))),
        "the owner's snapshot survives"
    );
}
