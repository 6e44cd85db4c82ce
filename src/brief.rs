//! Messages a person reads at a glance: in text, SARIF and GitHub output a long dim expression in a message is
//! replaced by a short name (`h₁`), listed after the message with `--verbose`, and a message never runs past
//! [`MAX_CHARS`]. Only shapes are shortened so: the names a message mentions are marked ([`crate::escape::name`])
//! and shown as [`crate::escape`] shows names, whatever brackets they hold. JSON keeps the full message.

/// The longest message (with its location) text, SARIF and GitHub output show.
pub const MAX_CHARS: usize = 300;
/// Dim expressions longer than this get a short name.
const LONG_EXPRESSION: usize = 16;

/// A message made short: the text, and the names it uses with the expressions they stand for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Brief {
    /// As one-line formats show it (see [`crate::escape`]).
    pub message: String,
    /// `(name, expression)` in order of first use; the expression escaped, and cut past [`MAX_CHARS`].
    pub names: Vec<(String, String)>,
}

/// Shortens a message (its names marked, see [`crate::escape`]) to at most `budget` characters: every dim of a
/// shape list (`[a, b, c]`) whose expression is longer than a few characters becomes `h₁`, `h₂`, … wherever it
/// appears (the same expression, the same name), the names the message mentions are shown as [`crate::escape::short`]
/// shows them and never taken for shapes, everything else is escaped, and what is still too long is cut with `…`.
pub fn abbreviate(marked: &str, budget: usize) -> Brief {
    use crate::escape::{segments, Segment};
    // The text between names, escaped (so that no placeholder below can be spelled by the model), and the names.
    let parts: Vec<(bool, String)> = segments(marked)
        .into_iter()
        .map(|s| match s {
            Segment::Text(t) => (true, crate::escape::text(t).into_owned()),
            Segment::Name(n) => (false, crate::escape::short(&n).into_owned()),
        })
        .collect();
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
    let mut parts = parts;
    let mut placed: Vec<(String, String)> = Vec::new();
    for (k, expression) in expressions.into_iter().enumerate() {
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
        names.push((name, cut(&expression, MAX_CHARS)));
    }
    Brief { message: cut(&text, budget), names }
}

/// The text cut to `budget` characters with `…`. A message ends with what matters most (`…: on axis 1, B has 4
/// where A has 3`), so the part before its last `: ` is cut when that keeps the end whole.
fn cut(text: &str, budget: usize) -> String {
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
        use crate::escape::name;
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
}
