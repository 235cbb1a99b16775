//! `distract`: distractor statements of each rewritten problem of this process (all, or
//! its shard's), asked of the models through the gateway ([`super::ask_each`]).

use coreb_base::jsonl;
use coreb_stages::distract::{DistractConfig, distract};

use super::ask_each::question;

question! {
    /// The `distract` stage's question.
    impl Question for Distract {
        const NAME: StageName = StageName::Distract;
        config distract: DistractConfig, output distractors: "distractors.jsonl";
        prompt "distractors", ask mine with distract, write jsonl::write;
    }
}
