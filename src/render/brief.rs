//! THE ONE PLACE where a line a person reads is made short. Every human-readable output (`check`'s text and SARIF
//! messages, the lines of `expand`, `fold`, `infer` and `shapes`, the findings a refused rewrite prints) goes
//! through [`abbreviate`] or [`fit`], so that no line runs past [`MAX_CHARS`] characters besides the model's path.
//! (Escaping the model-controlled names these lines hold belongs here too, beside the shortening.)
//!
//! A long dim expression in a shape list (`[1, floor((height - 1) / 2) + 1, …]`) is replaced by a short name
//! (`h₁`) wherever it appears, and every name is defined beside the line that uses it (`h₁ = floor(…)`), each
//! definition a line of its own within the limit: an expression too long for one is named in parts
//! (`h₂ = broadcast(2*h₃, h₄)`). What is still too long is cut with `…`, keeping the end of a message, which says
//! what matters most. JSON keeps every message whole.

/// The longest line (besides the model's path) a human-readable output shows.
pub const MAX_CHARS: usize = 300;
/// What a line that starts with `PATH: ` has after it.
pub const AFTER_PATH: usize = MAX_CHARS - 2;
/// Dim expressions longer than this get a short name (in findings always; elsewhere when the line is too long).
const LONG_EXPRESSION: usize = 16;
/// How a definition line starts: `    h₁ = `.
pub const LEGEND_INDENT: &str = "    ";

/// A message made short: the text, and the names it uses with the expressions they stand for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Brief {
    /// As one-line formats show it (see [`crate::sys::escape`]).
    pub message: String,
    /// `(name, expression)` in order of first use, then the names used inside definitions.
    pub names: Vec<(String, String)>,
}

impl Brief {
    /// The definition lines of the names, `    h₁ = EXPRESSION`, each at most [`MAX_CHARS`] characters.
    pub fn legend(&self) -> Vec<String> {
        self.names.iter().map(|(name, expression)| format!("{LEGEND_INDENT}{name} = {expression}")).collect()
    }

    /// The names defined inline, `h₁ = EXPRESSION; h₂ = …`, for output that has one line per finding.
    pub fn legend_inline(&self) -> String {
        let items: Vec<String> = self.names.iter().map(|(n, e)| format!("{n} = {e}")).collect();
        items.join("; ")
    }
}

/// When dims are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// Every dim expression longer than a few characters, so that a finding reads at a glance.
    Always,
    /// The longest expressions first, only as many as the line needs to fit.
    AsNeeded,
}

/// Shortens a message (its names marked, see [`crate::sys::escape`]) to at most `budget` characters: dims of shape
/// lists (`[a, b, c]`) become `h₁`, `h₂`, … wherever they appear (the same expression, the same name), as `naming`
/// says; the names are defined in [`Brief::names`], each short enough for a line of its own; the names the message
/// mentions are shown as [`crate::sys::escape::short`] shows them and never taken for shapes, everything else is
/// escaped, and what is still too long is cut with `…`.
pub fn abbreviate(marked: &str, budget: usize) -> Brief {
    abbreviate_with(marked, budget, Naming::Always)
}

