//! coreb's one retry loop for HTTP calls: the limits ([`Limits`]: concurrency cap, requests-
//! and tokens-per-minute buckets) are taken before every attempt, retryable failures wait
//! the exponential backoff with jitter of [`RetryConfig`] (`backon`), or what the server's
//! `Retry-After` asks (capped), and the attempts stop at `max_attempts`.
//!
//! The LLM chat gateway (`coreb_llm::Gateway`), the embeddings/rerank client
//! (`coreb_eval::embed`) and the downloads of `fetch` all send through [`send_with_retries`], each with its own
//! limits and settings; what an attempt is and how its answer is classified stays with the
//! caller. The gateway sends through [`send_through`]: the same loop, each attempt admitted
//! first by the endpoint's circuit ([`crate::circuit`]). Does NOT talk HTTP itself.

use std::future::Future;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use tokio::sync::Semaphore;

use serde::{Deserialize, Serialize};

use crate::limiter::Bucket;

/// `[llm.retry]`: coreb's retry policy around every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts per request, the first included (429, 5xx, timeouts, broken bodies).
    pub max_attempts: u32,
    /// First backoff delay (ms), doubled each retry, with jitter.
    pub min_delay_ms: u64,
    /// Longest backoff delay (ms).
    pub max_delay_ms: u64,
    /// Longest `Retry-After` honoured (s); a longer one is capped to this.
    pub max_retry_after_secs: u64,
    /// Other samples (the next seeds) asked for an answer that stopped for `length` or
    /// `content_filter`, only in a stage that asks for several samples at a temperature above
    /// 0. An identical request is never sent again: at temperature 0 with a seed it gives the
    /// same cut answer.
    pub resample_attempts: u32,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 6,
            min_delay_ms: 500,
            max_delay_ms: 60_000,
            max_retry_after_secs: 300,
            resample_attempts: 1,
        }
    }
}

/// The client-side limits one endpoint is used under.
#[derive(Debug)]
pub struct Limits {
    slots: Semaphore,
    requests: Option<Bucket>,
    tokens: Option<Bucket>,
}

impl Limits {
    /// At most `concurrency` attempts in flight, `requests_per_minute` and `tokens_per_minute`
    /// (0: unlimited).
    pub fn new(concurrency: usize, requests_per_minute: u64, tokens_per_minute: u64) -> Self {
        Limits {
            slots: Semaphore::new(concurrency.max(1)),
            requests: Bucket::per_minute(requests_per_minute),
            tokens: Bucket::per_minute(tokens_per_minute),
        }
    }
}

/// What one attempt came to.
#[derive(Debug)]
pub enum Step<T, E> {
    /// An answer: stop.
    Done(T),
    /// Worth another try, perhaps after the server's `Retry-After`.
    Retry {
        /// What went wrong (kept for the final error).
        reason: String,
        /// The server's `Retry-After`, if any.
        after: Option<Duration>,
    },
    /// A failure retrying cannot help: stop.
    Fail(E),
}

/// Why [`send_with_retries`] gave up.
#[derive(Debug)]
pub enum GaveUp<E> {
    /// An attempt failed for good.
    Failed(E),
    /// Every attempt asked for a retry.
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's reason.
        last: String,
    },
}

/// Run `attempt` (given the 1-based attempt number) under `limits` until it is done, fails,
/// or `retry.max_attempts` attempts asked for a retry. `estimated_tokens` is taken from the
/// tokens-per-minute bucket before each attempt.
pub async fn send_with_retries<T, E, F, Fut>(
    retry: &RetryConfig,
    limits: &Limits,
    estimated_tokens: u64,
    mut attempt: F,
) -> Result<T, GaveUp<E>>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Step<T, E>>,
{
    retry_loop(
        retry,
        limits,
        estimated_tokens,
        |_| async { Ok::<(), E>(()) },
        |()| true,
        |n, ()| attempt(n),
    )
    .await
}

