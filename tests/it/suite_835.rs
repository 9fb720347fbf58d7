//! The #835 suite's configs, pinned against TLC 2.15's results for that suite: every holding
//! config reaches TLC's distinct-state count, every expected failure fails for its property
//! with a counterexample exactly as long as TLC's (TLC's depth counts states, so `depth - 1`
//! steps), and a temporal failure is a lasso, as TLC reports it.

use loadbearing_expected::run::run;
use loadbearing_expected::suite::{self, Config, Expected};
use loadbearing_refinement::Options;

/// The #835 models ported so far; the tower's tests leave their configs to this module.
pub const MODELS: &[&str] = &[
    "FlowsAlive",
    "FlushCell",
    "RecoveryDeadline",
    "TokenSync",
    "GroupCommitLanes",
    "RecoveryReadAtomic",
    "RecoveryRead",
    "Cassandra835",
    "Kafka835",
];

/// What TLC reported for one config of the #835 suite.
#[derive(Clone, Copy, Debug)]
enum Tlc {
    /// The config holds; the whole reachable set has this many distinct states.
    Holds { distinct: u64 },
    /// An invariant fails; TLC's shortest counterexample has this many states.
    Violates {
        property: &'static str,
        depth: usize,
    },
    /// A temporal property fails on a fair lasso (TLC's depth `-`); TLC explored this many
    /// distinct states to find it, the whole reachable set.
    Lasso {
        property: &'static str,
        distinct: u64,
    },
}

