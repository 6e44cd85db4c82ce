//! What a terminal can show: text output (findings, summaries, messages on stderr) is written in ASCII where the
//! terminal is not UTF-8, `≤ ∈ ₁ › …` as `<= in _1 > ...` ([`onnx_bcast::render::brief::ascii`]). JSON, SARIF and models
//! are data, always UTF-8.
//!
//! ASCII when `ONNX_BCAST_CHARSET=ascii`; UTF-8 when it is `utf-8`; otherwise ASCII only for a stream that is a
//! terminal whose locale (the first of `LC_ALL`, `LC_CTYPE`, `LANG` that is set) is not UTF-8. A file or a pipe
//! gets UTF-8: whoever reads it next decides.

use std::io::{self, IsTerminal, Write};
use std::sync::OnceLock;

/// Whether text for a stream is written in ASCII, given the override, whether the stream is a terminal, and the
/// locale variables (`LC_ALL`, `LC_CTYPE`, `LANG`).
pub fn wants_ascii(choice: Option<&str>, is_terminal: bool, locale: [Option<&str>; 3]) -> bool {
    match choice.map(str::to_ascii_lowercase).as_deref() {
        Some("ascii") => return true,
        Some("utf-8" | "utf8") => return false,
        _ => {}
    }
    is_terminal && !onnx_bcast::sys::platform::terminal_is_utf8(locale)
}

fn decide(is_terminal: bool) -> bool {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (all, ctype, lang) = (var("LC_ALL"), var("LC_CTYPE"), var("LANG"));
    let choice = var("ONNX_BCAST_CHARSET");
    wants_ascii(choice.as_deref(), is_terminal, [all.as_deref(), ctype.as_deref(), lang.as_deref()])
}

/// Whether text on standard output is written in ASCII (decided once).
pub fn stdout_ascii() -> bool {
    static ASCII: OnceLock<bool> = OnceLock::new();
    *ASCII.get_or_init(|| decide(io::stdout().is_terminal()))
}

/// Whether messages on standard error are written in ASCII (decided once).
pub fn stderr_ascii() -> bool {
    static ASCII: OnceLock<bool> = OnceLock::new();
    *ASCII.get_or_init(|| decide(io::stderr().is_terminal()))
}

/// One line on standard error, as the terminal can show it (the `say!` macro).
pub fn eprint_line(line: &str) {
    let text = if stderr_ascii() { onnx_bcast::render::brief::ascii(line) } else { line.into() };
    eprintln!("{text}");
}

/// A writer of text for standard output that writes it in ASCII when `ascii` (whole lines: a line is
/// transliterated when its newline arrives, so that no character is split).
pub struct Text<W: Write> {
    inner: W,
    ascii: bool,
    pending: Vec<u8>,
}

impl<W: Write> Text<W> {
    pub fn new(inner: W, ascii: bool) -> Text<W> {
        Text { inner, ascii, pending: Vec::new() }
    }
}

impl<W: Write> Write for Text<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.ascii {
            return self.inner.write(buf);
        }
        self.pending.extend_from_slice(buf);
        if let Some(end) = self.pending.iter().rposition(|&b| b == b'\n') {
            let lines: Vec<u8> = self.pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&lines);
            self.inner.write_all(onnx_bcast::render::brief::ascii(&text).as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.inner.write_all(onnx_bcast::render::brief::ascii(&String::from_utf8_lossy(&rest)).as_bytes())?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_only_on_a_terminal_whose_locale_is_not_utf8_unless_told() {
        assert!(!wants_ascii(None, true, [None, None, Some("en_US.UTF-8")]));
        assert!(!wants_ascii(None, true, [Some("C.utf8"), None, Some("C")]));
        assert!(wants_ascii(None, true, [None, None, Some("C")]) == cfg!(unix));
        assert!(wants_ascii(None, true, [None, None, None]) == cfg!(unix));
        assert!(!wants_ascii(None, false, [None, None, Some("C")]), "a pipe gets UTF-8");
        assert!(wants_ascii(Some("ascii"), false, [None, None, Some("en_US.UTF-8")]));
        assert!(!wants_ascii(Some("UTF-8"), true, [None, None, Some("C")]));
    }

    #[test]
    fn whole_lines_are_written_in_ascii() {
        let mut out = Text::new(Vec::new(), true);
        out.write_all("a ≤ ".as_bytes()).unwrap();
        out.write_all("b › h₁\nrest".as_bytes()).unwrap();
        out.flush().unwrap();
        assert_eq!(String::from_utf8(out.inner).unwrap(), "a <= b > h_1\nrest");
    }
}
