//! The decisions of one model's sites over its ranges, remembered by predicate (the sites of a model share a few
//! conditions: every layer's `seq ≤ 512`), and the largest box where all of them hold.

use rustc_hash::FxHashMap as HashMap;

use super::safe::{largest_safe, SafeBox};
use super::{decide_by_parts, decide_whole, describe, describe_sizes, Decision, Predicate, Ranges};
use crate::rules::Condition;

/// Decides conditions over fixed ranges, each distinct predicate once.
#[derive(Clone, Debug, Default)]
pub struct Decider {
    ranges: Ranges,
    cache: HashMap<Predicate, Decision>,
    /// The distinct predicates decided, in the order first met.
    seen: Vec<Predicate>,
}

/// The largest box of the ranges where every site holds, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SafeRanges {
    /// Every site holds at every size of this box.
    Safe { safe: SafeBox, left_out: usize },
    /// No size of the ranges is proven safe.
    None { left_out: usize },
}

impl Decider {
    pub fn new(ranges: Ranges) -> Decider {
        Decider { ranges, ..Decider::default() }
    }

    pub fn ranges(&self) -> &Ranges {
        &self.ranges
    }

    /// What a site's conditions come to over the ranges (each independent part decided once per model).
    pub fn decide(&mut self, conditions: &[Condition]) -> Decision {
        let pred = Predicate::of_conditions(conditions);
        let (ranges, cache, seen) = (&self.ranges, &mut self.cache, &mut self.seen);
        decide_by_parts(&pred, ranges, &mut |part| {
            if let Some(known) = cache.get(part) {
                return known.clone();
            }
            let decision = decide_whole(part, ranges);
            seen.push(part.clone());
            cache.insert(part.clone(), decision.clone());
            decision
        })
    }

    /// The largest box where every condition decided so far holds. Conditions no range can decide (on symbols
    /// without a range, or unknown dims) are left out, and counted.
    pub fn safe(&self) -> SafeRanges {
        let (covered, left_out): (Vec<&Predicate>, Vec<&Predicate>) =
            self.seen.iter().partition(|p| decidable(p, &self.ranges));
        let left_out = left_out.len();
        let all = Predicate::All(covered.into_iter().cloned().collect());
        // Symbols that no condition ties together are searched apart: the largest box is the product of the
        // largest boxes of each group.
        let mut safe = SafeBox { ranges: self.ranges.iter().map(|(n, r)| (n.clone(), r)).collect(), complete: true };
        for group in super::parts::independent(&all, &self.ranges) {
            let Some(found) = largest_safe(&group, &self.ranges) else { return SafeRanges::None { left_out } };
            let named = group.symbols();
            for (name, range) in found.ranges.into_iter().filter(|(n, _)| named.contains(n)) {
                if let Some(slot) = safe.ranges.iter_mut().find(|(n, _)| *n == name) {
                    slot.1 = range;
                }
            }
            safe.complete &= found.complete;
        }
        SafeRanges::Safe { safe, left_out }
    }
}

/// Whether ranges can decide the predicate: it names only symbols with a range and no unknown dim.
fn decidable(pred: &Predicate, ranges: &Ranges) -> bool {
    fn knowable(p: &Predicate) -> bool {
        match p {
            Predicate::Unknowable => false,
            Predicate::Any(ps) | Predicate::All(ps) => ps.iter().all(knowable),
            _ => true,
        }
    }
    knowable(pred) && pred.symbols().iter().all(|s| ranges.get(s).is_some())
}

/// The axis of the first condition that fails at `witness` (a decision's smallest failing sizes): where a site found
/// failing over ranges is at fault.
pub fn failing_axis(conditions: &[Condition], witness: &super::Sizes) -> Option<usize> {
    let mut at = Ranges::default();
    for (name, size) in witness {
        at.insert(name, super::SizeRange::point(*size));
    }
    conditions
        .iter()
        .find(|c| matches!(decide_whole(&Predicate::of_condition(&c.kind), &at), Decision::Fails { .. }))
        .map(|c| c.axis)
}

impl Decision {
    /// The decision in words, for a site's message: `fails at seq = 65`, `holds for every size of the ranges`,
    /// `unproven for seq ∈ 65..512 (it depends on M, which has no range)`.
    pub fn text(&self) -> String {
        match self {
            Decision::Holds(proof) if proof.enumerated == 0 => "holds at every size of the ranges".to_string(),
            Decision::Holds(proof) => {
                format!("holds at every size of the ranges ({} sizes checked one by one)", proof.enumerated)
            }
            Decision::Fails { witness, smaller_unproven: false } if witness.is_empty() => {
                "fails at every size of the ranges".to_string()
            }
            Decision::Fails { witness, smaller_unproven: false } => format!("fails at {}", describe_sizes(witness)),
            Decision::Fails { witness, smaller_unproven: true } => {
                format!("fails at {} (some smaller sizes are undecided)", describe_sizes(witness))
            }
            Decision::Unproven(u) => {
                let parts: Vec<String> =
                    u.parts.iter().map(|p| describe(p.iter().map(|(n, r)| (n.as_ref(), *r)))).collect();
                let more = if u.parts.len() < super::search::MAX_PARTS_SHOWN { "" } else { " and more" };
                let sizes = if u.sizes == 1 { "1 size".to_string() } else { format!("{} sizes", u.sizes) };
                if parts.iter().all(String::is_empty) {
                    format!("unproven ({})", u.reason)
                } else {
                    format!("unproven for {}{more} ({sizes}: {})", parts.join("; "), u.reason)
                }
            }
        }
    }
}
