//! [`AuthoredGateway`]: answers written offline (by people or another tool), turned into
//! ordinary store entries by running the stages over them.
//!
//! Running a stage with this gateway renders every request exactly as a live run would; the
//! gateway answers each from the authored texts keyed by (stage, item), writes the entry to
//! the store under the request's real key, and returns it. A request without an authored
//! answer is a per-item failure (`not_authored`) so one run lists everything still missing.
//! Afterwards the store replays the same answers in `replay` mode, byte for byte.
//!
//! Items are those of [`super::ChatRequest::item`]: the problem id for `rewrite`, `distract`,
//! `abbreviate` and `queries`; `<problem>/tests/<batch>` for `rewrite_tests`; the solution id
//! `<problem>/<model>/<language>/<sample>` for `generate`.

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;

use super::store::{ResponseStore, StoreEntry, StoredResponse};
use super::{
    ChatRequest, Completion, FinishReason, LlmError, LlmGateway, LlmStage, Origin, Provenance,
    TokenUsage,
};

/// A gateway over authored answers that records them in a store.
#[derive(Debug)]
pub struct AuthoredGateway {
    answers: BTreeMap<(LlmStage, String), String>,
    store: ResponseStore,
}

impl AuthoredGateway {
    /// Answers keyed by (stage, item), recorded into `store`.
    pub fn new(answers: BTreeMap<(LlmStage, String), String>, store: ResponseStore) -> Self {
        AuthoredGateway { answers, store }
    }
}

impl LlmGateway for AuthoredGateway {
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            let Some(text) = self.answers.get(&(request.stage, request.item.clone())) else {
                return Err(LlmError::NotAuthored {
                    stage: request.stage,
                    item: request.item.clone(),
                    model: request.model.clone(),
                });
            };
            // No endpoint was asked: no token counts, and the entry says who wrote it.
            let usage = TokenUsage::default();
            let entry = StoreEntry::of(
                request,
                StoredResponse {
                    text: text.clone(),
                    finish_reason: FinishReason::Stop,
                    usage,
                    provenance: Provenance::Authored,
                },
            );
            self.store.put(&entry)?;
            Ok(Completion {
                key: entry.key,
                text: text.clone(),
                finish_reason: FinishReason::Stop,
                usage,
                origin: Origin::Endpoint,
                provenance: Provenance::Authored,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::run::request;
    use crate::{Counted, SamplingParams};

    /// `Counted` ticks once per finished request, failures included, and passes answers through.
    #[tokio::test]
    async fn counted_ticks_per_request_and_passes_answers_through() {
        let dir = tempfile::tempdir().unwrap();
        let answers =
            BTreeMap::from([((LlmStage::Generate, "a".to_owned()), "print(1)".to_owned())]);
        let inner = AuthoredGateway::new(answers, ResponseStore::open(dir.path()));
        let n = AtomicUsize::new(0);
        let tick = || {
            n.fetch_add(1, Ordering::SeqCst);
        };
        let counted = Counted { inner: &inner, progress: &tick };
        let ask = |item: &str| {
            request(LlmStage::Generate, item, "m", Vec::new(), &SamplingParams::default(), 0, "p")
        };
        assert_eq!(counted.complete(&ask("a")).await.unwrap().text, "print(1)");
        assert!(matches!(counted.complete(&ask("b")).await, Err(LlmError::NotAuthored { .. })));
        assert_eq!(n.load(Ordering::SeqCst), 2);
    }
}
