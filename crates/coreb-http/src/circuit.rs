//! A circuit breaker per endpoint: tells an endpoint that is *down* from one that is *flaky*.
//!
//! The retry loop ([`crate::retry`]) retries each request on its own; against an endpoint
//! that is down, every item then pays every attempt and its backoff (a month: thousands of
//! requests before a stage gives up). A [`Circuit`] looks at the attempts of all requests to
//! one endpoint together, in the order they end:
//!
//! - **closed** (the normal state): every attempt goes. An answer (any answer in the protocol,
//!   a 4xx rejection included) resets the runs; `transport_failures` attempts in a row that
//!   got no answer (refused, DNS, TLS, timeouts, cut connections) or `server_errors` answers
//!   in a row that were 5xx or not in the protocol at all open the circuit. Throttling (429,
//!   408, 409, 425) is neither: a rate-limited endpoint is up.
//! - **open**: no attempt goes; requests wait (they are not failed: a stage paused by a short
//!   outage resumes). After `open_secs` the circuit is **half-open** (resilience4j's name;
//!   Envoy's outlier detection ejects a host for a while likewise): one waiting request, the
//!   one retried most, goes as the **probe** and keeps its own retries (their backoff
//!   included) for up to `probe_attempts` attempts, while the others keep waiting. The
//!   most-retried request goes first because an endpoint that fails each request's first
//!   attempts but answers its retries is flaky, not down: a fresh request would fail as
//!   the probe.
//! - the probe answered (or was throttled): closed again, everyone goes on. It failed (all
//!   its probe attempts, or its request gave up): the next most-retried waiting request
//!   probes, until `probes` probe requests have failed; then the circuit is **tripped** for
//!   good and every attempt, waiting or new, is refused at once, so the stage stops with one
//!   message ([`Circuit::report`]). Two probe requests, not one, so that a request that can
//!   never be answered (its prompt breaks the server) cannot stop a stage by itself.
//!
//! An outcome that ends after the circuit opened (an attempt already in flight) still counts
//! in the tally; an answer closes the circuit whatever the state, except once tripped.
//!
//! Each request takes a [`Ticket`] ([`Circuit::ticket`]) and asks it for every attempt
//! ([`Ticket::admit`]); the caller classifies each attempt ([`Outcome`]). This module knows no
//! HTTP.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// `[llm.circuit]`: when an endpoint counts as down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CircuitConfig {
    /// Attempts in a row, over all requests, that got no answer at all (connection refused,
    /// DNS, TLS, timeouts, cut connections) that open the circuit (0: never).
    pub transport_failures: u32,
    /// Answers in a row, over all requests, that were 5xx or not in the endpoint's protocol
    /// (HTML from a proxy, broken JSON) that open the circuit (0: never).
    pub server_errors: u32,
    /// Seconds the circuit stays open before a probe request goes.
    pub open_secs: f64,
    /// Probe requests that must fail before the circuit trips for good and the stage stops
    /// (0: it stops as soon as the circuit opens).
    pub probes: u32,
    /// Attempts a probe request makes (with its own retries' backoff) before it counts as a
    /// failed probe (at least 1).
    pub probe_attempts: u32,
}

impl Default for CircuitConfig {
    fn default() -> Self {
        CircuitConfig {
            transport_failures: 5,
            server_errors: 10,
            open_secs: 5.0,
            probes: 2,
            probe_attempts: 2,
        }
    }
}

impl CircuitConfig {
    /// Check what serde cannot; messages name the field under `prefix` (`llm.circuit`).
    pub fn validate(&self, prefix: &str) -> Result<(), String> {
        if self.open_secs.is_nan() || self.open_secs < 0.0 {
            return Err(format!(
                "`{prefix}.open_secs`: must be 0 or more, not `{}`",
                self.open_secs
            ));
        }
        if self.probe_attempts == 0 {
            return Err(format!("`{prefix}.probe_attempts`: must be at least 1"));
        }
        Ok(())
    }
}

/// What one attempt came to, as the circuit sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The endpoint answered in its protocol (usable or not, a 4xx rejection included).
    Answered,
    /// Throttled (429, 408, 409, 425): the endpoint is up; no run grows or resets.
    Throttled,
    /// No answer at all: refused, DNS, TLS, a timeout, a cut connection.
    Transport,
    /// A 5xx, or a 2xx that is not in the protocol.
    ServerError,
}