/// TLC 2.15's results for the #835 suite (its `tlc-results.tsv`), for the configs ported.
const TLC: &[(&str, Tlc)] = &[
    // The configs of the models the #835 suite shares with the 828 suite.
    ("sws_holds", Tlc::Holds { distinct: 32 }),
    ("casfw_guarded", Tlc::Holds { distinct: 105 }),
    (
        "casfw_unguarded",
        Tlc::Violates {
            property: "INV_NoStaleOverwrite",
            depth: 4,
        },
    ),
    ("casfw_reap", Tlc::Holds { distinct: 198 }),
    (
        "casfw_spurious",
        Tlc::Violates {
            property: "INV_NeverSpurious",
            depth: 7,
        },
    ),
    ("casfw_3w", Tlc::Holds { distinct: 1431 }),
    ("casfw_refines", Tlc::Holds { distinct: 198 }),
    (
        "casfw_refines_vacuous",
        Tlc::Violates {
            property: "RefinesAtomic",
            depth: 4,
        },
    ),
    (
        "epoch_refines",
        Tlc::Violates {
            property: "RefSafeSpec",
            depth: 5,
        },
    ),
    ("gc_cap1", Tlc::Holds { distinct: 477 }),
    ("gc_cap2", Tlc::Holds { distinct: 795 }),
    ("gc_cap3", Tlc::Holds { distinct: 915 }),
    (
        "gc_ungated",
        Tlc::Violates {
            property: "INV_OffsetWithinDurable",
            depth: 5,
        },
    ),
    (
        "gc_nofair",
        Tlc::Lasso {
            property: "Termination",
            distinct: 795,
        },
    ),
    ("flowsalive_holds", Tlc::Holds { distinct: 12 }),
    (
        "flowsalive_race",
        Tlc::Violates {
            property: "INV_FlowsAlive",
            depth: 3,
        },
    ),
    ("serial_holds", Tlc::Holds { distinct: 8 }),
    (
        "serial_race",
        Tlc::Violates {
            property: "INV_NoLostWrite",
            depth: 4,
        },
    ),
    ("recoverydeadline_hang", Tlc::Holds { distinct: 4 }),
    ("recoverydeadline_holds", Tlc::Holds { distinct: 27 }),
    (
        "recoverydeadline_late",
        Tlc::Violates {
            property: "INV_NoSilentEviction",
            depth: 6,
        },
    ),
    (
        "recoverydeadline_notrip",
        Tlc::Violates {
            property: "INV_NoSilentEviction",
            depth: 6,
        },
    ),
    (
        "recoverydeadline_total",
        Tlc::Violates {
            property: "INV_OnlyStalledFails",
            depth: 4,
        },
    ),
    ("tokensync_both", Tlc::Holds { distinct: 9 }),
    (
        "tokensync_capture",
        Tlc::Lasso {
            property: "Synced",
            distinct: 9,
        },
    ),
    ("tokensync_capture_assigning", Tlc::Holds { distinct: 6 }),
    (
        "tokensync_neither",
        Tlc::Lasso {
            property: "Synced",
            distinct: 5,
        },
    ),
    ("tokensync_refresh", Tlc::Holds { distinct: 9 }),
    ("gclanes_abort_holds", Tlc::Holds { distinct: 600 }),
    (
        "gclanes_abort_race",
        Tlc::Violates {
            property: "INV_OffsetWithinDurable",
            depth: 7,
        },
    ),
    ("gclanes_cap1", Tlc::Holds { distinct: 312 }),
    ("gclanes_holds", Tlc::Holds { distinct: 296 }),
    (
        "gclanes_shared",
        Tlc::Violates {
            property: "INV_NoSlotSteal",
            depth: 8,
        },
    ),
    (
        "gclanes_starve",
        Tlc::Lasso {
            property: "LIVE_MarkersNotStarved",
            distinct: 192,
        },
    ),
    (
        "gclanes_ungated",
        Tlc::Violates {
            property: "INV_OffsetWithinDurable",
            depth: 4,
        },
    ),
    ("recoveryreadatomic_holds", Tlc::Holds { distinct: 44 }),
    ("recoveryread_both", Tlc::Holds { distinct: 58 }),
    ("recoveryread_both_foreign", Tlc::Holds { distinct: 134 }),
    ("recoveryread_endoffsets_hw", Tlc::Holds { distinct: 87 }),
    ("recoveryread_hw_foreign", Tlc::Holds { distinct: 200 }),
    ("recoveryread_hw_unique", Tlc::Holds { distinct: 87 }),
    (
        "recoveryread_lso_foreign",
        Tlc::Violates {
            property: "RefAtomic",
            depth: 7,
        },
    ),
    ("recoveryread_lso_stable", Tlc::Holds { distinct: 56 }),
    (
        "recoveryread_lso_unique",
        Tlc::Violates {
            property: "RefAtomic",
            depth: 6,
        },
    ),
    (
        "recoveryread_trunc_recompute",
        Tlc::Violates {
            property: "RefAtomic",
            depth: 4,
        },
    ),
    ("recoveryread_trunc_safe", Tlc::Holds { distinct: 538 }),
    (
        "recoveryread_truncate_stall",
        Tlc::Lasso {
            property: "Terminates",
            distinct: 443,
        },
    ),
    (
        "recoveryread_truncate_tripwire",
        Tlc::Holds { distinct: 538 },
    ),
    // Cassandra835: the #835 suite's Cassandra (its names are shared with the 828 suite's).
    ("cassandra_refines", Tlc::Holds { distinct: 1133 }),
    (
        "cassandra_unguarded",
        Tlc::Violates {
            property: "RefSafeSpec",
            depth: 3,
        },
    ),
    (
        "cassandra_notomb",
        Tlc::Violates {
            property: "INV_NoCorruptDurable",
            depth: 6,
        },
    ),
    (
        "cassandra_reap",
        Tlc::Violates {
            property: "RefSafeSpec",
            depth: 3,
        },
    ),
    (
        "cassandra_replay_fixoff",
        Tlc::Lasso {
            property: "RefLive",
            distinct: 1153,
        },
    ),
    (
        "cassandra_replay_fixoff_safe",
        Tlc::Holds { distinct: 1153 },
    ),
    (
        "cassandra_skiptomb",
        Tlc::Violates {
            property: "INV_NoResurrection",
            depth: 4,
        },
    ),
    (
        "cassandra_tombstone_replay",
        Tlc::Lasso {
            property: "RefLive",
            distinct: 896,
        },
    ),
    (
        "cassandra_init_clobber",
        Tlc::Lasso {
            property: "RefLive",
            distinct: 3328,
        },
    ),
    (
        "cassandra_firstwrite_spurious",
        Tlc::Holds { distinct: 2419 },
    ),
    ("cassandra_events_refines", Tlc::Holds { distinct: 880 }),
    (
        "cassandra_events_refines_mo4",
        Tlc::Holds { distinct: 4808 },
    ),
    (
        "cassandra_events_nofloor",
        Tlc::Lasso {
            property: "RefLive",
            distinct: 1102,
        },
    ),
    (
        "cassandra_events_unordered",
        Tlc::Lasso {
            property: "RefLive",
            distinct: 2260,
        },
    ),
    (
        "cassandra_events_unordered_guarded",
        Tlc::Holds { distinct: 1176 },
    ),
    (
        "cassandra_events_journal_revive",
        Tlc::Violates {
            property: "INV_NoCorruptDurable",
            depth: 4,
        },
    ),
    (
        "cassandra_events_revive_reentry",
        Tlc::Violates {
            property: "INV_NoCorruptDurable",
            depth: 4,
        },
    ),
    (
        "cassandra_events_revive_reentry_mo4",
        Tlc::Violates {
            property: "INV_NoCorruptDurable",
            depth: 4,
        },
    ),
    // Kafka835: the #835 suite's Kafka.
    ("kafka_refines", Tlc::Holds { distinct: 479754 }),
    ("kafka_replay", Tlc::Holds { distinct: 479754 }),
    (
        "kafka_decoupled",
        Tlc::Violates {
            property: "RefSafeSpec",
            depth: 5,
        },
    ),
    (
        "kafka_decoupled_coupling",
        Tlc::Violates {
            property: "INV_CaptureCoupled",
            depth: 3,
        },
    ),
    // TLC's periodic liveness check found this lasso after 38,897 distinct states, before its
    // search was complete; 257,066 is TLC's count of the whole graph at the same constants
    // (the cfg with TypeOK in place of RefLive), which a liveness check here explores first.
    (
        "kafka_genlag",
        Tlc::Lasso {
            property: "RefLive",
            distinct: 257066,
        },
    ),
    (
        "kafka_lag_nofilter",
        Tlc::Violates {
            property: "RefSafeSpec",
            depth: 4,
        },
    ),
    (
        "kafka_replay_unbound",
        Tlc::Violates {
            property: "RefSafeSpec",
            depth: 4,
        },
    ),
    (
        "kafka_replay_unbound_gap",
        Tlc::Violates {
            property: "INV_NoReplayGap",
            depth: 3,
        },
    ),
    (
        "kafka_unseeded",
        Tlc::Violates {
            property: "RefSafeSpec",
            depth: 4,
        },
    ),
];

