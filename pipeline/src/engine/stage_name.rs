//! The build's stages by name: [`StageName`] and its properties, made from the rows of
//! [`crate::stage_rows::stage_rows!`] (one per stage: its name, value, reads, configuration,
//! shard processes, models and help), as are the engine's table ([`super::STAGES`]), the
//! manifest's stage sections ([`crate::manifest::StagesFile`]) and the per-stage subcommands
//! (`coreb <stage> MANIFEST`, [`crate::cli::StageCommand`]).
//!
//! Its own module so that the stage context ([`super::context`]) and the stage trait
//! ([`super::stage`]) both name stages without importing each other; it imports no other
//! module of the engine.

/// Makes [`StageName`] and its properties from the rows of
/// [`crate::stage_rows::stage_rows!`].
macro_rules! stage_names {
    ($({
        [$(#[$doc:meta])*] $variant:ident $name:ident $_run:tt [$($up:ident),*] $_config:tt
        $shardable:literal $asks:literal $about:literal
    })*) => {
        /// A stage of the build (which stage a build stops after, which a command runs).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
        pub enum StageName {
            $( $(#[$doc])* $variant, )*
        }

        /// How many stages the build has.
        const COUNT: usize = [$(stringify!($name)),*].len();

        impl StageName {
            /// Every stage in pipeline order (the order of the rows).
            pub const ALL: [StageName; COUNT] = [$(StageName::$variant),*];

            /// The stage's name as used on the command line, in manifests and under
            /// `artifacts/`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(StageName::$variant => stringify!($name),)*
                }
            }

            /// The stages whose records it reads (each runs, or is found unchanged, before it);
            /// reading any other is an error ([`super::stage::Upstream`]).
            pub(crate) const fn reads(self) -> &'static [StageName] {
                match self {
                    $(StageName::$variant => &[$(StageName::$up),*],)*
                }
            }

            /// Whether the stage runs as shard processes (`--shard i/N`), each on the items
            /// whose id hash falls in its shard.
            pub(crate) const fn shardable(self) -> bool {
                match self {
                    $(StageName::$variant => $shardable,)*
                }
            }

            /// Whether the stage asks models (an LLM stage: `llm.min_kept_share` applies, the
            /// preflight asks its endpoint).
            pub(crate) const fn asks_models(self) -> bool {
                match self {
                    $(StageName::$variant => $asks,)*
                }
            }

            /// The help of its subcommand (`coreb <stage> --help`).
            pub(crate) const fn about(self) -> &'static str {
                match self {
                    $(StageName::$variant => $about,)*
                }
            }
        }
    };
}

crate::stage_rows::stage_rows!(stage_names);

impl std::str::FromStr for StageName {
    type Err = String;

    fn from_str(s: &str) -> Result<StageName, String> {
        StageName::ALL.into_iter().find(|stage| stage.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = StageName::ALL.into_iter().map(StageName::as_str).collect();
            format!("`{s}` is not a stage; one of: {}", names.join(", "))
        })
    }
}

coreb_base::display_as_str!(StageName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_each_stage_reads_only_earlier_ones() {
        for stage in StageName::ALL {
            assert_eq!(stage.as_str().parse::<StageName>(), Ok(stage));
            assert_eq!(<StageName as clap::ValueEnum>::from_str(stage.as_str(), false), Ok(stage));
            for up in stage.reads() {
                assert!(up < &stage, "`{stage}` reads `{up}`, which runs after it");
            }
        }
        let err = "publish".parse::<StageName>().unwrap_err();
        assert!(err.contains("`publish` is not a stage; one of: fetch, ingest"), "{err}");
    }
}
