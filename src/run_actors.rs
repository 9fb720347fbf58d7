//! `loadbearing run-actors cassandra`: the CassandraActors code run for real, each actor a
//! thread with a UDP socket on loopback (`stateright::actor::spawn`), every delivery and timeout
//! logged, and the log then replayed against the actor model: each logged event must be an
//! enabled action of the model in the state the previous events reached.

use std::borrow::Cow;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadbearing_specs::cassandra_actors::{
    actor_name, CassandraActors, CassandraActorsParams, Disk, Msg, NetKind, Node, NodeState,
    StoreDisk, Timer,
};
use loadbearing_specs::vocab::{Cell, Offsets, Ops};
use stateright::actor::{spawn, Actor, ActorModelAction, Command, Id, Out};
use stateright::Model;

use crate::Verdict;

/// Why a run could not be made or replayed.
#[derive(Debug, thiserror::Error)]
pub enum RunActorsError {
    #[error("unknown actor system `{0}`; available: cassandra")]
    UnknownSystem(String),
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("no initial state for the log")]
    NoInitialState,
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

/// One logged event, in model ids.
#[derive(Clone, Debug)]
pub enum Event {
    Deliver { src: usize, dst: usize, msg: Msg },
    Timeout { id: usize, timer: Timer },
}

type Log = Arc<Mutex<Vec<Event>>>;

/// A model actor behind real sockets: model ids translated to socket ids and back, model
/// timeouts given real durations, every event logged.
struct Wired {
    inner: Node,
    me: usize,
    ids: [Id; 3],
    log: Log,
}

impl Wired {
    fn model_id(&self, id: Id) -> usize {
        self.ids.iter().position(|&i| i == id).unwrap_or(usize::MAX)
    }

    fn forward(&self, inner: Out<Node>, o: &mut Out<Self>) {
        for command in inner {
            match command {
                Command::Send(dst, msg) => o.send(self.ids[usize::from(dst)], msg),
                Command::SetTimer(timer, _) => o.set_timer(timer, duration(timer)),
                Command::CancelTimer(timer) => o.cancel_timer(timer),
                Command::Save(disk) => o.save(disk),
                Command::ChooseRandom(key, random) => o.choose_random(key, random),
            }
        }
    }
}

fn duration(timer: Timer) -> Range<Duration> {
    match timer {
        Timer::Retry => Duration::from_millis(200)..Duration::from_millis(400),
        Timer::ZombieWrite(_) => Duration::from_millis(5)..Duration::from_millis(60),
    }
}

impl Actor for Wired {
    type Msg = Msg;
    type Timer = Timer;
    type State = NodeState;
    type Storage = Disk;
    type Random = ();

