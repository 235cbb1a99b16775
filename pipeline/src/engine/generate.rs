//! `generate`: solutions of each rewritten problem of this process (all, or its shard's), in
//! every language of `stages.generate.languages`, asked of the models through the gateway
//! ([`super::ask_each`]).

use coreb_data::tables::solutions::write_solutions;
use coreb_stages::generate::{GenerateConfig, generate};

use super::ask_each::question;

question! {
    /// The `generate` stage's question.
    impl Question for Generate {
        const NAME: StageName = StageName::Generate;
        config generate: GenerateConfig, output solutions: "solutions.parquet";
        prompt "generate", ask mine with generate, write write_solutions;
    }
}
