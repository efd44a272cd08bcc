//! The judge options shared by `diagnose`, `eval` and `open`: `--judge heuristic|llm` and the LLM
//! server settings (see `docs/LLM_JUDGE.md`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};

use crate::judge::Judge;
use crate::judge::heuristic::HeuristicJudge;
#[cfg(feature = "llm")]
use crate::judge::llm::{LlmArgs, LlmConfig, LlmJudge};

/// Which judge answers the methods' questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JudgeChoice {
    /// The built-in offline judge (no network, deterministic).
    Heuristic,
    /// An OpenAI-compatible chat-completions server.
    Llm,
    /// The fitted step ranker over the offline judge (no network, deterministic).
    Fitted,
}

/// Judge options.
#[derive(Debug, Clone, Args)]
pub struct JudgeArgs {
    /// The judge: heuristic (offline signals, default), fitted (the fitted step ranker over the
    /// offline signals) or llm (an OpenAI-compatible server). `None` when not given
    /// ([`JudgeArgs::choice`] is then the heuristic judge; `--dry-run` counts the LLM judge's).
    #[arg(long, value_enum)]
    pub judge: Option<JudgeChoice>,
    /// Base URL of the LLM server, e.g. http://127.0.0.1:8080/v1 (default: $OPENAI_BASE_URL or
    /// the config file).
    #[arg(long, value_name = "URL")]
    pub llm_url: Option<String>,
    /// Model name sent to the LLM server.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Read the API key from this environment variable instead of OPENAI_API_KEY.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Record every LLM exchange to this folder (JSONL, no keys).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Replay LLM exchanges from this folder, with no network. With --record too, resume: recorded
    /// questions are replayed, the others sent to the server and recorded.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// Prompt plus completion tokens allowed per trajectory.
    #[arg(long, value_name = "TOKENS")]
    pub token_budget: Option<u64>,
    /// Concurrent LLM requests.
    #[arg(long, value_name = "N")]
    pub llm_jobs: Option<usize>,
    /// A config file with an [llm] table (base_url, model, api_key_env, ...; docs/CONFIG.md).
    /// Default: $FALAT_CONFIG, else ~/.config/falat/config.toml when it exists.
    #[arg(long, value_name = "FILE")]
    pub llm_config: Option<PathBuf>,
    /// With --judge llm, when the server check before any work fails (unreachable, key
    /// refused, unknown model): `fail` stops with exit status 2 (default), `heuristic` goes on
    /// with the offline judge and the reports say "heuristic (LLM unreachable)".
    #[arg(long, value_name = "fail|heuristic")]
    pub llm_fallback: Option<String>,
    /// Most seconds of LLM calls per trajectory (default 1800; 0: none); later questions of the
    /// trajectory are answered offline with a warning.
    #[arg(long, value_name = "SECS")]
    pub llm_deadline: Option<u64>,
    /// Most seconds of LLM calls over the whole command (default none).
    #[arg(long, value_name = "SECS")]
    pub llm_run_deadline: Option<u64>,
}

impl JudgeArgs {
    /// The judge chosen: `--judge`, else the offline (heuristic) judge.
    pub fn choice(&self) -> JudgeChoice {
        self.judge.unwrap_or(JudgeChoice::Heuristic)
    }

    /// Checks the judge for `--dry-run` (`diagnose` and `eval` alike): a dry run counts what the
    /// LLM judge would send, so it is the LLM judge's whether `--judge llm` is given or `--judge`
    /// is left out; another judge named sends nothing to count.
    ///
    /// # Errors
    /// `--dry-run` with `--judge heuristic` or `--judge fitted`.
    pub fn check_dry_run(&self) -> anyhow::Result<()> {
        match self.judge {
            None | Some(JudgeChoice::Llm) => Ok(()),
            Some(other) => {
                let name = other.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default();
                anyhow::bail!(
                    "--dry-run counts the LLM judge's requests and --judge {name} sends none: leave --judge out or use --judge llm"
                )
            }
        }
    }

