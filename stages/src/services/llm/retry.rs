//! coreb's one retry loop for HTTP calls: the limits ([`Limits`]: concurrency cap, requests-
//! and tokens-per-minute buckets) are taken before every attempt, retryable failures wait
//! the exponential backoff with jitter of [`RetryConfig`] (`backon`), or what the server's
//! `Retry-After` asks (capped), and the attempts stop at `max_attempts`.
//!
//! The chat gateway ([`super::Gateway`]) and the embeddings/rerank client
//! ([`crate::services::embed`]) both send through [`send_with_retries`], each with its own
//! limits and settings; what an attempt is and how its answer is classified stays with the
//! caller. Does NOT talk HTTP itself.

use std::future::Future;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use tokio::sync::Semaphore;

use super::config::RetryConfig;
use super::limiter::Bucket;

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
        Limits { slots: Semaphore::new(concurrency.max(1)), requests: Bucket::per_minute(requests_per_minute), tokens: Bucket::per_minute(tokens_per_minute) }
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
pub async fn send_with_retries<T, E, F, Fut>(retry: &RetryConfig, limits: &Limits, estimated_tokens: u64, mut attempt: F) -> Result<T, GaveUp<E>>
where
    F: FnMut(u32) -> Fut,
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
        if let Some(bucket) = &limits.requests {
            bucket.acquire(1).await;
        }
        if let Some(bucket) = &limits.tokens {
            bucket.acquire(estimated_tokens).await;
        }
        attempts += 1;
        let step = {
            // The semaphore is never closed, so acquiring cannot fail.
            let _slot = limits.slots.acquire().await.ok();
            attempt(attempts).await
        };
        match step {
            Step::Done(value) => return Ok(value),
            Step::Fail(e) => return Err(GaveUp::Failed(e)),
            Step::Retry { reason, after } => {
                let Some(backoff) = delays.next() else {
                    return Err(GaveUp::Exhausted { attempts, last: reason });
                };
                // The server's `Retry-After` wins over our own schedule (capped).
                let wait = after.map_or(backoff, |a| a.min(Duration::from_secs(retry.max_retry_after_secs)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_until_done_or_exhausted() {
        let retry = RetryConfig { max_attempts: 3, min_delay_ms: 10, max_delay_ms: 20, ..RetryConfig::default() };
        let limits = Limits::new(1, 0, 0);
        let r: Result<u32, GaveUp<()>> = send_with_retries(&retry, &limits, 0, |n| async move {
            if n < 3 { Step::Retry { reason: format!("try {n}"), after: None } } else { Step::Done(n) }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
        let r: Result<u32, GaveUp<()>> = send_with_retries(&retry, &limits, 0, |n| async move { Step::Retry { reason: format!("try {n}"), after: Some(Duration::from_secs(1)) } }).await;
        assert!(matches!(r, Err(GaveUp::Exhausted { attempts: 3, ref last }) if last == "try 3"));
        let r: Result<u32, GaveUp<&str>> = send_with_retries(&retry, &limits, 0, |_| async { Step::Fail("no") }).await;
        assert!(matches!(r, Err(GaveUp::Failed("no"))));
        assert!(is_retryable_status(429) && is_retryable_status(503) && !is_retryable_status(400) && !is_retryable_status(401));
    }
}