/// [`abbreviate`] with the given [`Naming`].
pub fn abbreviate_with(marked: &str, budget: usize, naming: Naming) -> Brief {
    use crate::sys::escape::{segments, Segment};
    if naming == Naming::AsNeeded {
        // Plain ASCII throughout, its names short: the line is the text without its marks.
        if let Some(message) = crate::sys::escape::shown_as_written(marked).filter(|m| m.len() <= budget) {
            return Brief { message, names: Vec::new() };
        }
    }
    let segments = segments(marked);
    if naming == Naming::AsNeeded {
        // What fits needs no names (the most common line, and the one thing `expand` prints per site).
        let mut message = String::with_capacity(marked.len());
        for s in &segments {
            match s {
                Segment::Text(t) => message.push_str(&crate::sys::escape::text(t)),
                Segment::Name(n) => message.push_str(&crate::sys::escape::short(n)),
            }
        }
        if message.len() <= budget || message.chars().count() <= budget {
            return Brief { message, names: Vec::new() };
        }
    }
    // The text between names, escaped (so that no placeholder below can be spelled by the model), and the names.
    let mut parts: Vec<(bool, String)> = segments
        .into_iter()
        .map(|s| match s {
            Segment::Text(t) => (true, crate::sys::escape::text(t).into_owned()),
            Segment::Name(n) => (false, crate::sys::escape::short(&n).into_owned()),
        })
        .collect();
    let length = |parts: &[(bool, String)]| parts.iter().map(|(_, t)| t.chars().count()).sum::<usize>();
    let mut expressions: Vec<String> = Vec::new();
    for (_, text) in parts.iter().filter(|(is_text, _)| *is_text) {
        for dim in shape_dims(text) {
            if dim.chars().count() > LONG_EXPRESSION && !expressions.iter().any(|e| e == dim) {
                expressions.push(dim.to_string());
            }
        }
    }
    // Longest first, so that an expression inside a longer one does not break the longer one's replacement; each
    // becomes a placeholder first, numbered in order of first use after.
    expressions.sort_by_key(|e| std::cmp::Reverse(e.len()));
    let mut placed: Vec<(String, String)> = Vec::new();
    for (k, expression) in expressions.into_iter().enumerate() {
        if naming == Naming::AsNeeded && length(&parts) <= budget {
            break;
        }
        let placeholder = format!("\u{0}{k}\u{0}");
        let mut used = false;
        for (_, text) in parts.iter_mut().filter(|(is_text, _)| *is_text) {
            if text.contains(expression.as_str()) {
                *text = text.replace(expression.as_str(), &placeholder);
                used = true;
            }
        }
        if used {
            placed.push((placeholder, expression));
        }
    }
    let mut text: String = parts.into_iter().map(|(_, t)| t).collect();
    placed.sort_by_key(|(placeholder, _)| text.find(placeholder.as_str()));
    let mut names = Vec::new();
    for (n, (placeholder, expression)) in placed.into_iter().enumerate() {
        let name = format!("h{}", subscript(n + 1));
        text = text.replace(&placeholder, &name);
        names.push((name, expression));
    }
    let names = fit_definitions(names);
    Brief { message: cut(&text, budget), names }
}

/// `lead` and `text` on one line of at most [`AFTER_PATH`] characters (the line follows `PATH: `; the lead is kept
/// whole: a location), the dims of `text` named as needed; returns the line and the definition lines after it.
pub fn fit(lead: &str, text: &str) -> (String, Vec<String>) {
    let (lead, brief) = fit_parts(lead, text);
    (format!("{lead}{}", brief.message), brief.legend())
}

/// [`fit`]'s line in its two parts: the lead as shown, and the text made short.
fn fit_parts<'a>(lead: &'a str, text: &str) -> (std::borrow::Cow<'a, str>, Brief) {
    // A lead (a location) longer than the line can hold is cut too: the line keeps 80 characters for the text.
    let chars = lead.chars().count();
    let lead: std::borrow::Cow<'_, str> = match chars <= AFTER_PATH - 80 {
        true => lead.into(),
        false => cut(lead, AFTER_PATH - 80).into(),
    };
    let chars = chars.min(AFTER_PATH - 80);
    let budget = AFTER_PATH.saturating_sub(chars).max(80);
    (lead, abbreviate_with(text, budget, Naming::AsNeeded))
}

/// Definitions short enough for a line each: an expression too long is named in parts, its longest function calls
/// (`floor(…)`, `broadcast(…)`) first, each part a name defined after it; what cannot be split is cut.
fn fit_definitions(mut names: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut k = 0;
    while k < names.len() {
        let budget = MAX_CHARS - LEGEND_INDENT.len() - names[k].0.chars().count() - 3;
        while names[k].1.chars().count() > budget {
            let expression = names[k].1.clone();
            let Some(part) = longest_inner_call(&expression) else {
                names[k].1 = cut(&expression, budget);
                break;
            };
            let name = match names.iter().find(|(_, e)| *e == part) {
                Some((name, _)) => name.clone(),
                None => {
                    let name = format!("h{}", subscript(names.len() + 1));
                    names.push((name.clone(), part.clone()));
                    name
                }
            };
            names[k].1 = expression.replace(&part, &name);
        }
        k += 1;
    }
    names
}

/// The longest `name(…)` call inside `expression` (not the whole of it) longer than [`LONG_EXPRESSION`].
fn longest_inner_call(expression: &str) -> Option<String> {
    let chars: Vec<(usize, char)> = expression.char_indices().collect();
    let mut best: Option<&str> = None;
    let mut open: Vec<usize> = Vec::new();
    for (i, &(at, c)) in chars.iter().enumerate() {
        match c {
            '(' => open.push(i),
            ')' => {
                let Some(start) = open.pop() else { continue };
                // Back from the parenthesis over the function's name.
                let mut first = start;
                while first > 0 && (chars[first - 1].1.is_alphanumeric() || chars[first - 1].1 == '_') {
                    first -= 1;
                }
                if first == start {
                    continue;
                }
                let text = &expression[chars[first].0..at + c.len_utf8()];
                let inner = text.len() < expression.len();
                if inner && text.chars().count() > LONG_EXPRESSION && best.is_none_or(|b| text.len() > b.len()) {
                    best = Some(text);
                }
            }
            _ => {}
        }
    }
    best.map(str::to_string)
}

