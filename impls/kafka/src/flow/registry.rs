//! The flows a member runs, by partition, and their teardown on revoke (S-3, the FlowsAlive
//! model): the revoke half of a rebalance tears each revoked partition's flow down before the
//! member acts in the new generation, so no live flow is ever un-owned. The brokers check
//! member and generation, not partition ownership, so this coupling is all that stops a
//! lingering flow from committing under a fresh generation (`flowsalive_race`).
//!
//! Apart from any client: the member's rebalance callback calls [`FlowRegistry::revoke`], and
//! the in-memory conformance harness calls it directly.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::TearDown;
use crate::trace::{KafkaStep, SharedKafkaTracer};

/// How a revoke tears flows down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeardownMode {
    /// Inside the revoke, before it returns: the design.
    Awaited,
    /// TEST-ONLY PLANTED MUTANT (FlowsAlive `AwaitTeardown = false`): the revoke hands the
    /// teardown to a thread and returns; the flow stays live until the thread runs, this long
    /// after.
    Deferred(Duration),
    /// TEST-ONLY PLANTED MUTANT (Kafka `CoupledTeardown = false`): the revoke captures the new
    /// generation and tears nothing down; the revoked flow stays live (a zombie) until its
    /// owner drops it.
    Detached,
}

/// The member's flows.
pub struct FlowRegistry {
    member: String,
    mode: TeardownMode,
    flows: Arc<Mutex<BTreeMap<i32, Arc<dyn TearDown>>>>,
    deferred: Mutex<Vec<JoinHandle<()>>>,
    tracer: SharedKafkaTracer,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl FlowRegistry {
    pub fn new(member: &str, mode: TeardownMode, tracer: SharedKafkaTracer) -> Self {
        FlowRegistry {
            member: member.to_string(),
            mode,
            flows: Arc::new(Mutex::new(BTreeMap::new())),
            deferred: Mutex::new(Vec::new()),
            tracer,
        }
    }

    pub fn mode(&self) -> TeardownMode {
        self.mode
    }

    /// Register the flow of `partition`, to be torn down when the partition is revoked.
    pub fn register(&self, partition: i32, flow: Arc<dyn TearDown>) {
        lock(&self.flows).insert(partition, flow);
    }

    /// The revoke half of a rebalance. Returns the partitions whose flows were torn down
    /// before it returned (none, deferred).
    pub fn revoke(&self, partitions: &[i32]) -> Vec<i32> {
        let mut torn = Vec::new();
        for &p in partitions {
            let Some(flow) = lock(&self.flows).get(&p).cloned() else {
                continue;
            };
            match self.mode {
                TeardownMode::Awaited => {
                    flow.tear_down();
                    lock(&self.flows).remove(&p);
                    torn.push(p);
                }
                TeardownMode::Deferred(after) => {
                    let flows = self.flows.clone();
                    let tracer = self.tracer.clone();
                    let member = self.member.clone();
                    let handle = std::thread::spawn(move || {
                        std::thread::sleep(after);
                        flow.tear_down();
                        let mut flows = lock(&flows);
                        if flows.get(&p).is_some_and(|f| Arc::ptr_eq(f, &flow)) {
                            flows.remove(&p);
                        }
                        tracer.kafka(&KafkaStep::Teardown {
                            member,
                            partition: p,
                        });
                    });
                    lock(&self.deferred).push(handle);
                }
                TeardownMode::Detached => {}
            }
        }
        torn
    }

    /// The partitions with a flow that is not torn down.
    pub fn live(&self) -> Vec<i32> {
        lock(&self.flows)
            .iter()
            .filter(|(_, f)| !f.is_torn_down())
            .map(|(p, _)| *p)
            .collect()
    }

    /// Whether `partition` has a live flow.
    pub fn is_live(&self, partition: i32) -> bool {
        lock(&self.flows)
            .get(&partition)
            .is_some_and(|f| !f.is_torn_down())
    }

    /// Report the member's assignment and its live flows, once the flows of newly assigned
    /// partitions are open: FlowsAlive's `Rebalance` as one step.
    pub fn report(&self, owned: &[i32]) {
        self.tracer.kafka(&KafkaStep::FlowsLive {
            member: self.member.clone(),
            owned: owned.to_vec(),
            live: self.live(),
        });
    }

    /// Wait for every deferred teardown.
    pub fn settle(&self) {
        for h in std::mem::take(&mut *lock(&self.deferred)) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::KafkaRecorder;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    struct Flow(AtomicBool);

    impl TearDown for Flow {
        fn tear_down(&self) {
            self.0.store(true, Ordering::SeqCst);
        }
        fn is_torn_down(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn registry(mode: TeardownMode) -> (FlowRegistry, Arc<KafkaRecorder>) {
        let rec = KafkaRecorder::new();
        (FlowRegistry::new("A", mode, rec.clone()), rec)
    }

    #[test]
    fn s3_an_awaited_revoke_returns_with_the_revoked_flows_torn_down() {
        let (detached, _) = registry(TeardownMode::Detached);
        let flow = Arc::new(Flow::default());
        detached.register(0, flow.clone());
        assert!(detached.revoke(&[0]).is_empty());
        assert!(
            !flow.is_torn_down() && detached.is_live(0),
            "the mutant tears nothing down"
        );
        let (r, _) = registry(TeardownMode::Awaited);
        r.register(0, Arc::new(Flow::default()));
        r.register(1, Arc::new(Flow::default()));
        assert_eq!(r.revoke(&[0]), vec![0]);
        assert_eq!(r.live(), vec![1]);
    }

    #[test]
    fn a_deferred_revoke_returns_with_the_flow_still_live() {
        let (r, rec) = registry(TeardownMode::Deferred(Duration::from_millis(30)));
        r.register(0, Arc::new(Flow::default()));
        assert!(r.revoke(&[0]).is_empty());
        assert_eq!(r.live(), vec![0], "revoked, and still live");
        r.settle();
        assert!(r.live().is_empty());
        assert_eq!(
            rec.kafka_steps(),
            vec![KafkaStep::Teardown {
                member: "A".into(),
                partition: 0
            }]
        );
    }
}
