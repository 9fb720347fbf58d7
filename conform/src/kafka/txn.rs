//! The transactional producer a world's flows write through (in memory, or a real broker's),
//! and the recorder behind them.

use super::*;

/// The recorder behind every flow, muted while the harness rebuilds a flow's state (a zombie's
/// stale fold, an owner's restart) so that only the steps the model sees are recorded.
#[derive(Default)]
pub(super) struct Sink {
    pub(super) rec: KafkaRecorder,
    pub(super) muted: AtomicBool,
}

impl Tracer for Sink {
    fn step(&self, step: &Step) {
        if !self.muted.load(Ordering::SeqCst) {
            self.rec.step(step);
        }
    }
}

impl KafkaTracer for Sink {
    fn kafka(&self, step: &KafkaStep) {
        if !self.muted.load(Ordering::SeqCst) {
            self.rec.kafka(step);
        }
    }
}

/// The transactional producer of one flow: the in-memory one (with producer epochs for the
/// Epoch design: `init` hands out the next epoch of the stable transactional id, and a producer
/// whose epoch is no longer the highest is fenced with PRODUCER_FENCED, as the transaction
/// coordinator does), or the real one, whose epochs and fences are the broker's.
pub(super) enum Producer {
    Mem {
        mem: MemProducer,
        epoch: Option<(Arc<Mutex<u32>>, u32)>,
    },
    #[cfg(feature = "kafka")]
    Real(Box<KafkaTxnProducer>),
}

impl Producer {
    pub(super) fn plain(mem: &MemProducer) -> Producer {
        Producer::Mem {
            mem: mem.clone(),
            epoch: None,
        }
    }

    /// `initTransactions` with the stable id: the new producer takes the highest epoch.
    pub(super) fn init(mem: &MemProducer, epochs: &Arc<Mutex<u32>>) -> Producer {
        let mut max = epochs.lock().unwrap_or_else(|e| e.into_inner());
        *max += 1;
        Producer::Mem {
            mem: mem.clone(),
            epoch: Some((epochs.clone(), *max)),
        }
    }

    pub(super) fn check_epoch(&self) -> Result<(), TxnError> {
        if let Producer::Mem {
            epoch: Some((epochs, mine)),
            ..
        } = self
        {
            let max = *epochs.lock().unwrap_or_else(|e| e.into_inner());
            if max > *mine {
                return Err(TxnError {
                    class: ErrorClass::Fenced,
                    code: "PRODUCER_FENCED".into(),
                    message: format!("epoch {mine}, the coordinator's is {max}"),
                });
            }
        }
        Ok(())
    }

    pub(super) fn inner(&mut self) -> &mut dyn TxnProducer {
        match self {
            Producer::Mem { mem, .. } => mem,
            #[cfg(feature = "kafka")]
            Producer::Real(p) => p.as_mut(),
        }
    }
}

impl TxnProducer for Producer {
    fn begin(&mut self) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.inner().begin()
    }
    fn send_offsets(
        &mut self,
        input: &InputPartition,
        offset: i64,
        meta: &GroupMetadata,
    ) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.inner().send_offsets(input, offset, meta)
    }
    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError> {
        self.inner().send(write)
    }
    fn commit(&mut self) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.inner().commit()
    }
    fn abort(&mut self) -> Result<(), TxnError> {
        self.inner().abort()
    }
}
