//! Rounds of all-to-all messages over one timely dataflow: each worker sends what it has for
//! each other worker, then every worker steps until the round is complete everywhere, and reads
//! what was sent to it. The search is a sequence of such rounds; timely's progress tracking is
//! what tells a worker that nothing more of a round is on its way.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;
use timely::ExchangeData;

/// Messages sent in this many pieces are handed to timely between pieces, so a round's sends
/// flow while it is still being filled rather than piling up in this worker.
const SEND_STEP: usize = 4096;

/// One worker's end of the rounds, carrying messages of type `T`.
pub struct Net<T: ExchangeData + Clone> {
    input: InputHandle<u64, CapacityContainerBuilder<Vec<(u32, T)>>>,
    probe: ProbeHandle<u64>,
    /// What has arrived, by the round it was sent in: a worker that finishes a round first
    /// may already send in the next while this one still waits for the last.
    inbox: Rc<RefCell<BTreeMap<u64, Vec<T>>>>,
    peers: usize,
    unstepped: usize,
}

impl<T: ExchangeData + Clone> Net<T> {
    /// Builds the dataflow on `worker`; every worker must build it, in the same order as any
    /// other dataflow, as timely requires.
    pub fn new(worker: &mut Worker) -> Self {
        let inbox: Rc<RefCell<BTreeMap<u64, Vec<T>>>> = Rc::new(RefCell::new(BTreeMap::new()));
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let delivered = Rc::clone(&inbox);
        worker.dataflow::<u64, _, _>(|scope| {
            scope
                .input_from(&mut input)
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    Exchange::new(|(to, _): &(u32, T)| u64::from(*to)),
                    "Deliver",
                    move |_, _| {
                        move |input, _output| {
                            input.for_each(|sent, data| {
                                let round = *sent.least().expect("a message has a round");
                                delivered
                                    .borrow_mut()
                                    .entry(round)
                                    .or_default()
                                    .extend(data.drain(..).map(|(_, message)| message))
                            })
                        }
                    },
                )
                .probe_with(&probe);
        });
        Net {
            input,
            probe,
            inbox,
            peers: worker.peers(),
            unstepped: 0,
        }
    }

    pub fn peers(&self) -> usize {
        self.peers
    }

    /// Sends `message` to worker `to` in this round.
    pub fn send(&mut self, worker: &mut Worker, to: usize, message: T) {
        self.input.send((to as u32, message));
        self.unstepped += 1;
        if self.unstepped >= SEND_STEP {
            self.unstepped = 0;
            worker.step();
        }
    }

    /// Sends `message` to every worker, this one included.
    pub fn broadcast(&mut self, worker: &mut Worker, message: T) {
        for to in 0..self.peers {
            self.send(worker, to, message.clone());
        }
    }

    /// Ends this round: waits until every worker's messages of it have arrived, and returns
    /// the ones sent to this worker (in no particular order).
    pub fn round(&mut self, worker: &mut Worker) -> Vec<T> {
        let this = *self.input.time();
        self.input.advance_to(this + 1);
        while self.probe.less_than(self.input.time()) {
            worker.step();
        }
        self.unstepped = 0;
        self.inbox.borrow_mut().remove(&this).unwrap_or_default()
    }

    /// Closes the dataflow and steps until timely has retired it.
    pub fn close(self, worker: &mut Worker) {
        let Net { input, probe, .. } = self;
        drop(input);
        while !probe.done() {
            worker.step();
        }
    }
}
