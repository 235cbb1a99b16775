//! The services the evaluation loop runs: the embeddings client with its prompts
//! ([`DenseSetup`]) and the reranker ([`Reranker`]: pointwise through the embeddings/rerank
//! client, listwise through the LLM gateway and its response store). Keys are read here from
//! the variables the options name, and go only to the base URL they belong to.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use coreb_base::report::Report;
use coreb_http::RetryConfig;
use coreb_llm::prompt::Prompt;
use coreb_llm::{Gateway, LlmConfig, ResponseStore, SamplingParams, StoreMode};
use coreb_trec::Run;

use super::{EvalOptions, ManifestSettings, RerankApi, RerankTemplate};
use crate::beir::Dataset;
use crate::dense::{Pointwise, task_prompts};
use crate::embed::{EmbedClient, EmbedConfig, VectorForm};
use crate::listwise::{self, ListwiseConfig, ListwiseStats};
use crate::prompts::{Preset, Presets, PromptOverrides, PromptsUsed, TaskPrompts};
use crate::report::RerankInfo;

/// The key in `var`, if set and not empty (`''` names no variable: no key).
fn key_from(var: &str) -> Option<String> {
    if var.is_empty() {
        return None;
    }
    std::env::var(var).ok().filter(|k| !k.is_empty())
}

/// The presets and overrides a dense retriever uses: the command line over `[eval]` of
/// `--manifest` over the built-in presets.
pub struct PromptChoice {
    presets: Presets,
    overrides: PromptOverrides,
    /// Whether a prompt flag was given (they make no sense without `embed:`).
    pub given_on_command_line: bool,
}

impl PromptChoice {
    /// Resolve from the options and the manifest's `[eval]`.
    pub fn resolve(
        args: &EvalOptions,
        manifest: Option<&ManifestSettings>,
    ) -> anyhow::Result<PromptChoice> {
        let file: Option<PathBuf> =
            args.prompts.clone().or_else(|| manifest.and_then(|m| m.prompts_file.clone()));
        let presets = match &file {
            Some(path) => {
                let text = fs_err::read_to_string(path)?;
                Presets::parse(&text, &path.display().to_string())?
            }
            None => Presets::builtin(),
        };
        let mut overrides = manifest.map(|m| m.prompts.clone()).unwrap_or_default();
        overrides.preset = args.prompt_preset.clone().or(overrides.preset);
        overrides.query = args.query_prompt.clone().or(overrides.query);
        overrides.document = args.doc_prompt.clone().or(overrides.document);
        let given_on_command_line = args.prompt_preset.is_some()
            || args.query_prompt.is_some()
            || args.doc_prompt.is_some();
        Ok(PromptChoice { presets, overrides, given_on_command_line })
    }
}

/// The embeddings client, the model and its prompts.
pub struct DenseSetup {
    client: EmbedClient,
    model: String,
    prompts: PromptChoice,
    preset: Preset,
}

/// The retry policy of the flags (the gateway's, with `--max-attempts`).
fn retry(args: &EvalOptions) -> RetryConfig {
    RetryConfig { max_attempts: args.client.max_attempts.max(1), ..RetryConfig::default() }
}

/// `url` without its trailing `/`, if http(s); else an error naming `flag`.
fn check_url(url: &str, flag: &str) -> anyhow::Result<String> {
    let url = url.trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("`{flag}`: not an http(s) URL: `{url}`");
    }
    Ok(url.to_owned())
}

/// The embeddings/rerank client of the options at `base_url`, with the key in `key_var`.
fn embed_client(
    args: &EvalOptions,
    base_url: &str,
    key_var: &str,
    cache: Option<PathBuf>,
) -> anyhow::Result<EmbedClient> {
    if args.batch_size == 0 || args.client.concurrency == 0 || args.client.max_attempts == 0 {
        bail!("`--batch-size`, `--concurrency` and `--max-attempts` must be at least 1");
    }
    if args.client.timeout_secs.is_nan() || args.client.timeout_secs <= 0.0 {
        bail!("`--timeout-secs`: must be positive");
    }
    let mut cfg = EmbedConfig::new(base_url);
    cfg.api_key = key_from(key_var);
    cfg.batch_size = args.batch_size;
    cfg.concurrency = args.client.concurrency;
    cfg.timeout = coreb_http::secs(args.client.timeout_secs);
    cfg.retry = retry(args);
    cfg.cache_dir = cache;
    cfg.vectors = VectorForm { dimensions: args.dimensions, normalize: !args.no_normalize };
    Ok(EmbedClient::new(cfg)?)
}