/// One line `INPUT: LEAD TEXT`, the dims of TEXT named as the line needs, and the names' definitions after it.
pub(crate) fn write_fitted(out: &mut impl std::io::Write, input: &str, lead: &str, text: &str) -> std::io::Result<()> {
    let (lead, brief) = fit_parts(lead, text);
    for part in [input, ": ", &lead, &brief.message, "\n"] {
        out.write_all(part.as_bytes())?;
    }
    for line in brief.legend() {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Whether `line` is [`write_fitted`]'s line as it stands: its lead at `line[lead..start]` kept whole, and the text
/// from `start` on, shown as it is written (printable ASCII), fitting after it. `expand` puts the lines of the sites
/// whose every part is shown as written together at planning, and checks only this when it writes them.
#[inline]
pub(crate) fn fits_as_written(line: &str, lead: usize, start: usize) -> bool {
    lead_fits(&line[..start], lead) && text_fits(line, lead, start)
}

/// Whether the lead at `line[lead..]` is kept whole.
fn lead_fits(line: &str, lead: usize) -> bool {
    // A lead has at most as many characters as bytes: one that fits counted in bytes fits, and leaves at least
    // the room it leaves counted in characters. Counted exactly only when that is not enough.
    line.len() - lead <= AFTER_PATH - 80 || line[lead..].chars().count() <= AFTER_PATH - 80
}

/// Whether the text from `start`, shown as it is written, fits after the lead at `line[lead..start]`.
fn text_fits(line: &str, lead: usize, start: usize) -> bool {
    // As written, the text is printable ASCII: a byte a character.
    let (bytes, shown) = (start - lead, line.len() - start);
    if shown > AFTER_PATH.saturating_sub(bytes).max(80) {
        let chars = line[lead..start].chars().count().min(AFTER_PATH - 80);
        if shown > (AFTER_PATH - chars).max(80) {
            return false;
        }
    }
    true
}

/// The text cut to `budget` characters with `…`. A message ends with what matters most (`…: on axis 1, B has 4
/// where A has 3`), so the part before its last `: ` is cut when that keeps the end whole.
pub fn cut(text: &str, budget: usize) -> String {
    let len = text.chars().count();
    if len <= budget {
        return text.to_string();
    }
    if let Some(at) = text.rfind(": ") {
        let tail = &text[at..];
        let tail_len = tail.chars().count();
        if tail_len + 1 < budget / 2 {
            let lead: String = text[..at].chars().take(budget - tail_len - 1).collect();
            return format!("{lead}…{tail}");
        }
    }
    let mut out: String = text.chars().take(budget.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A paragraph wrapped to 100 columns at spaces (never inside a word or a code name), its lines after the first
/// starting with `indent`.
pub fn wrapped(text: &str, indent: &str) -> String {
    let options = textwrap::Options::new(100)
        .subsequent_indent(indent)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(false);
    textwrap::wrap(text, options).join("\n")
}

/// The text in ASCII, for a terminal that is not UTF-8: `≤` `<=`, `≥` `>=`, `∈` `in`, `≠` `!=`, `›` `>`, `…`
/// `...`, `×` `x`, `·` `*`, `→` `->`, subscripts `h₁₂` `h_12`, superscripts `2⁶³` `2^63`. Other characters (a
/// model's own names) are left as they are.
pub fn ascii(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_ascii() {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous: Option<char> = None;
    for c in text.chars() {
        let sub = ('\u{2080}'..='\u{2089}').contains(&c);
        let sup = superscript_digit(c);
        match c {
            _ if sub => {
                if previous.is_none_or(|p| !('\u{2080}'..='\u{2089}').contains(&p)) {
                    out.push('_');
                }
                out.push(char::from(b'0' + (c as u32 - 0x2080) as u8));
            }
            _ if sup.is_some() => {
                if previous.is_none_or(|p| superscript_digit(p).is_none()) {
                    out.push('^');
                }
                out.push(sup.unwrap_or('?'));
            }
            '≤' => out.push_str("<="),
            '≥' => out.push_str(">="),
            '∈' => out.push_str("in"),
            '≠' => out.push_str("!="),
            '›' => out.push('>'),
            '…' => out.push_str("..."),
            '×' => out.push('x'),
            '·' => out.push('*'),
            '→' => out.push_str("->"),
            '−' | '–' | '—' => out.push('-'),
            other => out.push(other),
        }
        previous = Some(c);
    }
    out.into()
}

fn superscript_digit(c: char) -> Option<char> {
    match c {
        '⁰' => Some('0'),
        '¹' => Some('1'),
        '²' => Some('2'),
        '³' => Some('3'),
        '⁴'..='⁹' => char::from_digit(c as u32 - '⁰' as u32, 10),
        _ => None,
    }
}

fn subscript(n: usize) -> String {
    n.to_string().chars().map(|c| char::from_u32(0x2080 + c.to_digit(10).unwrap_or(0)).unwrap_or(c)).collect()
}

/// The items of every `[…]` list in the text, split at the commas outside parentheses.
fn shape_dims(text: &str) -> Vec<&str> {
    let mut dims = Vec::new();
    let mut start: Option<usize> = None;
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '[' => {
                start = Some(i + 1);
                depth = 0;
            }
            '(' if start.is_some() => depth += 1,
            ')' if start.is_some() => depth = depth.saturating_sub(1),
            ',' | ']' if depth == 0 => {
                if let Some(s) = start {
                    dims.push(text[s..i].trim());
                    start = if c == ',' { Some(i + 1) } else { None };
                }
            }
            _ => {}
        }
    }
    dims
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_expressions_get_short_names_used_wherever_they_appear() {
        let h = "floor(floor(height/2 - 1/2)/2) + 1";
        let w = "floor(floor(width/2 - 1/2)/2) + 1";
        let message = format!("A [1, {h}, {w}] and B [1, 3, {w}] do not broadcast: on axis 1, B has 3 where A has {h}");
        let brief = abbreviate(&message, MAX_CHARS);
        assert_eq!(brief.message, "A [1, h₁, h₂] and B [1, 3, h₂] do not broadcast: on axis 1, B has 3 where A has h₁");
        assert_eq!(brief.names, [("h₁".to_string(), h.to_string()), ("h₂".to_string(), w.to_string())]);
        assert_eq!(brief.legend(), [format!("    h₁ = {h}"), format!("    h₂ = {w}")]);
    }

    #[test]
    fn short_messages_are_unchanged_and_long_ones_are_cut() {
        let message = "A [2, 3] and B [4] do not broadcast: on axis 1, B has 4 where A has 3";
        assert_eq!(abbreviate(message, MAX_CHARS), Brief { message: message.into(), names: vec![] });
        let long = "x".repeat(400);
        let brief = abbreviate(&long, MAX_CHARS);
        assert_eq!(brief.message.chars().count(), MAX_CHARS);
        assert!(brief.message.ends_with('…'));
        // The end of a message (the axis and the two sizes) stays whole; the list before it is cut.
        let list = (0..60).map(|i| format!("input_{i} [2, 3]")).collect::<Vec<_>>().join(", ");
        let message = format!("{list} do not broadcast: on axis 1, input_59 has 4 where input_0 has 3");
        let brief = abbreviate(&message, MAX_CHARS);
        assert_eq!(brief.message.chars().count(), MAX_CHARS);
        assert!(brief.message.ends_with("…: on axis 1, input_59 has 4 where input_0 has 3"), "{}", brief.message);
    }

    #[test]
    fn names_are_never_taken_for_shapes() {
        use crate::sys::escape::name;
        let message =
            format!("{} [batch_size_dimension, 3] and B [3]: no broadcast", name("feat[batch_size_dimension, 3]"));
        let brief = abbreviate(&message, MAX_CHARS);
        assert_eq!(brief.message, "feat[batch_size_dimension, 3] [h₁, 3] and B [3]: no broadcast");
        assert_eq!(brief.names, [("h₁".to_string(), "batch_size_dimension".to_string())]);
        // A name that spells a placeholder or holds controls is shown escaped, and only it.
        let brief = abbreviate(&format!("{} [2]", name("a\u{0}0\u{0}\n")), MAX_CHARS);
        assert_eq!(brief.message, r"a\00\0\n [2]");
    }

    #[test]
    fn an_expression_inside_a_longer_one_keeps_the_longer_one_whole() {
        let inner = "floor(height/2 - 1/2)";
        let outer = "floor(floor(height/2 - 1/2)/2)";
        let brief = abbreviate(&format!("X [{outer}, {inner}]"), MAX_CHARS);
        assert_eq!(brief.message, "X [h₁, h₂]");
        assert_eq!(brief.names[0].1, outer);
        assert_eq!(brief.names[1].1, inner);
    }

    /// Issue 28: a definition longer than a line is named in parts, every line within the limit, and together they
    /// say the whole expression.
    #[test]
    fn a_definition_too_long_for_a_line_is_named_in_parts() {
        let floor = |n: usize| format!("floor((p2o.DynamicDimension.1 + {n}) / {})", n + 1);
        let mut e = floor(31);
        for k in 0..6 {
            e = format!("broadcast(2*{e}, {})", floor(k * 2 + 1));
        }
        assert!(e.chars().count() > MAX_CHARS);
        let brief = abbreviate(&format!("X [N, 24, {e}] -> Expand to [N, 24, {e}]"), MAX_CHARS);
        assert_eq!(brief.message, "X [N, 24, h₁] -> Expand to [N, 24, h₁]");
        assert!(brief.names.len() > 1, "{:?}", brief.names);
        for line in brief.legend() {
            assert!(line.chars().count() <= MAX_CHARS, "{line}");
        }
        // Substituting the definitions back, innermost last, gives the expression.
        let mut whole = "h₁".to_string();
        for (name, expression) in brief.names.iter() {
            whole = whole.replace(name.as_str(), expression);
        }
        assert_eq!(whole, e);
    }

    #[test]
    fn ascii_says_the_same_without_unicode() {
        let text = "main › /m/Add (Add): holds only if N ∈ {1, 3} and seq ≤ 64 and h₁₂ < 2⁶³ …";
        assert_eq!(ascii(text), "main > /m/Add (Add): holds only if N in {1, 3} and seq <= 64 and h_12 < 2^63 ...");
        assert!(matches!(ascii("plain"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn a_line_fitted_in_place_is_the_line_written_part_by_part() {
        use crate::sys::escape::name;
        let step = |n: usize| format!("{} [64] -> Expand to [8, {}]", name("small_0"), "6".repeat(n));
        // Leads of bytes and of characters on both sides of the room a lead may take, texts on both sides of the
        // room left, and texts shown otherwise than as written.
        let mut cases = Vec::new();
        for lead in [10, 200, 218, 219, 230] {
            for text in [step(1), step(200), step(AFTER_PATH - lead - 31), step(AFTER_PATH - lead - 30)] {
                cases.push(("a".repeat(lead - 2) + ": ", text.clone()));
                cases.push(("›".repeat(lead - 2) + ": ", text));
            }
        }
        cases.push(("main › x: ".into(), format!("{} [2]", name("x\ny"))));
        cases.push(("main › x: ".into(), "[1, floor((height - 1) / 2) + 1]".into()));
        let mut taken = 0;
        for (lead, text) in cases {
            let mut expected = Vec::new();
            write_fitted(&mut expected, "in.onnx", &lead, &text).unwrap();
            let mut line = format!("in.onnx: {lead}");
            let start = line.len();
            let fast = crate::sys::escape::push_shown_as_written(&mut line, &text)
                && fits_as_written(&line, "in.onnx: ".len(), start);
            if fast {
                assert_eq!(format!("{line}\n").as_bytes(), expected, "{lead} {text}");
            }
            // Whatever is declined has to be: it is cut, named or escaped.
            let (shown_lead, brief) = fit_parts(&lead, &text);
            let as_written = crate::sys::escape::shown_as_written(&text);
            let whole = shown_lead == lead && brief.names.is_empty() && as_written.as_ref() == Some(&brief.message);
            assert_eq!(fast, whole, "{lead} {text}");
            taken += usize::from(fast);
        }
        // Leads of 10, 200 and 218 characters, of one byte each and of three: the short text and the one that just
        // fits (and the 231-character one after a lead of 10); and the text without names.
        assert_eq!(taken, 2 * (3 + 2 + 2) + 1);
    }

    #[test]
    fn as_needed_names_only_what_the_line_needs() {
        let long = "floor((height - 1) / 2) + 1";
        let text = format!("x [N, {long}]");
        assert_eq!(abbreviate_with(&text, MAX_CHARS, Naming::AsNeeded).message, text);
        let text = format!("x [N, {long}] and y [{long}, 3] broadcast to [N, {long}, 3]");
        let (line, legend) = fit(&"y".repeat(250), &text);
        assert!(line.ends_with("x [N, h₁] and y [h₁, 3] broadcast to [N, h₁, 3]"), "{line}");
        assert_eq!(legend, [format!("    h₁ = {long}")]);
    }
}