    fn on_start(&self, _id: Id, storage: &Option<Disk>, o: &mut Out<Self>) -> NodeState {
        if self.me != 0 {
            // UDP: let the store bind its socket before the flows' first requests.
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut inner = Out::new();
        let state = self.inner.on_start(Id::from(self.me), storage, &mut inner);
        self.forward(inner, o);
        state
    }

    fn on_msg(&self, _id: Id, state: &mut Cow<NodeState>, src: Id, msg: Msg, o: &mut Out<Self>) {
        let src = self.model_id(src);
        if src == usize::MAX {
            return;
        }
        self.log.lock().unwrap().push(Event::Deliver {
            src,
            dst: self.me,
            msg: msg.clone(),
        });
        let mut inner = Out::new();
        self.inner
            .on_msg(Id::from(self.me), state, Id::from(src), msg, &mut inner);
        self.forward(inner, o);
    }

    fn on_timeout(&self, _id: Id, state: &mut Cow<NodeState>, timer: &Timer, o: &mut Out<Self>) {
        self.log.lock().unwrap().push(Event::Timeout {
            id: self.me,
            timer: *timer,
        });
        let mut inner = Out::new();
        self.inner
            .on_timeout(Id::from(self.me), state, timer, &mut inner);
        self.forward(inner, o);
    }
}

fn to_bytes(msg: &Msg) -> Result<Vec<u8>, CodecError> {
    Ok(serde_json::to_vec(msg)?)
}

fn from_bytes(bytes: &[u8]) -> Result<Msg, CodecError> {
    Ok(serde_json::from_slice(bytes)?)
}

fn disk_to_bytes(disk: &Disk) -> Result<Vec<u8>, CodecError> {
    Ok(match disk {
        Disk::Store(d) => format!(
            "S {} {} {} {} {}",
            d.row.present, d.row.deleted, d.row.offset, d.row.contents.0, d.overwrote
        ),
        Disk::Flow(pos) => format!("F {pos}"),
    }
    .into_bytes())
}

fn disk_from_bytes(bytes: &[u8]) -> Result<Disk, CodecError> {
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

/// The result of a run: the log, and where (if anywhere) the model could not follow it.
pub struct RunReport {
    pub events: Vec<Event>,
    pub diverged_at: Option<(usize, String)>,
    pub final_vars: Vec<(&'static str, String)>,
}

fn free_port() -> Result<u16, RunActorsError> {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io("no free UDP port"))?;
    Ok(socket.local_addr().map_err(io("no free UDP port"))?.port())
}

/// Runs the shipped design (persist, delete, persist; two zombie writes) for `millis` and
/// replays its log in the actor model.
pub fn run_cassandra(millis: u64) -> Result<RunReport, RunActorsError> {
    let max_offset = 3;
    // persist 1, delete 2, persist 3
    let op = Ops(1 << 2);
    let model = CassandraActors::new(CassandraActorsParams {
        max_offset,
        network: NetKind::Unordered,
        ..CassandraActorsParams::default()
    });
    let dir = std::env::temp_dir().join(format!("loadbearing-actors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(io("cannot create the actors' folder"))?;
    // `spawn` keeps each actor's storage in `<address>.storage` under the working directory.
    std::env::set_current_dir(&dir).map_err(io("cannot enter the actors' folder"))?;
    let mut ids = [Id::from(0usize); 3];
    for id in &mut ids {
        *id = Id::from(SocketAddrV4::new(Ipv4Addr::LOCALHOST, free_port()?));
    }
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let flow = |zombie| Node::Flow {
        zombie,
        op,
        max_offset,
        tombstone: true,
        compound: false,
        retries: 0,
        zombie_writes: 2,
        durable_pos: false,
    };
    let nodes = [Node::Store { guarded: true }, flow(false), flow(true)];
    let actors: Vec<(Id, Wired)> = nodes
        .into_iter()
        .enumerate()
        .map(|(me, inner)| {
            (
                ids[me],
                Wired {
                    inner,
                    me,
                    ids,
                    log: Arc::clone(&log),
                },
            )
        })
        .collect();
    std::thread::spawn(move || {
        let _ = spawn(to_bytes, from_bytes, disk_to_bytes, disk_from_bytes, actors);
    });
    std::thread::sleep(Duration::from_millis(millis));
    let events = log.lock().unwrap().clone();
    let _ = std::fs::remove_dir_all(&dir);

    // Replay: each event must be an enabled action of the model.
    let mut state = model
        .init_states()
        .into_iter()
        .find(|s| s.history.op == op)
        .ok_or(RunActorsError::NoInitialState)?;
    let mut diverged_at = None;
    for (i, event) in events.iter().enumerate() {
        let action = match event {
            Event::Deliver { src, dst, msg } => ActorModelAction::Deliver {
                src: Id::from(*src),
                dst: Id::from(*dst),
                msg: msg.clone(),
            },
            Event::Timeout { id, timer } => ActorModelAction::Timeout(Id::from(*id), *timer),
        };
        let mut enabled = Vec::new();
        model.actions(&state, &mut enabled);
        let next = if enabled.contains(&action) {
            model.next_state(&state, action.clone())
        } else {
            None
        };
        match next {
            Some(next) => state = next,
            None => {
                let allowed: Vec<String> = enabled.iter().map(|a| model.format_action(a)).collect();
                diverged_at = Some((
                    i,
                    format!(
                        "{} is not enabled; the model allows: {}",
                        model.format_action(&action),
                        allowed.join(" | ")
                    ),
                ));
                break;
            }
        }
    }
    Ok(RunReport {
        events,
        diverged_at,
        final_vars: loadbearing_refinement::Spec::variables(&model, &state),
    })
}

/// Prints the run's log and verdict: as expected when the model follows the whole log.
pub fn main(system: &str, millis: u64) -> Result<Verdict, RunActorsError> {
    if system != "cassandra" {
        return Err(RunActorsError::UnknownSystem(system.to_string()));
    }
    let report = run_cassandra(millis)?;
    for (i, event) in report.events.iter().enumerate() {
        match event {
            Event::Deliver { src, dst, msg } => println!(
                "{i:>3}  {}→{} {msg}",
                actor_name(Id::from(*src)),
                actor_name(Id::from(*dst))
            ),
            Event::Timeout { id, timer } => {
                println!("{i:>3}  {} timeout {timer:?}", actor_name(Id::from(*id)))
            }
        }
    }
    match &report.diverged_at {
        None => {
            println!(
                "the actor model follows all {} events; final state:",
                report.events.len()
            );
            for (k, v) in &report.final_vars {
                println!("  {k} = {v}");
            }
            Ok(Verdict::AsExpected)
        }
        Some((i, why)) => {
            println!("the actor model cannot follow event {i}: {why}");
            Ok(Verdict::Differs)
        }
    }
}
