//! `abbreviate`: a canonical summary of each rewritten problem of this process (all, or
//! its shard's), asked of the models through the gateway ([`super::ask_each`]).

use coreb_base::jsonl;
use coreb_stages::abbreviate::{AbbreviateConfig, abbreviate};

use super::ask_each::question;

question! {
    /// The `abbreviate` stage's question.
    impl Question for Abbreviate {
        const NAME: StageName = StageName::Abbreviate;
        config abbreviate: AbbreviateConfig, output summaries: "summaries.jsonl";
        prompt "summaries", ask mine with abbreviate, write jsonl::write;
    }
}