    /// The LLM settings from these options and the environment.
    ///
    /// # Errors
    /// No server URL, no model, or a bad config file.
    #[cfg(feature = "llm")]
    pub fn llm_config(&self, dry_run: bool) -> anyhow::Result<LlmConfig> {
        let args = LlmArgs {
            llm_url: self.llm_url.clone(),
            model: self.model.clone(),
            api_key_env: self.api_key_env.clone(),
            jobs: self.llm_jobs,
            token_budget: self.token_budget,
            record: self.record.clone(),
            replay: self.replay.clone(),
            dry_run,
            config_file: self.llm_config.clone(),
            default_config_file: super::config_dir().map(|d| d.join("config.toml")),
            trajectory_deadline_secs: self.llm_deadline,
            run_deadline_secs: self.llm_run_deadline,
            fallback: self.llm_fallback.clone(),
            ..LlmArgs::default()
        };
        Ok(LlmConfig::from_env_and_args(&args, |k| std::env::var(k).ok())?)
    }

    /// The judge these options select.
    ///
    /// # Errors
    /// An LLM judge that cannot be set up (no URL, no model, bad config), or `--judge llm` in a
    /// build without the `llm` feature.
    pub fn build(&self) -> anyhow::Result<Arc<dyn Judge>> {
        self.build_with_progress(false)
    }

    /// [`JudgeArgs::build`]; with `progress`, the LLM judge prints a line per question that
    /// needed a call on stderr.
    ///
    /// `--judge llm` checks the server first (a one-token request with the configured key,
    /// unless replaying without recording): when it cannot be used the command stops with one
    /// line naming the URL and the cause (exit status 2), or, with `--llm-fallback heuristic`,
    /// says so on stderr and goes on with the offline judge.
    ///
    /// # Errors
    /// As [`JudgeArgs::build`], and the failed server check.
    pub fn build_with_progress(&self, progress: bool) -> anyhow::Result<Arc<dyn Judge>> {
        let _ = progress;
        match self.choice() {
            JudgeChoice::Heuristic => Ok(Arc::new(HeuristicJudge)),
            JudgeChoice::Fitted => Ok(Arc::new(crate::judge::fitted::FittedJudge::shipped())),
            #[cfg(feature = "llm")]
            JudgeChoice::Llm => {
                use crate::judge::llm::LlmFallback;
                let cfg = self.llm_config(false)?;
                let judge = LlmJudge::new(cfg.clone())?;
                if let Err(e) = judge.check() {
                    return match cfg.fallback {
                        LlmFallback::Fail => Err(anyhow::anyhow!(
                            "{e} (checked before any work; --llm-fallback heuristic goes on with the offline judge)"
                        )),
                        LlmFallback::Heuristic => {
                            eprintln!("falat: {e}; --llm-fallback heuristic: the offline judge answers instead");
                            Ok(Arc::new(UnreachableFallback))
                        }
                    };
                }
                if progress {
                    judge
                        .set_progress(Some(Arc::new(|e: &crate::judge::llm::ProgressEvent| eprintln!("{}", e.line()))));
                }
                Ok(Arc::new(judge))
            }
            #[cfg(not(feature = "llm"))]
            JudgeChoice::Llm => Err(super::missing_feature("`--judge llm`", "llm")),
        }
    }
}

/// The offline judge standing in for an LLM server that failed its check
/// (`--llm-fallback heuristic`); reports name it `heuristic (LLM unreachable)`.
#[derive(Debug, Clone, Copy)]
pub struct UnreachableFallback;

impl Judge for UnreachableFallback {
    fn name(&self) -> String {
        "heuristic (LLM unreachable)".into()
    }
    fn ask(&self, ctx: &crate::judge::Context<'_>, q: &crate::judge::Question) -> crate::judge::Judged {
        HeuristicJudge.ask(ctx, q)
    }
}
