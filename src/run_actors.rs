//! `loadbearing run-actors SYSTEM`: an actor model's own code run for real, each actor a thread
//! with a UDP socket on loopback (`stateright::actor::spawn`), every delivery and timeout
//! logged as a line of the `actors` trace vocabulary (specs/src/infra/actors/trace.rs), and the log
//! then validated against the actor model by the conformance checker, the same one
//! `loadbearing conform --trace FILE --model CONFIG` runs on a file.

use std::borrow::Cow;
use std::fmt::{Debug, Display};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadbearing_specs::cassandra::actors as cassandra_actors;
use loadbearing_specs::epoch::actors as epoch_actors;
use loadbearing_specs::group_commit::actors as group_commit_actors;
use loadbearing_specs::infra::actors::trace::ActorEvent;
use loadbearing_specs::infra::vocab::{Cell, Offsets, Ops};
use loadbearing_specs::kafka::actors as kafka_actors;
use loadbearing_specs::ssi::actors as ssi_actors;
use loadbearing_trace::{validate, Conform, Limits};
use serde::de::DeserializeOwned;
use serde::Serialize;
use stateright::actor::{spawn, Actor, Command, Id, Out};

/// The systems `run-actors` runs, by the name the command takes.
pub const SYSTEMS: &[&str] = &["cassandra", "kafka", "epoch", "group-commit", "ssi"];

/// Why a run could not be made or checked.
#[derive(Debug, thiserror::Error)]
pub enum RunActorsError {
    #[error("unknown actor system `{name}`; available: {}", SYSTEMS.join(", "))]
    UnknownSystem { name: String },
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: std::io::Error,
    },
}

/// A message or a stored record that does not decode (the actors' wire and disk formats).
#[derive(Debug, thiserror::Error)]
enum CodecError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("bad storage: {0}")]
    Storage(String),
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> RunActorsError {
    move |source| RunActorsError::Io { what, source }
}

/// One logged event, in model ids and the model's own types.
#[derive(Clone, Debug)]
enum Logged<M, T> {
    Deliver { src: usize, dst: usize, msg: M },
    Timeout { id: usize, timer: T },
}

type Log<M, T> = Arc<Mutex<Vec<Logged<M, T>>>>;

/// How a system's actors run for real: their names, their timers' real durations, and how
/// long an actor waits before it starts (UDP: so that the servers bind their sockets first).
struct Wiring<A: Actor> {
    name: fn(Id) -> &'static str,
    duration: fn(&A::Timer) -> Range<Duration>,
    /// Actors that start at once; every other waits `settle` first.
    servers: &'static [usize],
}

/// A model actor behind real sockets: model ids translated to socket ids and back, model
/// timeouts given real durations, every event logged.
struct Wired<A: Actor> {
    inner: A,
    me: usize,
    ids: Arc<Vec<Id>>,
    log: Log<A::Msg, A::Timer>,
    duration: fn(&A::Timer) -> Range<Duration>,
    settle: Duration,
}

impl<A: Actor> Wired<A> {
    fn model_id(&self, id: Id) -> Option<usize> {
        self.ids.iter().position(|&i| i == id)
    }

    fn forward(&self, inner: Out<A>, o: &mut Out<Self>) {
        for command in inner {
            match command {
                Command::Send(dst, msg) => o.send(self.ids[usize::from(dst)], msg),
                Command::SetTimer(timer, _) => {
                    let range = (self.duration)(&timer);
                    o.set_timer(timer, range)
                }
                Command::CancelTimer(timer) => o.cancel_timer(timer),
                Command::Save(disk) => o.save(disk),
                Command::ChooseRandom(key, random) => o.choose_random(key, random),
            }
        }
    }

    fn push(&self, event: Logged<A::Msg, A::Timer>) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
    }
}

