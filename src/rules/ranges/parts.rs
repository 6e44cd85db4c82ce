//! Conditions on independent symbols decided apart: a site's `All` of conditions that share no symbol with a range
//! (an image's height and width, each through its own strides) is decided part by part, each over its own symbols
//! (32 classes each, not 32 × 32), and the results put together; each part is remembered on its own too (the same
//! condition on the height recurs in many sites). Decided apart or together, the result is the same: the site holds
//! where every part holds, and its smallest witness is the smallest of the parts' (the other symbols at their
//! smallest sizes).

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Decision, Predicate, Proof, Ranges, Sizes, Unproven, UnprovenReason};

/// The parts of a predicate that share no symbol with a range: the children of its `All`s, grouped where they
/// share one (children without any go together).
pub(crate) fn independent(pred: &Predicate, ranges: &Ranges) -> Vec<Predicate> {
    let mut children = Vec::new();
    flatten(pred, &mut children);
    let symbols: Vec<BTreeSet<Arc<str>>> =
        children.iter().map(|c| c.symbols().into_iter().filter(|s| ranges.get(s).is_some()).collect()).collect();
    // Groups by shared symbols: each child joins every group it meets, merging them.
    let mut groups: Vec<(BTreeSet<Arc<str>>, Vec<usize>)> = Vec::new();
    for (i, own) in symbols.iter().enumerate() {
        let (meeting, rest): (Vec<_>, Vec<_>) = groups
            .into_iter()
            .partition(|(g, _)| !own.is_empty() && !g.is_disjoint(own) || own.is_empty() && g.is_empty());
        let mut merged = (own.clone(), vec![i]);
        for (g, members) in meeting {
            merged.0.extend(g);
            merged.1.extend(members);
        }
        groups = rest;
        groups.push(merged);
    }
    groups
        .into_iter()
        .map(|(_, mut members)| {
            members.sort_unstable();
            match members.as_slice() {
                [one] => children[*one].clone(),
                _ => Predicate::All(members.iter().map(|&i| children[i].clone()).collect()),
            }
        })
        .collect()
}

fn flatten(pred: &Predicate, out: &mut Vec<Predicate>) {
    match pred {
        Predicate::All(parts) => parts.iter().for_each(|p| flatten(p, out)),
        other => out.push(other.clone()),
    }
}

/// The decision of the whole from its parts' (`symbols`: the whole's symbols with a range, in order).
pub(crate) fn combine(symbols: &[Arc<str>], ranges: &Ranges, parts: &[Decision]) -> Decision {
    let full = |w: &Sizes| -> Sizes {
        let at = |s: &Arc<str>| w.iter().find(|(n, _)| n == s).map(|(_, v)| *v);
        symbols.iter().map(|s| (s.clone(), at(s).unwrap_or_else(|| ranges.get(s).map_or(0, |r| r.first())))).collect()
    };
    let key = |w: &Sizes| -> (u128, Vec<u64>) {
        let steps = w.iter().map(|(n, v)| ranges.get(n).map_or(0, |r| u128::from((v - r.first()) / r.step()))).sum();
        (steps, w.iter().map(|(_, v)| *v).collect())
    };
    let any_unproven = parts.iter().any(|d| matches!(d, Decision::Unproven(_)));
    let smallest = parts
        .iter()
        .filter_map(|d| match d {
            Decision::Fails { witness, smaller_unproven } => Some((full(witness), *smaller_unproven)),
            _ => None,
        })
        .min_by_key(|(w, _)| key(w));
    if let Some((witness, smaller)) = smallest {
        return Decision::Fails { witness, smaller_unproven: smaller || any_unproven };
    }
    let undecided: Vec<&Unproven> = parts
        .iter()
        .filter_map(|d| match d {
            Decision::Unproven(u) => Some(u),
            _ => None,
        })
        .collect();
    if undecided.is_empty() {
        let enumerated = parts.iter().map(|d| if let Decision::Holds(p) = d { p.enumerated } else { 0 }).sum();
        return Decision::Holds(Proof { enumerated });
    }
    let mut free: Vec<Arc<str>> = Vec::new();
    for u in &undecided {
        if let UnprovenReason::FreeSymbols(names) = &u.reason {
            free.extend(names.iter().cloned());
        }
    }
    free.sort();
    free.dedup();
    let reason = if free.is_empty() { undecided[0].reason.clone() } else { UnprovenReason::FreeSymbols(free) };
    Decision::Unproven(Unproven {
        parts: undecided.iter().flat_map(|u| u.parts.iter().cloned()).take(super::search::MAX_PARTS_SHOWN).collect(),
        sizes: undecided.iter().map(|u| u.sizes).fold(0u128, u128::saturating_add),
        reason,
    })
}
