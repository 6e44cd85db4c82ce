//! Model-controlled text in human-readable output: the one place that decides how a name, a path or a message is
//! shown, which every renderer calls (text, GitHub, SARIF message text, the lines of `expand`, `fold`, `infer` and
//! `shapes`, `dot` labels, errors on stderr).
//!
//! Every name in a model is untrusted: it may hold ESC sequences that repaint a terminal, BEL, NUL, a CR or a line
//! separator that starts a line of its own (a GitHub Actions workflow command such as `::error::…`, which the
//! runner executes), bidirectional overrides that show text in another order than it is, or a megabyte of text.
//! So in human-readable output:
//!
//! - every character Rust's `escape_debug` escapes (controls, format characters such as the bidirectional
//!   overrides and isolates and the zero-width ones, line and paragraph separators, unassigned and private-use
//!   code points, noncharacters) is written as its escape (`\u{1b}`, `\n`, `\u{202e}`), and `\` as `\\`, so the
//!   escaping is one-to-one: two names that differ are shown differently. A name or path whose first non-blank
//!   character is `:` shows it as `\u{3a}`, so that no line can start a workflow command (`::`), not even a name
//!   `:` followed by the `: ` a line puts after it;
//! - a name longer than [`NAME_CHARS`] characters (as escaped) is shortened in one-line formats to its beginning,
//!   `…` and a 64-bit hash of the whole name (`#` and 16 hex digits), so that two long names that share their
//!   beginning still differ ([`short`]);
//! - JSON and SARIF's structured fields keep every name whole, JSON-escaped ([`plain`]).
//!
//! Messages are built with the names they mention marked ([`name`]): the marks (Unicode noncharacters, which
//! Unicode reserves for a program's internal use, with any such character of the name itself quoted) let a
//! renderer show each name as above and everything around it escaped, and let the shortener of long shapes
//! (`crate::render::brief`) touch only the text between names. [`Message`] holds such a text.

use std::borrow::Cow;
use std::fmt;

/// The longest name shown whole in one-line formats, in characters (as escaped).
pub const NAME_CHARS: usize = 80;
/// What a shortened name keeps of its beginning: with `…`, `#` and 16 hex digits it stays within [`NAME_CHARS`].
const KEPT_CHARS: usize = NAME_CHARS - 18;

const OPEN: char = '\u{FDD0}';
const CLOSE: char = '\u{FDD1}';
const QUOTE: char = '\u{FDD2}';

/// A model-controlled name inside a message: `format!("value '{}' …", name(v))`.
pub fn name(text: &str) -> Name<'_> {
    Name(text)
}

/// See [`name`].
#[derive(Clone, Copy, Debug)]
pub struct Name<'a>(&'a str);

impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

impl Name<'_> {
    /// The name marked, as [`Display`](fmt::Display) writes it, straight to `out`.
    pub fn write_to(&self, out: &mut impl fmt::Write) -> fmt::Result {
        out.write_char(OPEN)?;
        if printable_ascii(self.0) || !self.0.contains([OPEN, CLOSE, QUOTE]) {
            out.write_str(self.0)?;
            return out.write_char(CLOSE);
        }
        for c in self.0.chars() {
            if matches!(c, OPEN | CLOSE | QUOTE) {
                out.write_char(QUOTE)?;
            }
            out.write_char(c)?;
        }
        out.write_char(CLOSE)
    }

    /// [`Name::write_to`] a `String`, which cannot fail: a message put together without a formatter.
    pub fn push_to(&self, out: &mut String) {
        let _ = self.write_to(out);
    }
}

/// A human-readable text whose model-controlled names are marked ([`name`]). Compose it into other messages with
/// `Display` (which writes it marked); show it with [`Message::one_line`] or [`Message::plain`]. Compared with a
/// `&str`, it is its plain text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Message(String);

impl Message {
    /// The text as written, names marked.
    pub fn marked(&self) -> &str {
        &self.0
    }

    /// The text with every name whole and unescaped: for JSON, SARIF's structured fields and the Python API.
    pub fn plain(&self) -> Cow<'_, str> {
        plain(&self.0)
    }

    /// The text as one-line formats show it: escaped, long names shortened.
    pub fn one_line(&self) -> String {
        one_line(&self.0)
    }
}

impl From<String> for Message {
    fn from(marked: String) -> Message {
        Message(marked)
    }
}

