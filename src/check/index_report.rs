//! What `check` says of the Gathers whose computed indices stay within their table only at some sizes
//! ([`crate::analysis::IndexBound`]): `index-bound`, a warning naming the condition (`holds only if seq ≤ 64`), an
//! error where no size meets it. Over ranges of sizes the condition is decided as a broadcast's is: proven, no
//! finding; failing, an error with its smallest failing sizes, which `--witness` writes with the data that drives
//! the indices past the table (`input_ids` filled with 2); unproven, the warning with the part left open. The
//! decisions count in `--safe-ranges` like the broadcasts'.

use crate::analysis::{Analysis, BoundVerdict, IndexBound};
use crate::check::range_report::Ranged;
use crate::diagnostic::Severity;
use crate::rules::ranges::Decision;

/// The `index-bound` findings of the analysis's index bounds (each with its default severity, which the rule
/// selection may change, and its message), decided over `ranges` when there are some.
pub fn findings<'a>(
    analysis: &'a Analysis,
    mut ranges: Option<&mut Ranged>,
) -> Vec<(Severity, &'a IndexBound, String)> {
    let mut out = Vec::new();
    for bound in &analysis.index_bounds {
        let (severity, message) = match (&bound.verdict, ranges.as_deref_mut()) {
            (BoundVerdict::Violated, ranges) => {
                if let Some(ranges) = ranges {
                    ranges.violated();
                }
                (Severity::Error, format!("out of range at every size: {}", reads(bound)))
            }
            (BoundVerdict::Conditional(conditions), None) => {
                (Severity::Warning, format!("holds only if {}: {}", texts(conditions), reads(bound)))
            }
            (BoundVerdict::Conditional(conditions), Some(ranges)) => match ranges.decide(conditions) {
                Decision::Holds(_) => continue,
                d @ Decision::Fails { .. } => {
                    if let Decision::Fails { witness, .. } = &d {
                        ranges.failed_at((&bound.graph, &bound.node, &bound.op), witness, &bound.fills);
                    }
                    (Severity::Error, format!("{} (it needs {}): {}", d.text(), texts(conditions), reads(bound)))
                }
                d @ Decision::Unproven(_) => {
                    let text =
                        format!("holds only if {}; over the ranges, {}: {}", texts(conditions), d.text(), reads(bound));
                    (Severity::Warning, text)
                }
            },
        };
        let prefix: String = bound
            .functions
            .iter()
            .map(|f| format!("in function {} (node {}): ", name(&f.function), name(&f.node)))
            .collect();
        out.push((severity, bound, prefix + &message));
    }
    out
}

use crate::sys::escape::name;

fn texts(conditions: &[crate::rules::Condition]) -> String {
    let mut texts: Vec<String> = Vec::new();
    for text in conditions.iter().map(ToString::to_string) {
        if !texts.contains(&text) {
            texts.push(text);
        }
    }
    texts.join(" and ")
}

/// `indices ids [1, seq] reach seq + 1 (input_ids filled with 2) on axis 0 of table [66, 8] (66 entries)`.
fn reads(bound: &IndexBound) -> String {
    let reaches: Vec<String> = bound.reaches.iter().map(ToString::to_string).collect();
    let fills: Vec<String> = bound.fills.iter().map(|(n, v)| format!("'{}' filled with {v}", name(n))).collect();
    let data = if fills.is_empty() { String::new() } else { format!(" (with {})", fills.join(", ")) };
    format!(
        "indices {} {} reach {}{data} on axis {} of {} {} ({} entries)",
        name(&bound.indices.name),
        bound.indices.shape,
        reaches.join(" and "),
        bound.axis,
        name(&bound.data.name),
        bound.data.shape,
        bound.size
    )
}
