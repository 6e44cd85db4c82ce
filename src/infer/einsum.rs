//! `Einsum` (ONNX: "An einsum of the form term1, term2 -> output-term produces an output tensor using the following
//! equation … where the reduce-sum performs a summation over all the indices occurring in the input terms (term1,
//! term2) that do not occur in the output-term"): one term per operand, naming each of its dims (an ellipsis for
//! the rest), each label one size (onnxruntime broadcasts a label of size 1), every output label an operand's.

use std::collections::BTreeMap;

use super::{At, Contradiction, Ctx, Detail, Malformed, Requirement};
use crate::rules;
use crate::sizes::shape::{Dim, Shape};

/// One operand (or the result) of an Einsum equation: labels before and after an optional ellipsis.
struct Term {
    before: Vec<u8>,
    ellipsis: bool,
    after: Vec<u8>,
}

impl Term {
    fn parse(text: &[u8]) -> Option<Term> {
        let (before, ellipsis, after) = match text.windows(3).position(|w| w == b"...") {
            Some(p) => (&text[..p], true, &text[p + 3..]),
            None => (text, false, &text[..0]),
        };
        let labels = |t: &[u8]| t.iter().all(u8::is_ascii_alphabetic).then(|| t.to_vec());
        Some(Term { before: labels(before)?, ellipsis, after: labels(after)? })
    }

    fn labels(&self) -> impl Iterator<Item = &u8> {
        self.before.iter().chain(&self.after)
    }
}

/// The size a label takes: every occurrence agrees, or is 1 where the others are not.
fn label_dim(ats: &[At]) -> Dim {
    let big: Vec<&Dim> = ats.iter().map(|a| &a.dim).filter(|d| !d.is_one()).collect();
    if big.is_empty() {
        return if ats.is_empty() { Dim::Unknown } else { Dim::Known(1) };
    }
    let known: Vec<u64> = big.iter().filter_map(|d| d.known()).collect();
    if let Some(&k) = known.first() {
        return if known.iter().all(|&x| x == k) { Dim::Known(k) } else { Dim::Unknown };
    }
    if big.iter().all(|d| d.provably_eq(big[0])) {
        big[0].clone()
    } else {
        Dim::Unknown
    }
}

fn malformed(ctx: &Ctx<'_, '_>, m: Malformed) -> Option<Shape> {
    let inputs = (0..ctx.inputs.len()).collect();
    ctx.report(Contradiction::violated(Requirement::EinsumEquation, inputs, Detail::Malformed(m)));
    None
}

/// Two known sizes of one label, neither 1, that differ: the first such pair.
fn label_clash(ats: &[At]) -> Option<(At, At)> {
    let sized: Vec<&At> = ats.iter().filter(|a| a.dim.known().is_some_and(|k| k != 1)).collect();
    let first = sized.first()?;
    sized.iter().find(|a| a.dim != first.dim).map(|b| ((*first).clone(), (*b).clone()))
}

/// Two operands whose ellipses stand for different numbers of dims: ONNX's inference and onnxruntime take every
/// ellipsis for one number of dims (numpy would broadcast them; onnxruntime refuses, or crashes where one stands for
/// none).
fn ellipsis_clash(ellipses: Option<&[(usize, Shape)]>) -> Option<Malformed> {
    let ranks: Vec<(usize, usize)> = ellipses?.iter().map(|(i, s)| (*i, s.rank().unwrap_or(0))).collect();
    let a = *ranks.first()?;
    ranks.iter().find(|c| c.1 != a.1).map(|&b| Malformed::EllipsisDims { a, b })
}

pub(super) fn einsum_shape(ctx: &Ctx<'_, '_>) -> Option<Shape> {
    ctx.require_same_type(&(0..ctx.inputs.len()).collect::<Vec<_>>());
    let equation: Vec<u8> =
        ctx.attrs.string("equation")?.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    let (lhs, rhs) = match equation.windows(2).position(|w| w == b"->") {
        Some(p) => (&equation[..p], Some(&equation[p + 2..])),
        None => (&equation[..], None),
    };
    let terms: Vec<Term> = lhs.split(|&b| b == b',').map(Term::parse).collect::<Option<_>>()?;
    if terms.len() != ctx.inputs.len() {
        return malformed(ctx, Malformed::TermCount { terms: terms.len(), inputs: ctx.inputs.len() });
    }
    let mut labels: BTreeMap<u8, Vec<At>> = BTreeMap::new();
    let mut counts: BTreeMap<u8, usize> = BTreeMap::new();
    // The ellipsis dims of each operand that has one (by position); `None` when some operand's rank is unknown.
    let mut ellipses: Option<Vec<(usize, Shape)>> = Some(Vec::new());
    let mut any_ellipsis = false;
    for (i, term) in terms.iter().enumerate() {
        for &l in term.labels() {
            *counts.entry(l).or_default() += 1;
            labels.entry(l).or_default();
        }
        any_ellipsis |= term.ellipsis;
        let Some(dims) = ctx.dims(i) else {
            if term.ellipsis {
                ellipses = None;
            }
            continue;
        };
        let named = term.before.len() + term.after.len();
        if dims.len() < named || (!term.ellipsis && dims.len() != named) {
            return malformed(ctx, Malformed::LabelCount { input: i, labels: named, rank: dims.len() });
        }
        let covered = if term.ellipsis { dims.len() - named } else { 0 };
        let tail = term.before.len() + covered;
        for (k, &l) in term.before.iter().enumerate() {
            labels.entry(l).or_default().push(At::new(i, k, dims[k].clone()));
        }
        for (k, &l) in term.after.iter().enumerate() {
            labels.entry(l).or_default().push(At::new(i, tail + k, dims[tail + k].clone()));
        }
        if term.ellipsis {
            if let Some(e) = ellipses.as_mut() {
                e.push((i, Shape::ranked(dims[term.before.len()..tail].to_vec())));
            }
        }
    }
    if let Some((label, (a, b))) = labels.iter().find_map(|(&l, ats)| label_clash(ats).map(|c| (l, c))) {
        return malformed(ctx, Malformed::LabelSizes { label: char::from(label), a, b });
    }
    if let Some(m) = ellipsis_clash(ellipses.as_deref()) {
        return malformed(ctx, m);
    }
    let ellipsis_dims = ellipses.map(|shapes| {
        let refs: Vec<&Shape> = shapes.iter().map(|(_, s)| s).collect();
        let rank = shapes.iter().filter_map(|(_, s)| s.rank()).max().unwrap_or(0);
        rules::multidirectional(&refs).output.0.unwrap_or_else(|| vec![Dim::Unknown; rank])
    });
    let output = match rhs {
        Some(rhs) => Term::parse(rhs)?,
        // Implicit output: the ellipsis dims, then the labels used once, in alphabetical (byte) order.
        None => Term {
            before: Vec::new(),
            ellipsis: any_ellipsis,
            after: counts.iter().filter(|(_, &n)| n == 1).map(|(&l, _)| l).collect(),
        },
    };
    // An output label must appear among the operands.
    if let Some(&l) = output.labels().find(|l| !labels.contains_key(l)) {
        return malformed(ctx, Malformed::UnknownLabel(char::from(l)));
    }
    let resolve = |ls: &[u8]| ls.iter().map(|l| labels.get(l).map(|d| label_dim(d))).collect::<Option<Vec<Dim>>>();
    let mut dims = resolve(&output.before)?;
    if output.ellipsis {
        dims.extend(ellipsis_dims?);
    }
    dims.extend(resolve(&output.after)?);
    Some(Shape::ranked(dims))
}
