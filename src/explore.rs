//! `loadbearing explore`: Stateright's web explorer on one config's model, with a link that
//! opens the shortest counterexample of an expected failure step by step.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};

use loadbearing_refinement::view::ViewError;
use loadbearing_refinement::Options;

use crate::trace::{self, config_line, explorer_fragment, TraceError};
use loadbearing_expected::suite::Config;

/// Why the explorer could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    #[error(
        "cannot listen on {address}: {source}; is another explorer running? pass --port with a free port"
    )]
    PortTaken {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Serve(#[from] ViewError),
}

/// What `explore` announces before it serves.
pub struct Plan {
    pub address: SocketAddr,
    pub url: String,
    /// For an expected failure: the property and the URL that opens its shortest counterexample.
    pub counterexample: Option<(String, usize, String)>,
    pub traced: Option<trace::Traced>,
}

pub fn plan(config: &Config, port: u16) -> Result<Plan, TraceError> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let url = format!("http://{address}/");
    let mut plan = Plan {
        address,
        url,
        counterexample: None,
        traced: None,
    };
    // With --set the outcome may differ from the declared one: find out.
    if trace::expects_failure(config) || config.overridden {
        let traced = trace::trace(config, &Options::default())?;
        if let (Some(cx), Some(path)) = (traced.counterexample(), &traced.explorer_path) {
            plan.counterexample = Some((
                cx.property.clone(),
                cx.len(),
                format!("{}{}", plan.url, explorer_fragment(path)),
            ));
        }
        plan.traced = Some(traced);
    }
    Ok(plan)
}

/// Prints the URLs and serves until the process is stopped.
pub fn serve(config: &Config, port: u16) -> Result<(), ExploreError> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    // Stateright's server panics on a taken port: find out before announcing anything.
    drop(TcpListener::bind(address).map_err(|source| ExploreError::PortTaken { address, source })?);
    let plan = plan(config, port)?;
    match &plan.traced {
        Some(t) => serve_view(config, &plan, t.view.as_ref())?,
        None => serve_view(config, &plan, trace::view_of(config).as_ref())?,
    }
    Ok(())
}

fn serve_view(
    config: &Config,
    plan: &Plan,
    view: &dyn loadbearing_refinement::view::View,
) -> Result<(), ViewError> {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", config_line(config));
    let _ = writeln!(out, "Stateright's explorer: {}", plan.url);
    match &plan.counterexample {
        Some((property, steps, link)) => {
            let _ = writeln!(
                out,
                "the shortest counterexample to {property} ({steps} step{}): {link}",
                if *steps == 1 { "" } else { "s" }
            );
        }
        None => {
            let _ = writeln!(out, "expected: {}", config.expected);
        }
    }
    if let Some(why) = plan
        .traced
        .as_ref()
        .and_then(|t| t.judged.mismatch.as_ref())
    {
        let _ = writeln!(out, "not as the config declares: {why}");
    }
    let unchecked = view.unchecked();
    if !unchecked.is_empty() {
        let _ = writeln!(
            out,
            "not checked by the explorer (liveness, checked under fairness by `loadbearing check`): {}",
            unchecked.join(", ")
        );
    }
    let _ = writeln!(out, "Ctrl-C stops it.");
    let _ = out.flush();
    drop(out);
    let report = plan.traced.as_ref().map(|t| t.judged.report.as_ref());
    view.serve(plan.address, report, &config_line(config))
}
