//! The progress bar of long `check` runs on a terminal.

use std::io::{self, IsTerminal};
use std::time::Duration;

use onnx_bcast::cli::config::Target;

/// A progress bar on stderr, for long runs on a terminal only: never when stderr is not a terminal, under CI, with
/// `TERM=dumb`, for fewer than [`PROGRESS_MIN_MODELS`] models totalling under [`PROGRESS_MIN_BYTES`], or before the
/// run has taken [`PROGRESS_DELAY`].
pub struct Progress {
    pub bar: Option<indicatif::ProgressBar>,
    visible: bool,
    start: std::time::Instant,
}

const PROGRESS_MIN_MODELS: usize = 16;
const PROGRESS_MIN_BYTES: u64 = 64 << 20;
const PROGRESS_DELAY: Duration = Duration::from_millis(500);

impl Progress {
    pub fn new(targets: &[Target]) -> Progress {
        let env_set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "false" && v != "0");
        let terminal =
            io::stderr().is_terminal() && !env_set("CI") && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
        let long = || {
            targets.len() >= PROGRESS_MIN_MODELS
                || targets.iter().map(|t| std::fs::metadata(t.path()).map_or(0, |m| m.len())).sum::<u64>()
                    >= PROGRESS_MIN_BYTES
        };
        let bar = (terminal && long()).then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(targets.len() as u64),
                indicatif::ProgressDrawTarget::hidden(),
            );
            let style =
                indicatif::ProgressStyle::with_template("{spinner} checking {pos}/{len} models {wide_bar} {elapsed}")
                    .expect("the template is valid");
            bar.set_style(style);
            bar
        });
        Progress { bar, visible: false, start: std::time::Instant::now() }
    }

    /// Shows the bar once the run has gone on long enough.
    pub fn tick(&mut self) {
        if let Some(bar) = &self.bar {
            if !self.visible && self.start.elapsed() >= PROGRESS_DELAY {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.enable_steady_tick(Duration::from_millis(100));
                self.visible = true;
            }
        }
    }

    /// Counts `n` models done after running `f`, which writes their results; when `f` writes to the terminal
    /// (`interrupts`), the bar is cleared while it does and drawn again after.
    pub fn models_done<T>(&self, n: usize, interrupts: bool, f: impl FnOnce() -> T) -> T {
        let result = match &self.bar {
            Some(bar) if self.visible && interrupts => bar.suspend(f),
            _ => f(),
        };
        if let Some(bar) = &self.bar {
            bar.inc(n as u64);
        }
        result
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
