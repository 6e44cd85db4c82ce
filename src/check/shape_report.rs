//! What `check` says of the ops whose inputs break what their specification requires, or meet it only under
//! conditions on sizes ([`crate::analysis::ShapeFinding`]): `shape-contradiction` (or `inexact-division`,
//! `type-mismatch`) where no size lets the op run, `conditional-shape` naming the conditions. Over ranges of sizes a
//! condition is decided as a broadcast's is: proven, no finding; failing, an error at its smallest failing sizes
//! (`inexact-division` for a division, else `shape-contradiction`), which `--witness` writes and `--safe-ranges`
//! keeps out; unproven, the warning with the part left open. A contradiction at every size leaves no range safe.

use crate::analysis::{Analysis, ShapeFinding};
use crate::check::range_report::Ranged;
use crate::diagnostic::Code;
use crate::infer::Verdict;
use crate::rules::ranges::Decision;
use crate::rules::{Condition, ConditionKind};

/// One finding of an op's requirements: its code, the finding it comes from, its message (names marked), and the
/// conditions it states (a `conditional-shape` finding's only).
pub struct ShapeReport<'a> {
    pub code: Code,
    pub finding: &'a ShapeFinding,
    pub message: crate::sys::escape::Message,
    pub conditions: Vec<Condition>,
}

/// The findings of the analysis's contradictions, decided over `ranges` when there are some.
pub fn findings<'a>(analysis: &'a Analysis, mut ranges: Option<&mut Ranged>) -> Vec<ShapeReport<'a>> {
    let mut out = Vec::with_capacity(analysis.contradictions.len());
    for finding in &analysis.contradictions {
        let contradiction = &finding.contradiction;
        let plain = |finding: &'a ShapeFinding| ShapeReport {
            code: contradiction.code(),
            finding,
            message: finding.message(),
            conditions: contradiction.conditions().to_vec(),
        };
        let Some(ranges) = ranges.as_deref_mut() else {
            out.push(plain(finding));
            continue;
        };
        let Verdict::Conditional(conditions) = &contradiction.verdict else {
            ranges.violated();
            out.push(plain(finding));
            continue;
        };
        let decision = ranges.decide(conditions);
        let code = match &decision {
            Decision::Holds(_) => continue,
            Decision::Fails { witness, .. } => {
                ranges.failed_at((&finding.graph, &finding.node, &finding.op), witness, &Vec::new());
                let divisions = conditions.iter().all(|c| matches!(c.kind, ConditionKind::Divides { .. }));
                if divisions {
                    Code::InexactDivision
                } else {
                    Code::ShapeContradiction
                }
            }
            Decision::Unproven(_) => Code::ConditionalShape,
        };
        let text = prefix(finding) + &contradiction.message_over_ranges(&finding.inputs, &decision);
        let conditions = if code == Code::ConditionalShape { conditions.clone() } else { Vec::new() };
        out.push(ShapeReport { code, finding, message: text.into(), conditions });
    }
    out
}

/// `in function F (node N): ` for each model-local function the node sits in, outermost first.
fn prefix(finding: &ShapeFinding) -> String {
    use crate::sys::escape::name;
    finding.functions.iter().map(|f| format!("in function {} (node {}): ", name(&f.function), name(&f.node))).collect()
}