impl From<&str> for Message {
    fn from(marked: &str) -> Message {
        Message(marked.to_string())
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Message {
    fn eq(&self, other: &str) -> bool {
        self.plain() == other
    }
}

impl PartialEq<&str> for Message {
    fn eq(&self, other: &&str) -> bool {
        self.plain() == *other
    }
}

/// A part of a marked text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment<'a> {
    /// Text between names (the tool's words, shapes, sizes).
    Text(&'a str),
    /// A name, unquoted: as the model spells it.
    Name(Cow<'a, str>),
}

/// The parts of a marked text, in order. A mark left open runs to the end.
pub fn segments(marked: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut rest = marked;
    while let Some(open) = rest.find(OPEN) {
        if open > 0 {
            out.push(Segment::Text(&rest[..open]));
        }
        let body = &rest[open + OPEN.len_utf8()..];
        let (name, after) = read_name(body);
        out.push(Segment::Name(name));
        rest = after;
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest));
    }
    out
}

/// A name after its opening mark: the name unquoted and what follows its closing mark.
fn read_name(body: &str) -> (Cow<'_, str>, &str) {
    // Most names hold no mark of their own: found by searching for the closing mark, and borrowed.
    if let Some(close) = body.find(CLOSE).filter(|&close| !body[..close].contains(QUOTE)) {
        return (Cow::Borrowed(&body[..close]), &body[close + CLOSE.len_utf8()..]);
    }
    let mut chars = body.char_indices();
    let mut quoted: Option<String> = None;
    while let Some((i, c)) = chars.next() {
        match c {
            CLOSE => {
                let name = quoted.map_or(Cow::Borrowed(&body[..i]), Cow::Owned);
                return (name, &body[i + CLOSE.len_utf8()..]);
            }
            QUOTE => {
                let q = quoted.get_or_insert_with(|| body[..i].to_string());
                if let Some((_, next)) = chars.next() {
                    q.push(next);
                }
            }
            _ => {
                if let Some(q) = &mut quoted {
                    q.push(c);
                }
            }
        }
    }
    (quoted.map_or(Cow::Borrowed(body), Cow::Owned), "")
}

/// A marked text whose every part is shown as it is written (printable ASCII, no name past [`NAME_CHARS`], no
/// part starting with `:`): the text without its marks, which is what [`text`] and [`short`] make of it part by
/// part. `None` for any other text, which takes the way through [`segments`]. One pass over the bytes, for the
/// line of each of a large model's sites.
pub fn shown_as_written(marked: &str) -> Option<String> {
    let mut out = String::with_capacity(marked.len());
    push_shown_as_written(&mut out, marked).then_some(out)
}

/// [`shown_as_written`] appended to `out`: `false`, and `out` as it was, for a text it does not show so. A large
/// model's `expand` writes a line per site into one buffer it reuses.
pub fn push_shown_as_written(out: &mut String, marked: &str) -> bool {
    let kept = out.len();
    let shown = push_as_written(out, marked);
    if !shown {
        out.truncate(kept);
    }
    shown
}

fn push_as_written(out: &mut String, marked: &str) -> bool {
    let bytes = marked.as_bytes();
    let (mut at, mut start, mut in_name) = (0, 0, false);
    loop {
        at += printable_run(&bytes[at..]);
        if at == bytes.len() {
            break;
        }
        // OPEN and CLOSE are EF B7 90 and EF B7 91 in UTF-8; QUOTE, a mark out of place or any other byte
        // takes the long way.
        let opens = match bytes.get(at..at + 3) {
            Some([0xEF, 0xB7, 0x90]) => true,
            Some([0xEF, 0xB7, 0x91]) => false,
            _ => return false,
        };
        let part = &marked[start..at];
        if opens == in_name || starts_like_a_command(part) || (in_name && part.len() > NAME_CHARS) {
            return false;
        }
        out.push_str(part);
        in_name = opens;
        at += 3;
        start = at;
    }
    let part = &marked[start..];
    if in_name || starts_like_a_command(part) {
        return false;
    }
    out.push_str(part);
    true
}

/// Printable ASCII other than `\`: shown as it is. Checked over every byte without stopping early, which the
/// compiler turns into a few wide compares for the short texts of a line.
#[inline]
fn printable_ascii(text: &str) -> bool {
    printable_run(text.as_bytes()) == text.len()
}

/// How many bytes `bytes` starts with that are printable ASCII other than `\`: eight at a time, as one word each
/// (the names and lines of a large model, checked once per line, are mostly such bytes).
#[inline]
fn printable_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    // Whether any byte of `v` is 0 (a flag in the high bit of the first such byte, and maybe of later ones).
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut at = 0;
    for chunk in bytes.chunks_exact(8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // Not ASCII, below ' ' (a borrow out of a byte only flags later bytes), DEL, or `\`.
        let odd =
            (w & HIGH) | (w.wrapping_sub(ONES * 0x20) & !w & HIGH) | zero(w ^ (ONES * 0x7f)) | zero(w ^ (ONES * 0x5c));
        if odd != 0 {
            return at + (odd.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + bytes[at..].iter().position(|&b| b.wrapping_sub(b' ') >= 0x5f || b == b'\\').unwrap_or(bytes.len() - at)
}

/// Whether [`text`] shows `raw` as it is because it is printable ASCII (other than `\`) not starting like a
/// command: checked without making the text.
#[inline]
pub fn plain_ascii(raw: &str) -> bool {
    printable_ascii(raw) && !starts_like_a_command(raw)
}

/// Whether the first character of `part` other than spaces is `:` (see [`text`]).
#[inline]
fn starts_like_a_command(part: &str) -> bool {
    part.bytes().find(|&b| b != b' ') == Some(b':')
}

/// Whether `text` holds any of the marks [`name`] puts around a name (a model's own text may).
pub fn has_marks(text: &str) -> bool {
    text.contains([OPEN, CLOSE, QUOTE])
}

/// The text with its names whole and unescaped, marks gone.
pub fn plain(marked: &str) -> Cow<'_, str> {
    if !has_marks(marked) {
        return Cow::Borrowed(marked);
    }
    let mut out = String::with_capacity(marked.len());
    for s in segments(marked) {
        match s {
            Segment::Text(t) => out.push_str(t),
            Segment::Name(n) => out.push_str(&n),
        }
    }
    Cow::Owned(out)
}

/// Appends [`plain`]'s text of `marked` to `out`, without a String of its own: JSON output makes every site's
/// message in one buffer it keeps. Read byte by byte: every mark is three bytes that begin with 0xEF, which no
/// ASCII text has.
pub fn push_plain(out: &mut String, marked: &str) {
    let bytes = marked.as_bytes();
    // What is copied next starts at `run`; `name`: between an opening and a closing mark.
    let (mut run, mut at, mut name) = (0, 0, false);
    while let Some(k) = bytes[at..].iter().position(|&b| b == MARK_LEAD) {
        let start = at + k;
        let mark = marked[start..].chars().next().expect("a lead byte starts a character");
        at = start + 1;
        let ends_run = match mark {
            OPEN => !name,
            CLOSE | QUOTE => name,
            _ => false,
        };
        if !ends_run {
            continue;
        }
        out.push_str(&marked[run..start]);
        run = start + mark.len_utf8();
        at = run;
        match mark {
            // The quoted character is the name's own, whatever it is: it starts the next run.
            QUOTE => at += marked[run..].chars().next().map_or(0, char::len_utf8),
            _ => name = mark == OPEN,
        }
    }
    out.push_str(&marked[run..]);
}

/// The first byte of each mark's UTF-8 form.
const MARK_LEAD: u8 = 0xEF;

/// A marked text as one-line formats show it: the text between names escaped ([`text`]), each name shortened
/// ([`short`]). So is any word of the text between names longer than [`LONG_WORD`] (a megabyte-long `dim_param`
/// in a shape or a condition): words are what lies between spaces and the punctuation of shapes and lists.
pub fn one_line(marked: &str) -> String {
    let mut out = String::with_capacity(marked.len().min(4096));
    for s in segments(marked) {
        match s {
            Segment::Text(t) => push_words(&mut out, t),
            Segment::Name(n) => out.push_str(&short(&n)),
        }
    }
    out
}

/// The longest word shown whole between names, in bytes: longer than any path Linux accepts (4,096 bytes), so that
/// the paths in a message are never shortened, only what no path can be.
pub const LONG_WORD: usize = 4096;

/// `raw` escaped, its words past [`LONG_WORD`] shortened as names are.
fn push_words(out: &mut String, raw: &str) {
    if raw.len() <= LONG_WORD {
        out.push_str(&text(raw));
        return;
    }
    let mut rest = raw;
    while !rest.is_empty() {
        let end = rest.find([' ', ',', '[', ']', '{', '}', '(', ')']).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        match word.len() > LONG_WORD {
            true => out.push_str(&short(word)),
            false => out.push_str(&text(word)),
        }
        let mut delimiter = after.chars();
        if let Some(c) = delimiter.next() {
            out.push(c);
        }
        rest = delimiter.as_str();
    }
}

/// A marked text escaped with every name whole: for messages that carry all they say (an exception's), where
/// one-line formats would shorten.
pub fn escaped(marked: &str) -> String {
    let mut out = String::with_capacity(marked.len());
    for s in segments(marked) {
        match s {
            Segment::Text(t) => out.push_str(&text(t)),
            Segment::Name(n) => out.push_str(&text(&n)),
        }
    }
    out
}

/// Any text from outside the tool (a path, a name, a `dim_param`) escaped for a terminal or a log, whole.
pub fn text(raw: &str) -> Cow<'_, str> {
    // A leading `:` could make `::` with what follows the name on its line (`  NAME: float [2]` in `shapes`).
    let command_like = starts_like_a_command(raw);
    // ASCII shown as it is, byte by byte (most text is); anything else char by char.
    if !command_like && (printable_ascii(raw) || raw.chars().all(shown_as_is)) {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len() + 8);
    let mut first_colon = command_like;
    for c in raw.chars() {
        if c == ':' && first_colon {
            out.push_str("\\u{3a}");
            first_colon = false;
        } else {
            push_escaped(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// A name as one-line formats show it: escaped, and past [`NAME_CHARS`] characters its beginning, `…` and the hash
/// of the whole name, so that it stays unique. Only the beginning of a long name is looked at, besides the hash.
pub fn short(raw: &str) -> Cow<'_, str> {
    // At most NAME_CHARS bytes is at most NAME_CHARS characters: the name is its own head.
    if raw.len() <= NAME_CHARS {
        let shown = text(raw);
        // Shown as it is, it has at most as many characters as bytes.
        if matches!(shown, Cow::Borrowed(_)) || shown.chars().count() <= NAME_CHARS {
            return shown;
        }
    }
    let head: String = raw.chars().take(NAME_CHARS + 1).collect();
    if head.len() == raw.len() {
        let shown = text(raw);
        if shown.chars().count() <= NAME_CHARS {
            return shown;
        }
    }
    // The beginning, escaped, whole escapes only.
    let shown_head = text(&head);
    let mut kept = String::new();
    let mut chars = 0;
    let mut rest = shown_head.as_ref();
    while let Some(c) = rest.chars().next() {
        let piece = escape_at(rest);
        let width = piece.chars().count();
        if chars + width > KEPT_CHARS {
            break;
        }
        kept.push_str(piece);
        chars += width;
        rest = &rest[piece.len().max(c.len_utf8())..];
    }
    Cow::Owned(format!("{kept}…#{:016x}", fnv1a(raw.as_bytes())))
}

/// The first shown character of escaped text with its escape: `\u{202e}`, `\n`, `\\` or one character.
fn escape_at(shown: &str) -> &str {
    let mut chars = shown.char_indices();
    match (chars.next(), chars.next()) {
        (Some((_, '\\')), Some((_, 'u'))) => shown.find('}').map_or(shown, |end| &shown[..=end]),
        (Some((_, '\\')), Some((i, c))) => &shown[..i + c.len_utf8()],
        (Some((_, c)), _) => &shown[..c.len_utf8()],
        (None, _) => shown,
    }
}

fn shown_as_is(c: char) -> bool {
    if c.is_ascii() {
        return c == ' ' || (c.is_ascii_graphic() && c != '\\');
    }
    // What Rust's Debug shows as it is after a plain character (a combining mark after a letter stays).
    let mut buf = [0u8; 8];
    buf[0] = b'a';
    let len = 1 + c.encode_utf8(&mut buf[1..]).len();
    let probe = std::str::from_utf8(&buf[..len]).unwrap_or("");
    probe.escape_debug().count() == 2
}

fn push_escaped(out: &mut String, c: char) {
    if shown_as_is(c) {
        out.push(c);
    } else if c == '\\' {
        out.push_str("\\\\");
    } else {
        out.extend(c.escape_debug());
    }
}

/// FNV-1a, 64 bits: a stable hash (the same in every build and version) to tell shortened names apart.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The data of a GitHub Actions workflow command (`::error …::DATA`), on top of the escaping above: `%`, CR and LF
/// as `%25`, `%0D`, `%0A`, as GitHub's documentation of workflow commands says ("Workflow commands for GitHub
/// Actions", escaping). After [`one_line`] or [`text`] no CR or LF is left; escaping them still keeps any text on
/// one line.
pub fn github_data(shown: &str) -> String {
    shown.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A property of a workflow command (`file=`, `title=`): the data's escapes plus `:` and `,` as `%3A` and `%2C`.
pub fn github_property(shown: &str) -> String {
    github_data(shown).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests;
