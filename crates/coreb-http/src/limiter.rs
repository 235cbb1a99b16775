//! Client-side limits: a token bucket per minute-rate (requests, tokens).
//!
//! A bucket holds up to one minute's allowance and refills continuously; [`Bucket::acquire`]
//! waits until `n` units are available (a request larger than the whole allowance waits for
//! a full bucket and then takes it all, so it is slowed, never refused). The buckets and the
//! concurrency cap (a `tokio::sync::Semaphore`) make up [`crate::retry::Limits`], which the
//! gateway and the embeddings client send under.

use tokio::sync::Mutex;
use tokio::time::Instant;

/// A token bucket refilled at `per_minute / 60` units a second.
#[derive(Debug)]
pub struct Bucket {
    capacity: f64,
    per_second: f64,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    /// A bucket for `per_minute` units a minute, or `None` for 0 (unlimited).
    pub fn per_minute(per_minute: u64) -> Option<Self> {
        (per_minute > 0).then(|| {
            let capacity = per_minute as f64;
            Bucket {
                capacity,
                per_second: capacity / 60.0,
                state: Mutex::new((capacity, Instant::now())),
            }
        })
    }

    /// Wait until `n` units are available and take them.
    pub async fn acquire(&self, n: u64) {
        let want = (n as f64).min(self.capacity);
        loop {
            let wait = {
                let mut state = self.state.lock().await;
                let now = Instant::now();
                let elapsed = now.duration_since(state.1).as_secs_f64();
                state.0 = (state.0 + elapsed * self.per_second).min(self.capacity);
                state.1 = now;
                if state.0 >= want {
                    state.0 -= want;
                    return;
                }
                (want - state.0) / self.per_second
            };
            tokio::time::sleep(crate::secs(wait.max(0.001))).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn bucket_spaces_requests_at_the_rate() {
        let bucket = Bucket::per_minute(60).unwrap(); // one a second, burst of 60
        let start = Instant::now();
        for _ in 0..62 {
            bucket.acquire(1).await;
        }
        let waited = start.elapsed().as_secs_f64();
        assert!((1.9..2.2).contains(&waited), "{waited}");
        assert!(Bucket::per_minute(0).is_none());
    }
}