/// Why the circuit opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// `n` attempts in a row got no answer.
    Transport(u32),
    /// `n` answers in a row were server errors or not in the protocol.
    ServerErrors(u32),
}

/// Counts over every attempt through the circuit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Attempts made (admitted and ended).
    pub attempts: u64,
    /// Attempts that reached the endpoint (every one but those that could not connect).
    pub reached: u64,
    /// Attempts that failed (transport failures and server errors).
    pub failed: u64,
}

/// What [`Circuit::report`] tells: the tally, why it opened, what the last failure was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The counts so far.
    pub tally: Tally,
    /// Why the circuit (last) opened, if it did.
    pub opened: Option<Opened>,
    /// Probe requests that failed since it (last) opened.
    pub failed_probes: u32,
    /// The last failure's description.
    pub last_failure: Option<String>,
    /// Is it tripped for good?
    pub tripped: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Closed,
    Open {
        until: Instant,
    },
    /// Half-open: `prober` (a ticket id) probes, `failures` of its probe attempts failed.
    Probing {
        prober: Option<u64>,
        failures: u32,
    },
    Tripped,
}

#[derive(Debug)]
struct Inner {
    state: State,
    transport_run: u32,
    server_run: u32,
    failed_probes: u32,
    opened: Option<Opened>,
    last_failure: Option<String>,
    tally: Tally,
    next_ticket: u64,
    /// Requests waiting to be admitted: ticket id → the attempt they wait to make.
    waiting: BTreeMap<u64, u32>,
}

/// The circuit of one endpoint, shared by every request to it.
#[derive(Debug)]
pub struct Circuit {
    endpoint: String,
    config: CircuitConfig,
    inner: Mutex<Inner>,
}

/// The circuit is tripped: nothing more is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tripped;

/// One request's place at the circuit, for all its attempts; dropped when the request ends
/// (a probe request that ends unanswered is a failed probe).
#[derive(Debug)]
pub struct Ticket<'a> {
    circuit: &'a Circuit,
    id: u64,
}

/// Leave to make one attempt; [`Permit::record`] its outcome.
#[derive(Debug)]
pub struct Permit<'a> {
    circuit: &'a Circuit,
    id: u64,
    probe: bool,
}

/// How long a waiting attempt sleeps before it looks at the state again.
const POLL: Duration = Duration::from_millis(50);

