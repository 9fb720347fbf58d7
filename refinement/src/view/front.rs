//! The explorer's front door: Stateright's explorer (its server, its page) runs on a loopback
//! port of its own, and this server, on the address people open, passes every request through
//! unchanged but two answers, which it names as people know them: the status's model (Stateright
//! gives the Rust type, `Explorable<Kafka>`; here the config, `epoch_refines: Epoch with
//! MaxOffset=3`) and the initial states (Stateright's page calls them `Init 0` … `Init 7`; here
//! each says what sets it apart, `Init: op=<persist, skip>`).

use std::io::{self, Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::Shown;

use serde_json::Value;

use super::ViewError;

/// What the front door renames.
pub struct Names {
    /// The status's model: the config as a line.
    pub title: String,
    /// Each initial state's label, in the model's order of initial states.
    pub inits: Vec<String>,
}

/// Serves on `address` until the process stops; `backend` serves Stateright's explorer on the
/// address it is given (and does not return).
pub fn serve(
    address: SocketAddr,
    names: Names,
    backend: impl FnOnce(SocketAddr) + Send + 'static,
) -> Result<(), ViewError> {
    let server = tiny_http::Server::http(address).map_err(|e| ViewError::Bind {
        address,
        source: io::Error::other(e.to_string()),
    })?;
    let inner = inner_address(address).map_err(|source| ViewError::Bind {
        address: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        source,
    })?;
    std::thread::spawn(move || backend(inner));
    wait_for(inner);
    for mut request in server.incoming_requests() {
        let response = pass_through(inner, &mut request, &names);
        let _ = request.respond(response);
    }
    Ok(())
}

/// Where Stateright's server listens behind the front door at `front`. On 127.0.0.1 the same
/// port of 127.0.0.2 (loopback too): no other process can hold it while the front door holds
/// its port, so explorers started side by side never collide, as a free port picked now and
/// bound a moment later could. Elsewhere, a loopback port free now.
fn inner_address(front: SocketAddr) -> io::Result<SocketAddr> {
    if front.ip() == Ipv4Addr::LOCALHOST && front.port() != 0 {
        let beside = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 2), front.port()));
        if TcpListener::bind(beside).is_ok() {
            return Ok(beside);
        }
    }
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()
}

/// Until Stateright's server accepts connections (it starts in its own thread), at most 10 s.
fn wait_for(inner: SocketAddr) {
    let started = Instant::now();
    while TcpStream::connect(inner).is_err() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pass_through(
    inner: SocketAddr,
    request: &mut tiny_http::Request,
    names: &Names,
) -> tiny_http::ResponseBox {
    let mut body = Vec::new();
    let _ = request.as_reader().read_to_end(&mut body);
    let url = request.url().to_string();
    let answer = match fetch(inner, request.method().as_str(), &url, &body) {
        Ok(answer) => answer,
        Err(e) => {
            return tiny_http::Response::from_string(format!("the explorer did not answer: {e}"))
                .with_status_code(502)
                .boxed()
        }
    };
    let data = match url.as_str() {
        "/.status" => renamed_status(&answer.body, names),
        "/.states" | "/.states/" => labelled_inits(&answer.body, names),
        _ => answer.body,
    };
    let mut response = tiny_http::Response::from_data(data).with_status_code(answer.status);
    if let Some(kind) = answer.content_type {
        if let Ok(header) = tiny_http::Header::from_bytes(&b"Content-Type"[..], kind.as_bytes()) {
            response = response.with_header(header);
        }
    }
    response.boxed()
}

struct Answer {
    status: u16,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// One HTTP/1.0 exchange with Stateright's server (it closes the connection after answering).
fn fetch(inner: SocketAddr, method: &str, url: &str, body: &[u8]) -> io::Result<Answer> {
    let mut stream = TcpStream::connect(inner)?;
    write!(
        stream,
        "{method} {url} HTTP/1.0\r\nHost: {inner}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::other("an answer without its headers' end"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::other(format!("no status in {head:?}")))?;
    let content_type = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-type")
            .then(|| value.trim().to_string())
    });
    Ok(Answer {
        status,
        content_type,
        body: raw[split + 4..].to_vec(),
    })
}

/// The status with the config's line for its model.
fn renamed_status(body: &[u8], names: &Names) -> Vec<u8> {
    let Ok(mut status) = serde_json::from_slice::<Value>(body) else {
        return body.to_vec();
    };
    status["model"] = Value::String(names.title.clone());
    serde_json::to_vec(&status).unwrap_or_else(|_| body.to_vec())
}

/// The initial states (the entries without an action), each with its label.
fn labelled_inits(body: &[u8], names: &Names) -> Vec<u8> {
    let Ok(Value::Array(mut entries)) = serde_json::from_slice::<Value>(body) else {
        return body.to_vec();
    };
    for (i, entry) in entries.iter_mut().enumerate() {
        let Value::Object(fields) = entry else {
            continue;
        };
        if fields.contains_key("action") {
            continue;
        }
        let index = fields
            .get("actionIndex")
            .and_then(Value::as_u64)
            .map_or(i, |n| n as usize);
        if let Some(label) = names.inits.get(index) {
            fields.insert("action".into(), Value::String(label.clone()));
        }
    }
    serde_json::to_vec(&entries).unwrap_or_else(|_| body.to_vec())
}

/// Each initial state's label: `Init` when there is one; otherwise `Init:` and the variables
/// whose values tell the initial states apart.
pub fn init_labels(inits: &[Vec<(&str, Shown)>]) -> Vec<String> {
    if inits.len() <= 1 {
        return vec!["Init".to_string(); inits.len()];
    }
    let differs = |name: &str| {
        let value = |vars: &Vec<(&str, Shown)>| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        };
        inits.iter().any(|vars| value(vars) != value(&inits[0]))
    };
    inits
        .iter()
        .map(|vars| {
            let apart: Vec<String> = vars
                .iter()
                .filter(|(name, _)| differs(name))
                .map(|(name, value)| format!("{name}={value}"))
                .collect();
            format!("Init: {}", apart.join("  "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_states_are_told_apart_by_what_differs() {
        let inits = vec![
            vec![("op", Shown::name("<persist>")), ("pos", Shown::from(0u8))],
            vec![("op", Shown::name("<skip>")), ("pos", Shown::from(0u8))],
        ];
        assert_eq!(
            init_labels(&inits),
            vec!["Init: op=<persist>", "Init: op=<skip>"]
        );
        assert_eq!(init_labels(&inits[..1]), vec!["Init"]);
    }

    #[test]
    fn the_status_names_the_config_and_the_inits_their_labels() {
        let names = Names {
            title: "epoch_refines: Epoch with MaxOffset=3".into(),
            inits: vec!["Init: a=1".into(), "Init: a=2".into()],
        };
        let status = renamed_status(br#"{"model":"Explorable<Epoch>","done":false}"#, &names);
        let status: Value = serde_json::from_slice(&status).unwrap();
        assert_eq!(status["model"], "epoch_refines: Epoch with MaxOffset=3");
        assert_eq!(status["done"], false);
        let states = labelled_inits(
            br#"[{"state":"x","actionIndex":1},{"action":"Step","state":"y"}]"#,
            &names,
        );
        let states: Value = serde_json::from_slice(&states).unwrap();
        assert_eq!(states[0]["action"], "Init: a=2");
        assert_eq!(states[1]["action"], "Step");
    }
}