impl DenseSetup {
    /// The client for `model` at `--base-url`, its preset and overrides.
    pub fn new(
        model: &str,
        args: &EvalOptions,
        prompts: PromptChoice,
    ) -> anyhow::Result<DenseSetup> {
        let base_url = check_url(&args.base_url, "--base-url")?;
        let cache = if args.no_cache {
            None
        } else {
            Some(args.cache.clone().unwrap_or_else(|| PathBuf::from(".coreb-cache/embeddings")))
        };
        let client = embed_client(args, &base_url, &args.client.api_key_env, cache)?;
        let preset = prompts.presets.select(model, prompts.overrides.preset.as_deref())?.clone();
        Ok(DenseSetup { client, model: model.to_owned(), prompts, preset })
    }

    /// What is recorded before any task is run.
    pub fn prompts_used(&self) -> PromptsUsed {
        PromptsUsed {
            preset: self.preset.name.clone(),
            source: self.prompts.presets.source_name.clone(),
            overrides: self.prompts.overrides.clone(),
            tasks: Default::default(),
        }
    }

    /// The run of one task and the prompts it used.
    pub fn run(
        &self,
        runtime: &tokio::runtime::Handle,
        sink: &dyn Report,
        data: &Dataset,
        depth: usize,
    ) -> anyhow::Result<(Run, TaskPrompts)> {
        let prompts =
            task_prompts(&self.prompts.presets, &self.preset, &self.prompts.overrides, data)?;
        let bar = sink.meter(Some((data.corpus.len() + data.queries.len()) as u64), "embed", false);
        let tick = |n: u64| bar.inc(n);
        let run = runtime
            .block_on(crate::dense::dense_run(
                &self.client,
                &self.model,
                data,
                &prompts,
                depth,
                &tick,
            ))
            .with_context(|| format!("dense retrieval with `{}` on `{}`", self.model, data.name))?;
        drop(bar);
        let s = &self.client.stats;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        sink.status(&format!(
            "{}: embeddings: {} texts embedded, {} repeats sent once, {} from the cache, {} requests ({} retries)",
            data.name,
            load(&s.embedded),
            load(&s.duplicates),
            load(&s.cache_hits),
            load(&s.requests),
            load(&s.retries)
        ));
        Ok((run, prompts))
    }
}

/// A reranker over the first stage's top documents.
pub enum Reranker {
    /// `/rerank` or `/score`.
    Pointwise {
        /// The client (at `--rerank-base-url`).
        client: Box<EmbedClient>,
        /// Which endpoint.
        api: Pointwise,
        /// The model.
        model: String,
        /// Candidates per query.
        depth: usize,
        /// How query and documents are written.
        template: RerankTemplate,
    },
    /// A chat model over sliding windows.
    Listwise {
        /// The gateway with its response store.
        gateway: Box<Gateway>,
        /// The prompt.
        prompt: Box<Prompt>,
        /// Settings.
        config: Box<ListwiseConfig>,
        /// Counts so far.
        stats: std::sync::Mutex<ListwiseStats>,
    },
}

impl Reranker {
    /// The reranker the flags ask for, if any.
    pub fn new(args: &EvalOptions) -> anyhow::Result<Option<Reranker>> {
        let Some(model) = &args.rerank else {
            return Ok(None);
        };
        if args.rerank_depth == 0 {
            bail!("`--rerank-depth`: must be at least 1");
        }
        let base_url = check_url(
            args.rerank_base_url.as_deref().unwrap_or(&args.base_url),
            "--rerank-base-url",
        )?;
        let key_var = args.rerank_api_key_env.as_deref().unwrap_or(&args.client.api_key_env);
        let api = match args.rerank_api {
            RerankApi::Rerank => Pointwise::Rerank,
            RerankApi::Score => Pointwise::Score,
            RerankApi::Listwise => {
                if args.window < 2 || args.step == 0 || args.step >= args.window {
                    bail!(
                        "`--window` must be at least 2 and `--step` between 1 and `--window` − 1"
                    );
                }
                let config = LlmConfig {
                    base_url: base_url.clone(),
                    api_key_env: key_var.to_owned(),
                    mode: if args.client.replay { StoreMode::Replay } else { StoreMode::Live },
                    model: model.clone(),
                    sampling: SamplingParams {
                        temperature: 0.0,
                        top_p: 1.0,
                        max_tokens: 1024,
                        seed: Some(0),
                    },
                    concurrency: args.client.concurrency,
                    timeout_secs: args.client.timeout_secs,
                    retry: retry(args),
                    ..LlmConfig::default()
                };
                config.validate().map_err(anyhow::Error::msg)?;
                let gateway = Gateway::new(
                    &config,
                    ResponseStore::open(&args.client.store),
                    key_from(key_var),
                )?;
                let prompt = Prompt::parse(
                    std::path::Path::new("prompts/eval/listwise.toml"),
                    listwise::BUILTIN_PROMPT,
                )?;
                let config = ListwiseConfig {
                    model: model.clone(),
                    window: args.window,
                    step: args.step,
                    depth: args.rerank_depth,
                    max_words: args.max_words,
                    sampling: config.sampling.clone(),
                    concurrency: args.client.concurrency,
                };
                return Ok(Some(Reranker::Listwise {
                    gateway: Box::new(gateway),
                    prompt: Box::new(prompt),
                    config: Box::new(config),
                    stats: Default::default(),
                }));
            }
        };
        let client = embed_client(args, &base_url, key_var, None)?;
        Ok(Some(Reranker::Pointwise {
            client: Box::new(client),
            api,
            model: model.clone(),
            depth: args.rerank_depth,
            template: args.rerank_template,
        }))
    }

