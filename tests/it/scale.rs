//! Scale: a liveness check keeps its graph in a few bytes a state, at TLC's counts.

use loadbearing::run::run;
use loadbearing::suite::{self, override_constants, parse_set};
use loadbearing_refinement::{Options, Outcome};

/// Cassandra at MaxOffset=10 with every property, `RefLive` and `OwnerReachesEnd` included: the
/// liveness graph (fingerprints, flat successor ids, fair-group bits, property bits) must stay
/// within the 64 bytes a state a run with liveness may cost in all, at TLC's count.
#[test]
fn the_liveness_graph_costs_few_bytes_a_state_at_tlcs_count() {
    let configs = suite::built_in().expect("the shipped suite loads");
    let mut config = suite::find(&configs, "kafka-flow-828/cassandra_refines")
        .unwrap()
        .clone();
    override_constants(&mut config, &[parse_set("MaxOffset=10").unwrap()]).unwrap();
    let judged = run(&config, &Options::default()).unwrap();
    let report = &judged.report;
    assert_eq!(*report.outcome(), Outcome::Holds);
    // TLC 2.15 on Cassandra.tla at MaxOffset=10, every property.
    assert_eq!(report.distinct_states(), 161_281);
    let per_state = report.graph_bytes() as f64 / report.distinct_states() as f64;
    assert!(
        per_state <= 48.0,
        "{per_state:.1} graph bytes a state (targets, groups, offsets, fingerprints)"
    );
    assert!(report.graph_bytes() > 0, "the check built a liveness graph");
}