impl Circuit {
    /// A closed circuit for `endpoint` (named in its log lines).
    pub fn new(endpoint: impl Into<String>, config: CircuitConfig) -> Self {
        let inner = Inner {
            state: State::Closed,
            transport_run: 0,
            server_run: 0,
            failed_probes: 0,
            opened: None,
            last_failure: None,
            tally: Tally::default(),
            next_ticket: 0,
            waiting: BTreeMap::new(),
        };
        Circuit { endpoint: endpoint.into(), config, inner: Mutex::new(inner) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A ticket for one request.
    pub fn ticket(&self) -> Ticket<'_> {
        let mut inner = self.lock();
        inner.next_ticket += 1;
        Ticket { circuit: self, id: inner.next_ticket }
    }

    /// Is the circuit tripped for good?
    pub fn is_tripped(&self) -> bool {
        self.lock().state == State::Tripped
    }

    /// The counts and the cause so far.
    pub fn report(&self) -> Report {
        let inner = self.lock();
        Report {
            tally: inner.tally,
            opened: inner.opened,
            failed_probes: inner.failed_probes,
            last_failure: inner.last_failure.clone(),
            tripped: inner.state == State::Tripped,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CircuitConfig {
        &self.config
    }

    /// Wait until ticket `id` may make its `attempt`-th attempt (see [`Ticket::admit`]).
    async fn admit(&self, id: u64, attempt: u32) -> Result<Permit<'_>, Tripped> {
        loop {
            let wait = {
                let mut inner = self.lock();
                if let State::Open { until } = inner.state
                    && Instant::now() >= until
                {
                    inner.state = State::Probing { prober: None, failures: 0 };
                }
                match inner.state {
                    State::Closed => {
                        inner.waiting.remove(&id);
                        return Ok(Permit { circuit: self, id, probe: false });
                    }
                    State::Tripped => {
                        inner.waiting.remove(&id);
                        return Err(Tripped);
                    }
                    State::Open { until } => {
                        inner.waiting.insert(id, attempt);
                        (until - Instant::now()).min(POLL)
                    }
                    State::Probing { prober, failures } => {
                        inner.waiting.insert(id, attempt);
                        // The next probe: the waiting request retried most (the earliest of those).
                        let prober = prober.or_else(|| {
                            inner
                                .waiting
                                .iter()
                                .max_by_key(|(t, a)| (**a, std::cmp::Reverse(**t)))
                                .map(|(t, _)| *t)
                        });
                        inner.state = State::Probing { prober, failures };
                        if prober == Some(id) {
                            inner.waiting.remove(&id);
                            return Ok(Permit { circuit: self, id, probe: true });
                        }
                        POLL
                    }
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    fn record(&self, id: u64, probe: bool, outcome: Outcome, reached: bool, detail: &str) {
        let mut inner = self.lock();
        inner.tally.attempts += 1;
        inner.tally.reached += u64::from(reached);
        let probing = match inner.state {
            State::Probing { prober: Some(p), failures } if probe && p == id => Some(failures),
            _ => None,
        };
        match outcome {
            Outcome::Answered => {
                inner.transport_run = 0;
                inner.server_run = 0;
                if inner.state != State::Tripped {
                    self.close(&mut inner);
                }
            }
            Outcome::Throttled => {
                inner.transport_run = 0;
                if probing.is_some() {
                    self.close(&mut inner);
                }
            }
            Outcome::Transport | Outcome::ServerError => {
                inner.tally.failed += 1;
                inner.last_failure = Some(detail.to_owned());
                let (run, limit, opened) = if outcome == Outcome::Transport {
                    inner.transport_run += 1;
                    (
                        inner.transport_run,
                        self.config.transport_failures,
                        Opened::Transport(inner.transport_run),
                    )
                } else {
                    inner.transport_run = 0;
                    inner.server_run += 1;
                    (
                        inner.server_run,
                        self.config.server_errors,
                        Opened::ServerErrors(inner.server_run),
                    )
                };
                if let Some(failures) = probing {
                    if failures + 1 >= self.config.probe_attempts {
                        self.failed_probe(&mut inner);
                    } else {
                        inner.state = State::Probing { prober: Some(id), failures: failures + 1 };
                    }
                } else if inner.state == State::Closed && limit > 0 && run >= limit {
                    inner.opened = Some(opened);
                    inner.failed_probes = 0;
                    tracing::info!(endpoint = %self.endpoint, ?opened, last = %detail, pause_secs = self.config.open_secs, "circuit opened: requests wait for a probe");
                    inner.state = if self.config.probes == 0 {
                        State::Tripped
                    } else {
                        State::Open { until: Instant::now() + crate::secs(self.config.open_secs) }
                    };
                }
            }
        }
    }

    /// The probe request failed: the next one probes, or, after `probes` of them, trip.
    fn failed_probe(&self, inner: &mut Inner) {
        inner.failed_probes += 1;
        inner.state = if inner.failed_probes >= self.config.probes {
            State::Tripped
        } else {
            State::Probing { prober: None, failures: 0 }
        };
    }

    fn close(&self, inner: &mut Inner) {
        if inner.state != State::Closed {
            // A pause the operator should hear of: the stage goes on.
            tracing::warn!(endpoint = %self.endpoint, opened = ?inner.opened, last = ?inner.last_failure, "the endpoint failed for a while; requests were paused and go on now");
        }
        inner.state = State::Closed;
        inner.failed_probes = 0;
    }
}

impl<'a> Ticket<'a> {
    /// Wait until this request may make its `attempt`-th attempt (1-based): at once while the
    /// circuit is closed; while it is open, until a probe answered (or, when it is this
    /// request's turn, as the probe). Tripped: refused.
    pub async fn admit(&self, attempt: u32) -> Result<Permit<'a>, Tripped> {
        self.circuit.admit(self.id, attempt).await
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut inner = self.circuit.lock();
        inner.waiting.remove(&self.id);
        // The probe request ended without an answer (it gave up, or failed for another reason).
        if matches!(inner.state, State::Probing { prober: Some(p), .. } if p == self.id) {
            self.circuit.failed_probe(&mut inner);
        }
    }
}

impl Permit<'_> {
    /// May the attempt still go? (The circuit may have opened since it was admitted, while it
    /// waited for a slot: then only the probe goes.)
    pub fn is_current(&self) -> bool {
        match self.circuit.lock().state {
            State::Closed => true,
            State::Probing { prober: Some(p), .. } => self.probe && p == self.id,
            State::Open { .. } | State::Probing { prober: None, .. } | State::Tripped => false,
        }
    }

    /// Count the attempt's outcome; `reached`: the request got to the endpoint (everything but
    /// a failure to connect); `detail`: what went wrong, for the report.
    pub fn record(self, outcome: Outcome, reached: bool, detail: &str) {
        self.circuit.record(self.id, self.probe, outcome, reached, detail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn circuit(
        transport_failures: u32,
        server_errors: u32,
        probes: u32,
        probe_attempts: u32,
    ) -> Circuit {
        Circuit::new(
            "test",
            CircuitConfig {
                transport_failures,
                server_errors,
                open_secs: 5.0,
                probes,
                probe_attempts,
            },
        )
    }

    /// One request's single attempt.
    async fn attempt(c: &Circuit, outcome: Outcome) -> Result<(), Tripped> {
        c.ticket().admit(1).await?.record(outcome, outcome != Outcome::Transport, "x");
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn consecutive_transport_failures_open_it_and_failed_probes_trip_it() {
        let c = circuit(3, 10, 2, 2);
        for _ in 0..2 {
            attempt(&c, Outcome::Transport).await.unwrap();
        }
        assert_eq!(c.lock().state, State::Closed);
        attempt(&c, Outcome::Transport).await.unwrap();
        assert!(matches!(c.lock().state, State::Open { .. }));
        // A request waits the open time, then probes; it keeps its retries for 2 attempts.
        let started = Instant::now();
        let first = c.ticket();
        let p = first.admit(2).await.unwrap();
        assert_eq!(started.elapsed().as_secs(), 5);
        assert!(p.probe);
        p.record(Outcome::Transport, false, "refused");
        assert!(!c.is_tripped());
        first.admit(3).await.unwrap().record(Outcome::Transport, false, "refused");
        // Its two attempts failed: the next request probes, at once.
        let second = c.ticket();
        second.admit(1).await.unwrap().record(Outcome::Transport, false, "refused");
        assert_eq!(started.elapsed().as_secs(), 5);
        // The probe request gives up (its retries are spent): that is its failed probe too.
        drop(second);
        assert!(c.is_tripped());
        assert_eq!(attempt(&c, Outcome::Answered).await, Err(Tripped));
        let r = c.report();
        assert_eq!(
            (r.tally, r.opened, r.failed_probes, r.last_failure.as_deref()),
            (
                Tally { attempts: 6, reached: 0, failed: 6 },
                Some(Opened::Transport(3)),
                2,
                Some("refused")
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_flaky_endpoint_never_opens_it() {
        let c = circuit(3, 3, 1, 1);
        for _ in 0..100 {
            attempt(&c, Outcome::Transport).await.unwrap();
            attempt(&c, Outcome::ServerError).await.unwrap();
            attempt(&c, Outcome::ServerError).await.unwrap();
            attempt(&c, Outcome::Answered).await.unwrap();
            // Throttling neither opens it nor resets the server-error run.
            attempt(&c, Outcome::Throttled).await.unwrap();
        }
        assert_eq!(c.lock().state, State::Closed);
        assert_eq!(c.report().tally, Tally { attempts: 500, reached: 400, failed: 300 });
        // A 5xx resets the transport run (the endpoint is reachable), not the other way round.
        let c = circuit(2, 3, 1, 1);
        for o in [
            Outcome::Transport,
            Outcome::ServerError,
            Outcome::Transport,
            Outcome::ServerError,
            Outcome::Transport,
        ] {
            attempt(&c, o).await.unwrap();
        }
        assert_eq!(c.lock().state, State::Closed);
        attempt(&c, Outcome::ServerError).await.unwrap();
        assert!(matches!(c.lock().state, State::Open { .. }));
        assert_eq!(c.report().opened, Some(Opened::ServerErrors(3)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_most_retried_waiting_request_probes_and_its_answer_lets_everyone_go() {
        let c = Arc::new(circuit(1, 1, 1, 1));
        attempt(&c, Outcome::ServerError).await.unwrap();
        // Waiters on their first, third and second attempts: the third-attempt one probes.
        let mut waiters = Vec::new();
        for (i, at) in [1u32, 3, 2].into_iter().enumerate() {
            let c = c.clone();
            waiters.push(tokio::spawn(async move {
                let ticket = c.ticket();
                let p = ticket.admit(at).await.unwrap();
                let probe = p.probe;
                p.record(Outcome::Answered, true, &format!("w{i}"));
                (at, probe)
            }));
            tokio::task::yield_now().await;
        }
        let started = Instant::now();
        let mut out = Vec::new();
        for w in waiters {
            out.push(w.await.unwrap());
        }
        assert_eq!(out, [(1, false), (3, true), (2, false)]);
        assert_eq!(started.elapsed().as_secs(), 5, "one pause");
        assert_eq!(c.lock().state, State::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn no_probes_trip_it_at_once_and_zero_thresholds_never_open_it() {
        let c = circuit(2, 0, 0, 1);
        attempt(&c, Outcome::Transport).await.unwrap();
        attempt(&c, Outcome::Transport).await.unwrap();
        assert!(c.is_tripped());
        let c = circuit(0, 0, 0, 1);
        for _ in 0..50 {
            attempt(&c, Outcome::Transport).await.unwrap();
            attempt(&c, Outcome::ServerError).await.unwrap();
        }
        assert_eq!(c.lock().state, State::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_throttled_probe_closes_it_and_an_answer_in_flight_does_too() {
        let c = circuit(1, 1, 1, 1);
        attempt(&c, Outcome::Transport).await.unwrap();
        let t = c.ticket();
        let probe = t.admit(1).await.unwrap();
        assert!(probe.probe);
        probe.record(Outcome::Throttled, true, "429");
        assert_eq!(c.lock().state, State::Closed);
        // An attempt admitted before it opened, answered while it is open, closes it too.
        let early = c.ticket();
        let in_flight = early.admit(1).await.unwrap();
        attempt(&c, Outcome::ServerError).await.unwrap();
        assert!(matches!(c.lock().state, State::Open { .. }));
        in_flight.record(Outcome::Answered, true, "");
        assert_eq!(c.lock().state, State::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_permit_from_before_the_circuit_opened_is_not_current_after() {
        let c = circuit(1, 1, 1, 1);
        let (early, probe) = (c.ticket(), c.ticket());
        let admitted = early.admit(1).await.unwrap();
        assert!(admitted.is_current());
        attempt(&c, Outcome::ServerError).await.unwrap();
        assert!(!admitted.is_current(), "it goes back to the gate");
        let p = probe.admit(1).await.unwrap();
        assert!(p.probe && p.is_current());
    }

    #[test]
    fn config_defaults_and_checks() {
        let c = CircuitConfig::default();
        assert_eq!(
            (c.transport_failures, c.server_errors, c.open_secs, c.probes, c.probe_attempts),
            (5, 10, 5.0, 2, 2)
        );
        assert!(
            CircuitConfig { open_secs: -1.0, ..c.clone() }
                .validate("llm.circuit")
                .unwrap_err()
                .contains("`llm.circuit.open_secs`")
        );
        assert!(
            CircuitConfig { open_secs: f64::NAN, ..c.clone() }.validate("llm.circuit").is_err()
        );
        assert_eq!(
            CircuitConfig { probe_attempts: 0, ..c.clone() }.validate("llm.circuit").unwrap_err(),
            "`llm.circuit.probe_attempts`: must be at least 1"
        );
        CircuitConfig { open_secs: 0.0, ..c }.validate("llm.circuit").unwrap();
    }
}