impl<A: Actor> Actor for Wired<A>
where
    A::Msg: Clone,
    A::Timer: Clone,
{
    type Msg = A::Msg;
    type Timer = A::Timer;
    type State = A::State;
    type Storage = A::Storage;
    type Random = A::Random;

    fn on_start(&self, _id: Id, storage: &Option<A::Storage>, o: &mut Out<Self>) -> A::State {
        std::thread::sleep(self.settle);
        let mut inner = Out::new();
        let state = self.inner.on_start(Id::from(self.me), storage, &mut inner);
        self.forward(inner, o);
        state
    }

    fn on_msg(&self, _id: Id, state: &mut Cow<A::State>, src: Id, msg: A::Msg, o: &mut Out<Self>) {
        let Some(src) = self.model_id(src) else {
            return;
        };
        self.push(Logged::Deliver {
            src,
            dst: self.me,
            msg: msg.clone(),
        });
        let mut inner = Out::new();
        self.inner
            .on_msg(Id::from(self.me), state, Id::from(src), msg, &mut inner);
        self.forward(inner, o);
    }

    fn on_timeout(&self, _id: Id, state: &mut Cow<A::State>, timer: &A::Timer, o: &mut Out<Self>) {
        self.push(Logged::Timeout {
            id: self.me,
            timer: timer.clone(),
        });
        let mut inner = Out::new();
        self.inner
            .on_timeout(Id::from(self.me), state, timer, &mut inner);
        self.forward(inner, o);
    }
}

fn to_bytes<M: Serialize>(msg: &M) -> Result<Vec<u8>, CodecError> {
    Ok(serde_json::to_vec(msg)?)
}

fn from_bytes<M: DeserializeOwned>(bytes: &[u8]) -> Result<M, CodecError> {
    Ok(serde_json::from_slice(bytes)?)
}

/// For the systems whose actors keep no storage.
fn no_storage(_: &()) -> Result<Vec<u8>, CodecError> {
    Ok(Vec::new())
}

fn no_storage_back(_: &[u8]) -> Result<(), CodecError> {
    Ok(())
}

fn disk_to_bytes(disk: &cassandra_actors::Disk) -> Result<Vec<u8>, CodecError> {
    use cassandra_actors::Disk;
    Ok(match disk {
        Disk::Store(d) => format!(
            "S {} {} {} {} {}",
            d.row.present, d.row.deleted, d.row.offset, d.row.contents.0, d.overwrote
        ),
        Disk::Flow(pos) => format!("F {pos}"),
    }
    .into_bytes())
}

fn disk_from_bytes(bytes: &[u8]) -> Result<cassandra_actors::Disk, CodecError> {
    use cassandra_actors::{Disk, StoreDisk};
    let text = String::from_utf8_lossy(bytes);
    let parts: Vec<&str> = text.split_whitespace().collect();
    let bad = || CodecError::Storage(text.to_string());
    match parts.as_slice() {
        ["F", pos] => Ok(Disk::Flow(pos.parse().map_err(|_| bad())?)),
        ["S", present, deleted, offset, contents, overwrote] => Ok(Disk::Store(StoreDisk {
            row: Cell {
                present: present.parse().map_err(|_| bad())?,
                deleted: deleted.parse().map_err(|_| bad())?,
                offset: offset.parse().map_err(|_| bad())?,
                contents: Offsets(contents.parse().map_err(|_| bad())?),
            },
            overwrote: overwrote.parse().map_err(|_| bad())?,
        })),
        _ => Err(bad()),
    }
}

/// The result of a run: the log as people read it and as the checker read it, and the verdict.
pub struct RunReport {
    /// One `src→dst msg` or `actor timeout Timer` per event.
    pub lines: Vec<String>,
    pub events: Vec<ActorEvent>,
    pub verdict: loadbearing_trace::Verdict,
    /// The config to validate the saved log against with `conform --trace`.
    pub config: String,
}

fn free_port() -> Result<u16, RunActorsError> {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io("no free UDP port"))?;
    Ok(socket.local_addr().map_err(io("no free UDP port"))?.port())
}

type StorageFns<S> = (
    fn(&S) -> Result<Vec<u8>, CodecError>,
    fn(&[u8]) -> Result<S, CodecError>,
);