/// The configs of the #835 suite ported so far.
fn ported() -> Vec<Config> {
    suite::built_in()
        .expect("the shipped suite loads")
        .into_iter()
        .filter(|c| c.suite == SUITE)
        .collect()
}

/// The #835 suite's name in `expected/suites/`.
const SUITE: &str = "kafka-flow-835";

#[test]
fn the_new_models_configs_are_all_in_the_835_suite() {
    let configs = suite::built_in().unwrap();
    for config in configs.iter().filter(|c| MODELS.contains(&c.model)) {
        assert_eq!(config.suite, SUITE, "{}", config.name);
    }
}

#[test]
fn every_ported_config_is_pinned_to_tlc() {
    let mut names: Vec<String> = ported().into_iter().map(|c| c.name).collect();
    let mut pinned: Vec<String> = TLC.iter().map(|(n, _)| n.to_string()).collect();
    names.sort();
    pinned.sort();
    assert_eq!(names, pinned);
}

#[test]
fn every_ported_config_matches_tlc_exactly() {
    for config in ported() {
        let (_, tlc) = TLC.iter().find(|(n, _)| *n == config.name).unwrap();
        let judged = run(&config, &Options::default()).unwrap();
        assert!(judged.ok(), "{}: {:?}", config.name, judged.mismatch);
        match *tlc {
            Tlc::Holds { distinct } => {
                assert_eq!(config.expected, Expected::Holds, "{}", config.name);
                assert_eq!(config.states, Some(distinct), "{}", config.name);
                assert_eq!(judged.report.distinct_states(), distinct, "{}", config.name);
            }
            Tlc::Violates { property, depth } => {
                assert_eq!(
                    config.expected,
                    Expected::Violates(property.to_string()),
                    "{}",
                    config.name
                );
                let cx = judged.report.counterexample().expect(&config.name);
                assert_eq!(cx.property, property, "{}", config.name);
                assert_eq!(cx.len(), depth - 1, "{}: TLC's depth {depth}", config.name);
                assert_eq!(cx.loop_start, None, "{}", config.name);
            }
            Tlc::Lasso { property, distinct } => {
                assert_eq!(
                    config.expected,
                    Expected::Violates(property.to_string()),
                    "{}",
                    config.name
                );
                let cx = judged.report.counterexample().expect(&config.name);
                assert_eq!(cx.property, property, "{}", config.name);
                assert!(cx.loop_start.is_some(), "{}: not a lasso", config.name);
                // A liveness check explores the whole graph first, as TLC does.
                assert_eq!(judged.report.distinct_states(), distinct, "{}", config.name);
            }
        }
    }
}
