//! Progress of long waits (`rollout status`, `wait`, `berth dev` starting): on a terminal one
//! status line that is rewritten in place, with a spinner and the time waited; when the
//! output is piped, each new status as a plain line of its own (a status repeated unchanged
//! is not printed again), or nothing for a verb whose piped output is kubectl's (`wait`).
//! [`Counter`] is the same for work of a known size done by several threads (`berth lab
//! run`'s runs): a bar on a terminal, nothing when piped.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::cmd::Context;

/// Frames of the spinner shown on a terminal.
const SPINNER: [char; 4] = ['|', '/', '-', '\\'];

/// How often a wait on a terminal redraws its status line (the spinner and the time).
pub const REDRAW: Duration = Duration::from_millis(250);

/// A status line that follows a long wait.
pub struct Progress {
    terminal: bool,
    /// Whether statuses are written when the output is not a terminal.
    piped_lines: bool,
    started: Instant,
    frame: usize,
    last: Option<String>,
    open: bool,
}

impl Progress {
    /// A progress display; `terminal` says whether the output is a terminal.
    pub fn new(terminal: bool) -> Self {
        Progress {
            terminal,
            piped_lines: true,
            started: Instant::now(),
            frame: 0,
            last: None,
            open: false,
        }
    }

    /// A display that shows nothing unless the output is a terminal.
    pub fn terminal_only(terminal: bool) -> Self {
        Progress {
            piped_lines: false,
            ..Progress::new(terminal)
        }
    }

    /// Whether the status is drawn in place (a wait should then redraw every [`REDRAW`]).
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The text to write for a new status (empty when nothing is to be written).
    pub fn render(&mut self, message: &str) -> String {
        if !self.terminal {
            if !self.piped_lines {
                return String::new();
            }
            if self.last.as_deref() == Some(message) {
                return String::new();
            }
            self.last = Some(message.to_string());
            return format!("{message}\n");
        }
        let spinner = SPINNER[self.frame % SPINNER.len()];
        self.frame += 1;
        self.open = true;
        let waited = self.started.elapsed().as_secs();
        format!("\r\x1b[2K{spinner} {message} ({waited}s)")
    }

    /// The text that ends the display: on a terminal, clears the status line.
    pub fn render_finish(&mut self) -> String {
        if std::mem::take(&mut self.open) {
            "\r\x1b[2K".to_string()
        } else {
            String::new()
        }
    }

    /// Shows a new status on a verb's output.
    pub fn line(&mut self, ctx: &mut Context<'_>, message: &str) -> std::io::Result<()> {
        let text = self.render(message);
        ctx.print(&text)
    }

    /// Ends the display on a verb's output, before the final message is printed.
    pub fn finish(&mut self, ctx: &mut Context<'_>) -> std::io::Result<()> {
        let text = self.render_finish();
        ctx.print(&text)
    }

    /// Shows a new status on `out`.
    pub fn line_to(&mut self, out: &mut dyn Write, message: &str) -> std::io::Result<()> {
        let text = self.render(message);
        out.write_all(text.as_bytes())?;
        out.flush()
    }

    /// Ends the display on `out`.
    pub fn finish_to(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        let text = self.render_finish();
        out.write_all(text.as_bytes())?;
        out.flush()
    }
}

/// Width of [`Counter`]'s bar, in characters.
const BAR_WIDTH: usize = 30;

/// Items of work done out of a known total, shown on stderr when it is a terminal as one
/// line rewritten in place (`[#######       ] 14/60 runs, 52 s`); nothing when piped.
/// [`Counter::tick`] may be called from several threads.
pub struct Counter {
    total: usize,
    unit: &'static str,
    done: AtomicUsize,
    terminal: bool,
    started: Instant,
}

impl Counter {
    /// A counter of `total` items called `unit` (plural), shown when stderr is a terminal.
    pub fn new(total: usize, unit: &'static str) -> Self {
        Counter {
            total,
            unit,
            done: AtomicUsize::new(0),
            terminal: std::io::stderr().is_terminal(),
            started: Instant::now(),
        }
    }

    /// Counts one more item done and redraws the line.
    pub fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if self.terminal {
            let line = self.render(done, self.started.elapsed().as_secs_f64());
            eprint!("{line}");
        }
    }

    /// The line for `done` items after `seconds`.
    fn render(&self, done: usize, seconds: f64) -> String {
        let filled = (done * BAR_WIDTH / self.total.max(1)).min(BAR_WIDTH);
        format!(
            "\r[{}{}] {done}/{} {}, {seconds:.0} s",
            "#".repeat(filled),
            " ".repeat(BAR_WIDTH - filled),
            self.total,
            self.unit,
        )
    }

    /// Ends the line (on a terminal), before the results are printed.
    pub fn finish(&self) {
        if self.terminal {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_draws_a_bar_of_the_share_done() {
        let counter = Counter {
            terminal: false,
            ..Counter::new(60, "runs")
        };
        assert_eq!(
            counter.render(14, 51.6),
            format!("\r[{}{}] 14/60 runs, 52 s", "#".repeat(7), " ".repeat(23))
        );
        assert_eq!(
            counter.render(60, 1.0),
            format!("\r[{}] 60/60 runs, 1 s", "#".repeat(30))
        );
        counter.tick();
        assert_eq!(
            counter.done.load(Ordering::Relaxed),
            1,
            "counted, nothing drawn"
        );
    }

    #[test]
    fn plain_lines_when_piped_and_one_rewritten_line_on_a_terminal() {
        let mut piped = Progress::new(false);
        let got: Vec<String> = ["a", "a", "b", "a"]
            .iter()
            .map(|m| piped.render(m))
            .collect();
        assert_eq!(got, ["a\n", "", "b\n", "a\n"]);
        assert_eq!(piped.render_finish(), "");

        let mut terminal = Progress::new(true);
        assert_eq!(
            terminal.render_finish(),
            "",
            "nothing shown, nothing to clear"
        );
        assert_eq!(terminal.render("a"), "\r\x1b[2K| a (0s)");
        assert_eq!(terminal.render("a"), "\r\x1b[2K/ a (0s)");
        assert_eq!(terminal.render_finish(), "\r\x1b[2K");
        assert_eq!(terminal.render_finish(), "");

        let mut quiet = Progress::terminal_only(false);
        assert_eq!(quiet.render("a"), "", "nothing when piped");
        assert_eq!(quiet.render_finish(), "");
        assert!(Progress::terminal_only(true)
            .render("a")
            .ends_with("a (0s)"));
    }
}