/// [`send_with_retries`] through an endpoint's circuit: before each attempt (and before its
/// limits are taken, so that requests waiting for the circuit hold no slot) `ticket` admits
/// it ([`crate::circuit::Ticket::admit`]); `attempt` gets the permit and records the outcome
/// on it. A tripped circuit ends the request with `tripped()`.
pub async fn send_through<'c, T, E, F, Fut>(
    retry: &RetryConfig,
    limits: &Limits,
    ticket: &crate::circuit::Ticket<'c>,
    estimated_tokens: u64,
    tripped: impl Fn() -> E,
    attempt: F,
) -> Result<T, GaveUp<E>>
where
    F: FnMut(u32, crate::circuit::Permit<'c>) -> Fut,
    Fut: Future<Output = Step<T, E>>,
{
    let tripped = &tripped;
    retry_loop(
        retry,
        limits,
        estimated_tokens,
        |n| async move { ticket.admit(n).await.map_err(|_| tripped()) },
        crate::circuit::Permit::is_current,
        attempt,
    )
    .await
}

/// The loop: `gate(n)` lets attempt `n` go (or ends the request), then the limits are taken
/// and, when the pass is `current` still (the circuit may have opened while the attempt waited
/// for a slot: then it goes back to the gate), `attempt(n, pass)` runs.
async fn retry_loop<T, E, P, G, GFut, F, Fut>(
    retry: &RetryConfig,
    limits: &Limits,
    estimated_tokens: u64,
    mut gate: G,
    current: impl Fn(&P) -> bool,
    mut attempt: F,
) -> Result<T, GaveUp<E>>
where
    G: FnMut(u32) -> GFut,
    GFut: Future<Output = Result<P, E>>,
    F: FnMut(u32, P) -> Fut,
    Fut: Future<Output = Step<T, E>>,
{
    let mut delays = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(retry.min_delay_ms))
        .with_max_delay(Duration::from_millis(retry.max_delay_ms))
        .with_max_times(retry.max_attempts.saturating_sub(1) as usize)
        .with_jitter()
        .build();
    let mut attempts = 0u32;
    loop {
        let pass = gate(attempts + 1).await.map_err(GaveUp::Failed)?;
        if let Some(bucket) = &limits.requests {
            bucket.acquire(1).await;
        }
        if let Some(bucket) = &limits.tokens {
            bucket.acquire(estimated_tokens).await;
        }
        let step = {
            // The semaphore is never closed, so acquiring cannot fail.
            let _slot = limits.slots.acquire().await.ok();
            if !current(&pass) {
                continue;
            }
            attempts += 1;
            attempt(attempts, pass).await
        };
        match step {
            Step::Done(value) => return Ok(value),
            Step::Fail(e) => return Err(GaveUp::Failed(e)),
            Step::Retry { reason, after } => {
                let Some(backoff) = delays.next() else {
                    return Err(GaveUp::Exhausted { attempts, last: reason });
                };
                // The server's `Retry-After` wins over our own schedule (capped).
                let wait = after
                    .map_or(backoff, |a| a.min(Duration::from_secs(retry.max_retry_after_secs)));
                tracing::info!(attempt = attempts, ?wait, %reason, "retrying");
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// Statuses worth another attempt: 408, 409, 425, 429 and every 5xx.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429 | 500..=599)
}

/// coreb's one `Retry-After` parser (chat, embeddings, downloads): `retry-after-ms`
/// (OpenAI's, milliseconds), else `Retry-After` as delay-seconds or an HTTP date (RFC 9110).
///
/// Whatever a server sends, this never panics: a value that is not a plain non-negative
/// decimal (`-5`, `inf`, `NaN`, `1e30`, `soon`) or a valid IMF-fixdate is ignored (`None`:
/// our own backoff applies), a huge one saturates (the retry loop caps every wait at
/// `max_retry_after_secs`), and a date in the past means no wait.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) =
        text("retry-after-ms").and_then(|v| decimal_delay(v, Duration::from_millis(1)))
    {
        return Some(ms);
    }
    let value = text("retry-after")?;
    if let Some(s) = decimal_delay(value, Duration::from_secs(1)) {
        return Some(s);
    }
    let at = http_date(value)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// `digits[.digits]` times `unit` (seconds or milliseconds), saturating; `None` for any other
/// text. Integer arithmetic only: no float can overflow a `Duration`.
fn decimal_delay(value: &str, unit: Duration) -> Option<Duration> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (value.contains('.') && !digits(fraction)) {
        return None;
    }
    let whole =
        whole.bytes().fold(0u64, |n, b| n.saturating_mul(10).saturating_add(u64::from(b - b'0')));
    // The fraction in billionths of a unit (digits past the ninth are dropped).
    let billionths = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(9)
        .fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
    let nanos = u128::from(whole) * unit.as_nanos()
        + u128::from(billionths) * unit.as_nanos() / 1_000_000_000;
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// Seconds since the epoch of an IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`), the only
/// date form RFC 9110 requires senders to use.
pub fn http_date(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts[..] else {
        return None;
    };
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .iter()
        .position(|m| *m == month)? as u64
        + 1;
    let (day, year): (u64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<u64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [h, m, sec] = hms[..] else { return None };
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 || !(0..=9999).contains(&year) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400) as u64;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe as i64 - 719_468;
    u64::try_from(days).ok().map(|d| d * 86_400 + h * 3600 + m * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_until_done_or_exhausted() {
        let retry = RetryConfig {
            max_attempts: 3,
            min_delay_ms: 10,
            max_delay_ms: 20,
            ..RetryConfig::default()
        };
        let limits = Limits::new(1, 0, 0);
        let r: Result<u32, GaveUp<()>> = send_with_retries(&retry, &limits, 0, |n| async move {
            if n < 3 {
                Step::Retry { reason: format!("try {n}"), after: None }
            } else {
                Step::Done(n)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
        let r: Result<u32, GaveUp<()>> = send_with_retries(&retry, &limits, 0, |n| async move {
            Step::Retry { reason: format!("try {n}"), after: Some(Duration::from_secs(1)) }
        })
        .await;
        assert!(matches!(r, Err(GaveUp::Exhausted { attempts: 3, ref last }) if last == "try 3"));
        let r: Result<u32, GaveUp<&str>> =
            send_with_retries(&retry, &limits, 0, |_| async { Step::Fail("no") }).await;
        assert!(matches!(r, Err(GaveUp::Failed("no"))));
        assert!(
            is_retryable_status(429)
                && is_retryable_status(503)
                && !is_retryable_status(400)
                && !is_retryable_status(401)
        );
    }

    fn headers(pairs: &[(&'static str, &[u8])]) -> reqwest::header::HeaderMap {
        let mut h = reqwest::header::HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(v) = reqwest::header::HeaderValue::from_bytes(value) {
                h.append(*name, v);
            }
        }
        h
    }

    #[test]
    fn hostile_retry_after_values_are_ignored_or_saturate_never_panic() {
        let after = |v: &str| retry_after(&headers(&[("retry-after", v.as_bytes())]));
        let after_ms = |v: &str| retry_after(&headers(&[("retry-after-ms", v.as_bytes())]));
        // What `Duration::from_secs_f64` panicked on before: not numbers a server may send.
        for v in [
            "inf", "-inf", "Infinity", "NaN", "-5", "-0.5", "1e30", "1E3", "0x10", "+3", "", " ",
            "soon", "1.", ".5", "1.2.3", "١٢",
        ] {
            assert_eq!(after(v), None, "Retry-After: {v:?}");
            assert_eq!(after_ms(v), None, "retry-after-ms: {v:?}");
        }
        assert_eq!(after("120"), Some(Duration::from_secs(120)));
        assert_eq!(after(" 1.5 "), Some(Duration::from_millis(1500)));
        assert_eq!(after_ms("250"), Some(Duration::from_millis(250)));
        assert_eq!(after_ms("0.5"), Some(Duration::from_micros(500)));
        // Huge but well-formed: saturates (the retry loop caps it).
        let huge = "1".repeat(400);
        assert_eq!(after(&huge), Some(Duration::new(u64::MAX, 0)));
        assert_eq!(after(&format!("{huge}.999999999999")).map(|d| d.as_secs()), Some(u64::MAX));
        assert_eq!(after_ms(&huge).map(|d| d.as_secs()), Some(u64::MAX / 1000));
        assert_eq!(after("18446744073709551616"), Some(Duration::new(u64::MAX, 0)));
        // Dates: the past means no wait, the far future is a long wait, nonsense is ignored.
        assert_eq!(after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        assert!(
            after("Fri, 31 Dec 9999 23:59:59 GMT")
                .is_some_and(|d| d > Duration::from_secs(200 * 365 * 86_400))
        );
        for v in [
            "Wed, 21 Oct 99999999999 07:28:00 GMT",
            "Wed, 99 Oct 2015 07:28:00 GMT",
            "Wed, 21 Oct -2015 07:28:00 GMT",
            "Wed, 21 Oct 2015 25:00:00 GMT",
        ] {
            assert_eq!(after(v), None, "{v}");
        }
        // Seconds from configs and flags saturate the same way.
        assert_eq!(crate::secs(f64::INFINITY), Duration::MAX);
        assert_eq!(crate::secs(1e30), Duration::MAX);
        assert_eq!(crate::secs(f64::NAN), Duration::ZERO);
        assert_eq!(crate::secs(-3.0), Duration::ZERO);
        // A bad `retry-after-ms` falls back to `Retry-After`.
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", b"inf"), ("retry-after", b"2")])),
            Some(Duration::from_secs(2))
        );
    }

    #[test]
    fn fuzzed_retry_after_headers_never_panic() {
        // A deterministic generator (xorshift) of header values built from digits, signs,
        // dots, exponents, letters and date pieces.
        let pieces: &[&[u8]] = &[
            b"0",
            b"9",
            b"1",
            b".",
            b"-",
            b"+",
            b"e",
            b"E",
            b"inf",
            b"nan",
            b" ",
            b"GMT",
            b"Oct",
            b"Wed,",
            b":",
            b"99999999999",
            b"\xff",
            b"\t",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            let mut value = Vec::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            for k in 0..(state % 12) {
                value
                    .extend_from_slice(pieces[((state >> (4 * k)) % pieces.len() as u64) as usize]);
            }
            for name in ["retry-after", "retry-after-ms"] {
                // The result may be anything; the call must return, and the retry loop caps it.
                let d = retry_after(&headers(&[(name, &value)]));
                let _ = d.map(|d| d.min(Duration::from_secs(300)));
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_huge_retry_after_waits_only_up_to_the_cap() {
        let retry = RetryConfig {
            max_attempts: 2,
            min_delay_ms: 10,
            max_delay_ms: 20,
            max_retry_after_secs: 7,
            ..RetryConfig::default()
        };
        let started = tokio::time::Instant::now();
        let r: Result<u32, GaveUp<()>> =
            send_with_retries(&retry, &Limits::new(1, 0, 0), 0, |n| async move {
                if n < 2 {
                    Step::Retry { reason: "429".into(), after: Some(Duration::MAX) }
                } else {
                    Step::Done(n)
                }
            })
            .await;
        assert_eq!(r.unwrap(), 2);
        assert_eq!(started.elapsed().as_secs(), 7);
    }

    /// What the model audit's test server does: every request's first two attempts get a 500
    /// and one request never gets an answer. The circuit opens (the first attempts are 500s in
    /// a row), but the most-retried request answers as the probe, so it never trips and every
    /// other request is answered within its 3 attempts.
    #[tokio::test(start_paused = true)]
    async fn an_endpoint_that_answers_only_retries_pauses_but_never_trips() {
        use crate::circuit::{Circuit, CircuitConfig, Outcome};
        use std::sync::Arc;
        let c = Arc::new(Circuit::new("test", CircuitConfig::default()));
        let limits = Arc::new(Limits::new(8, 0, 0));
        let retry = RetryConfig { max_attempts: 3, ..RetryConfig::default() };
        let mut requests = Vec::new();
        for r in 0..20u32 {
            let (c, limits, retry) = (c.clone(), limits.clone(), retry.clone());
            requests.push(tokio::spawn(async move {
                let ticket = c.ticket();
                let result: Result<u32, GaveUp<()>> = send_through(
                    &retry,
                    &limits,
                    &ticket,
                    0,
                    || (),
                    |n, p| async move {
                        if n <= 2 || r == 7 {
                            p.record(Outcome::ServerError, true, "500");
                            Step::Retry { reason: "500".into(), after: None }
                        } else {
                            p.record(Outcome::Answered, true, "");
                            Step::Done(n)
                        }
                    },
                )
                .await;
                result.is_ok()
            }));
        }
        let mut answered = 0;
        for r in requests {
            answered += u32::from(r.await.unwrap());
        }
        assert_eq!(answered, 19);
        let report = c.report();
        assert!(!report.tripped && report.opened.is_some(), "{report:?}");
        assert_eq!(report.tally.attempts, 60, "the circuit never costs a request an attempt");
    }
}