/// Runs `nodes` over UDP for `millis`, then validates the log against `model`.
fn run<A, M>(
    model: &M,
    nodes: Vec<A>,
    wiring: Wiring<A>,
    storage: StorageFns<A::Storage>,
    millis: u64,
    config: &str,
) -> Result<RunReport, RunActorsError>
where
    A: Actor + Send + 'static,
    A::Msg: Serialize + DeserializeOwned + Clone + Display + Debug + Send,
    A::Timer: Serialize + Clone + Debug + Send,
    A::State: Debug,
    A::Storage: Debug,
    M: Conform<Event = ActorEvent>,
{
    let dir = std::env::temp_dir().join(format!("loadbearing-actors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(io("cannot create the actors' folder"))?;
    // `spawn` keeps each actor's storage in `<address>.storage` under the working directory.
    std::env::set_current_dir(&dir).map_err(io("cannot enter the actors' folder"))?;
    let ids = (0..nodes.len())
        .map(|_| {
            Ok(Id::from(SocketAddrV4::new(
                Ipv4Addr::LOCALHOST,
                free_port()?,
            )))
        })
        .collect::<Result<Vec<Id>, RunActorsError>>()?;
    let ids = Arc::new(ids);
    let log: Log<A::Msg, A::Timer> = Arc::new(Mutex::new(Vec::new()));
    let actors: Vec<(Id, Wired<A>)> = nodes
        .into_iter()
        .enumerate()
        .map(|(me, inner)| {
            let settle = if wiring.servers.contains(&me) {
                Duration::ZERO
            } else {
                Duration::from_millis(200)
            };
            (
                ids[me],
                Wired {
                    inner,
                    me,
                    ids: Arc::clone(&ids),
                    log: Arc::clone(&log),
                    duration: wiring.duration,
                    settle,
                },
            )
        })
        .collect();
    let (to_disk, from_disk) = storage;
    std::thread::spawn(move || {
        let _ = spawn(to_bytes, from_bytes, to_disk, from_disk, actors);
    });
    std::thread::sleep(Duration::from_millis(millis));
    let logged = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let _ = std::fs::remove_dir_all(&dir);

    let name = |id: usize| (wiring.name)(Id::from(id));
    let mut lines = Vec::new();
    let mut events = Vec::new();
    for event in &logged {
        match event {
            Logged::Deliver { src, dst, msg } => {
                lines.push(format!("{}→{} {msg}", name(*src), name(*dst)));
                events.push(ActorEvent::Deliver {
                    src: name(*src).to_string(),
                    dst: name(*dst).to_string(),
                    msg: serde_json::to_value(msg).expect("an actor message serializes"),
                });
            }
            Logged::Timeout { id, timer } => {
                lines.push(format!("{} timeout {timer:?}", name(*id)));
                events.push(ActorEvent::Timeout {
                    actor: name(*id).to_string(),
                    timer: serde_json::to_value(timer).expect("an actor timer serializes"),
                });
            }
        }
    }
    let verdict = validate(model, &events, Limits::default());
    Ok(RunReport {
        lines,
        events,
        verdict,
        config: config.to_string(),
    })
}

/// The log the flows of the three logged systems fold: persist, delete, persist.
fn persist_delete_persist() -> Ops {
    Ops(1 << 2)
}

fn zombie_delays() -> Range<Duration> {
    Duration::from_millis(5)..Duration::from_millis(60)
}

fn rebalance_delay() -> Range<Duration> {
    Duration::from_millis(100)..Duration::from_millis(300)
}

/// The shipped Cassandra design (two zombie writes) on a racing network.
fn run_cassandra(millis: u64) -> Result<RunReport, RunActorsError> {
    use cassandra_actors::{actor_name, CassandraActors, CassandraActorsParams, NetKind, Timer};
    let model = CassandraActors::new(CassandraActorsParams {
        max_offset: 3,
        network: NetKind::Unordered,
        ..CassandraActorsParams::default()
    });
    let wiring = Wiring {
        name: actor_name,
        duration: |timer| match timer {
            Timer::Retry => Duration::from_millis(200)..Duration::from_millis(400),
            Timer::ZombieWrite(_) => zombie_delays(),
        },
        servers: &[cassandra_actors::STORE],
    };
    let nodes = model.nodes(persist_delete_persist());
    let storage: StorageFns<cassandra_actors::Disk> = (disk_to_bytes, disk_from_bytes);
    run(
        &model,
        nodes,
        wiring,
        storage,
        millis,
        "cassandra_actors_overtaken --set MaxOffset=3 --set Retries=0 --set ZombieWrites=2",
    )
}

/// The shipped Kafka design (two zombie transactions) on a racing network.
fn run_kafka(millis: u64) -> Result<RunReport, RunActorsError> {
    use kafka_actors::{actor_name, KafkaActors, KafkaActorsParams, NetKind, Timer};
    let model = KafkaActors::new(KafkaActorsParams {
        max_offset: 3,
        network: NetKind::Unordered,
        ..KafkaActorsParams::default()
    });
    let wiring = Wiring {
        name: actor_name,
        duration: |timer| match timer {
            Timer::Rebalance => rebalance_delay(),
            Timer::ZombiePoll | Timer::ZombieCommit(_) => zombie_delays(),
        },
        servers: &[kafka_actors::BROKER],
    };
    let nodes = model.nodes(persist_delete_persist());
    run(
        &model,
        nodes,
        wiring,
        (no_storage, no_storage_back),
        millis,
        "kafka_actors_refines --set Network=unordered",
    )
}

/// The rejected Epoch design (two zombie transactions) on a racing network.
fn run_epoch(millis: u64) -> Result<RunReport, RunActorsError> {
    use epoch_actors::{actor_name, EpochActors, EpochActorsParams, NetKind, Timer};
    let model = EpochActors::new(EpochActorsParams {
        max_offset: 3,
        network: NetKind::Unordered,
        ..EpochActorsParams::default()
    });
    let wiring = Wiring {
        name: actor_name,
        duration: |timer| match timer {
            Timer::Rebalance => rebalance_delay(),
            Timer::ZombieCommit(_) => zombie_delays(),
        },
        servers: &[epoch_actors::BROKER],
    };
    let nodes = model.nodes(persist_delete_persist());
    run(
        &model,
        nodes,
        wiring,
        (no_storage, no_storage_back),
        millis,
        "epoch_actors_refines --set MaxOffset=3 --set Network=unordered",
    )
}

/// The group commit with three writers, two writes per transaction, on a racing network.
fn run_group_commit(millis: u64) -> Result<RunReport, RunActorsError> {
    use group_commit_actors::{actor_name, GroupCommitActors, GroupCommitActorsParams, NetKind};
    let model = GroupCommitActors::new(GroupCommitActorsParams {
        n: 3,
        cap: 2,
        gated: true,
        network: NetKind::Unordered,
    });
    let wiring = Wiring {
        name: actor_name,
        duration: |_| Duration::from_millis(5)..Duration::from_millis(30),
        servers: &[group_commit_actors::PRODUCER],
    };
    let nodes = model.nodes();
    run(
        &model,
        nodes,
        wiring,
        (no_storage, no_storage_back),
        millis,
        "gc_actors_unordered --set N=3",
    )
}

/// The fixed SSI engine under the write skew's two transactions, on a racing network.
fn run_ssi(millis: u64) -> Result<RunReport, RunActorsError> {
    use loadbearing_specs::infra::knobs::{Params, Resolved, Value};
    use ssi_actors::{actor_name, SsiActors, SsiActorsParams};
    let given = [
        ("Workload".to_string(), Value::Name("write_skew".into())),
        ("Network".to_string(), Value::Name("unordered".into())),
    ]
    .into_iter()
    .collect();
    let knobs = Resolved::resolve::<SsiActorsParams>("SSIActors", &given)
        .expect("the shipped constants resolve");
    let model = SsiActors::new(
        SsiActorsParams::from_resolved(&knobs).expect("resolved constants build the model"),
    );
    let wiring = Wiring {
        name: actor_name,
        duration: |timer| match *timer {},
        servers: &[ssi_actors::ENGINE],
    };
    let nodes = model.nodes();
    run(
        &model,
        nodes,
        wiring,
        (no_storage, no_storage_back),
        millis,
        "ssi_actors_fix_write_skew --set Network=unordered",
    )
}

/// Runs `system`; the checker's verdict on its log.
pub fn run_system(system: &str, millis: u64) -> Result<RunReport, RunActorsError> {
    match system {
        "cassandra" => run_cassandra(millis),
        "kafka" => run_kafka(millis),
        "epoch" => run_epoch(millis),
        "group-commit" => run_group_commit(millis),
        "ssi" => run_ssi(millis),
        other => Err(RunActorsError::UnknownSystem {
            name: other.to_string(),
        }),
    }
}
