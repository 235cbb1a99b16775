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
//! - [`client_builder`]: the one way to make a `reqwest` client, with rustls over ring's
//!   crypto installed.
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

use std::sync::Once;
use std::time::Duration;

/// A `reqwest` client builder whose TLS is rustls with ring's crypto provider: every client
/// coreb makes comes from here. reqwest is built with `rustls-no-provider` (so that
/// aws-lc-rs, a long C build, is not), and a client built before a provider is installed
/// panics; this installs ring's as the process default first (once; a provider installed
/// already by someone else is kept).
pub fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // An error means a provider is installed already: clients use that one.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    #[expect(clippy::disallowed_methods, reason = "the one place a client builder is made")]
    reqwest::Client::builder()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_installs_a_provider_once_and_builds_clients() {
        let first = client_builder().build().expect("a client");
        let second = client_builder()
            .timeout(Duration::from_secs(1))
            .https_only(true)
            .build()
            .expect("a second client");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        drop((first, second));
    }
}
