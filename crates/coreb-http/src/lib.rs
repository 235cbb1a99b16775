//! `coreb-http`: the one retry and rate-limit policy of coreb's HTTP calls.
//!
//! - [`retry`]: the retry loop ([`retry::send_with_retries`]): limits taken before every
//!   attempt, exponential backoff with jitter ([`RetryConfig`]), `Retry-After` honoured.
//! - [`limiter`]: the requests- and tokens-per-minute buckets that make up [`retry::Limits`].
//! - [`circuit`]: a circuit breaker per endpoint ([`CircuitConfig`]): attempts in a row that
//!   got no answer, or server errors in a row, across requests, pause the endpoint's requests
//!   for a probe request and, when the probes fail too, stop them with one report.
//! - [`runtime()`]: the async runtime those calls run on, built in this one place: a build's
//!   engine holds one, a command that calls an endpoint asks for one, and library code is given
//!   its [`tokio::runtime::Handle`].
//!
//! Its callers — the LLM gateway (`coreb-llm`), the embeddings and rerank client
//! (`coreb-eval`) and the downloads of `fetch` (`coreb-stages`) — say what an attempt is and
//! how its answer is classified; this crate decides only when to try again
//! (and, through a [`circuit::Circuit`], when an endpoint is down).
#![deny(missing_docs)]

pub mod circuit;
pub mod limiter;
pub mod retry;

pub use circuit::CircuitConfig;
pub use retry::RetryConfig;

use std::time::Duration;

/// Seconds as a [`Duration`] (for configs in seconds): negative or NaN is zero, too large
/// or infinite saturates (never the panic of `Duration::from_secs_f64`).
pub fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// The async runtime coreb's HTTP calls run on, made here and nowhere else: multi-threaded,
/// with `workers` worker threads (at least one; `None`: one per core), I/O and timers
/// enabled. Blocking callers enter it with `block_on`, from any number of threads at once
/// (the corpus's output shards embed their pairs in parallel).
pub fn runtime(workers: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = workers {
        builder.worker_threads(n.max(1));
    }
    builder.enable_all().build()
}