    /// `rerank:<model>`, `score:<model>` or `listwise:<model>`.
    pub fn label(&self) -> String {
        match self {
            Reranker::Pointwise { api: Pointwise::Rerank, model, .. } => format!("rerank:{model}"),
            Reranker::Pointwise { api: Pointwise::Score, model, .. } => format!("score:{model}"),
            Reranker::Listwise { config, .. } => format!("listwise:{}", config.model),
        }
    }

    /// Rerank one task's first-stage run.
    pub fn rerank(
        &self,
        runtime: &tokio::runtime::Handle,
        sink: &dyn Report,
        data: &Dataset,
        first: &Run,
    ) -> anyhow::Result<Run> {
        match self {
            Reranker::Pointwise { client, api, model, depth, template } => {
                let templated;
                let data = match template {
                    RerankTemplate::None => data,
                    RerankTemplate::Qwen3 => {
                        templated = crate::mteb::qwen3_reranker_texts(data);
                        &templated
                    }
                };
                let bar = sink.meter(Some(data.queries.len() as u64), "rerank", false);
                let tick = |n: u64| bar.inc(n);
                let run = runtime
                    .block_on(crate::dense::rerank_run(
                        client, *api, model, data, first, *depth, &tick,
                    ))
                    .with_context(|| format!("reranking with `{model}` on `{}`", data.name))?;
                drop(bar);
                Ok(run)
            }
            Reranker::Listwise { gateway, prompt, config, stats } => {
                let total: usize = data
                    .queries
                    .iter()
                    .map(|q| listwise::window_count(first.ranked(&q.id).len(), config))
                    .sum();
                let bar = sink.meter(Some(total as u64), "listwise", false);
                let tick = || bar.inc(1);
                let (run, s) = runtime
                    .block_on(listwise::listwise_run(
                        gateway.as_ref(),
                        prompt,
                        config,
                        data,
                        first,
                        &tick,
                    ))
                    .with_context(|| {
                        format!("listwise reranking with `{}` on `{}`", config.model, data.name)
                    })?;
                drop(bar);
                sink.status(&format!(
                    "{}: listwise: {} windows, {} exact, {} repaired, {} unparseable, {} failed; {} from the store, {} from the endpoint",
                    data.name, s.windows, s.exact, s.repaired, s.unparseable, s.failed, s.from_store, s.from_endpoint
                ));
                if let Ok(mut all) = stats.lock() {
                    *all += s;
                }
                Ok(run)
            }
        }
    }

    /// What goes into the results.
    pub fn info(&self, first_stage: &str) -> RerankInfo {
        match self {
            Reranker::Pointwise { api, model, depth, template, .. } => RerankInfo {
                api: if *api == Pointwise::Rerank { "rerank" } else { "score" }.to_owned(),
                model: model.clone(),
                depth: *depth,
                first_stage: first_stage.to_owned(),
                listwise: None,
                listwise_stats: None,
                template: (*template == RerankTemplate::Qwen3).then(|| "qwen3".to_owned()),
            },
            Reranker::Listwise { config, stats, .. } => RerankInfo {
                api: "listwise".to_owned(),
                model: config.model.clone(),
                depth: config.depth,
                first_stage: first_stage.to_owned(),
                listwise: Some(config.as_ref().clone()),
                listwise_stats: stats.lock().ok().map(|s| *s),
                template: None,
            },
        }
    }
}
