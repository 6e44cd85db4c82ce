//! The terms of a polynomial: non-zero coefficients by monomial, sorted by monomial, each monomial once. This is
//! the order, equality, ordering and hash a `BTreeMap<Monomial, i64>` gives, kept in one vector because almost
//! every size has one to three terms: a map's node for them cost more to build, clone and drop than all the
//! arithmetic done on them (a third of check's instructions on a TorchScript export went to it). One term is kept
//! inline: a constant or a lone symbol, most sizes, is then made and dropped without an allocation. A `SmallVec`
//! orders, compares and hashes as the slice it holds, as the `Vec` did.

use std::cmp::Ordering;

use smallvec::SmallVec;

use super::Monomial;

/// The terms' storage: one term inline.
type List = SmallVec<[(Monomial, i64); 1]>;

#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub(super) struct Terms(List);

impl Clone for Terms {
    /// The one term of most sizes pushed as it is: `SmallVec`'s own clone collects through an iterator.
    fn clone(&self) -> Terms {
        match self.0.as_slice() {
            [one] => {
                let mut terms = List::new();
                terms.push(one.clone());
                Terms(terms)
            }
            many => Terms(many.iter().cloned().collect()),
        }
    }
}

impl Terms {
    /// The one term `c * m` (none for `c = 0`).
    pub(super) fn single(m: Monomial, c: i64) -> Terms {
        let mut terms = List::new();
        if c != 0 {
            terms.push((m, c));
        }
        Terms(terms)
    }

    /// Terms given in increasing order of their monomials, each once, none with coefficient 0.
    pub(super) fn from_sorted(terms: Vec<(Monomial, i64)>) -> Terms {
        debug_assert!(terms.windows(2).all(|w| w[0].0 < w[1].0) && terms.iter().all(|t| t.1 != 0));
        Terms(List::from_vec(terms))
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The terms in increasing order of their monomials.
    pub(super) fn iter(&self) -> impl DoubleEndedIterator<Item = (&Monomial, i64)> + '_ {
        self.0.iter().map(|(m, c)| (m, *c))
    }

    pub(super) fn as_slice(&self) -> &[(Monomial, i64)] {
        &self.0
    }

    pub(super) fn monomials(&self) -> impl Iterator<Item = &Monomial> + '_ {
        self.0.iter().map(|(m, _)| m)
    }

    pub(super) fn coefficients(&self) -> impl Iterator<Item = i64> + '_ {
        self.0.iter().map(|(_, c)| *c)
    }

    /// The coefficient of `m`, when it is a term.
    pub(super) fn get(&self, m: &[super::Atom]) -> Option<i64> {
        // The constant term, when there is one, comes first: the empty monomial is the least.
        if m.is_empty() {
            return self.0.first().filter(|(k, _)| k.is_empty()).map(|t| t.1);
        }
        self.0.binary_search_by(|(k, _)| k.as_slice().cmp(m)).ok().map(|i| self.0[i].1)
    }

    /// The terms without the one of monomial `m`.
    pub(super) fn remove(&mut self, m: &[super::Atom]) {
        if let Ok(i) = self.0.binary_search_by(|(k, _)| k.as_slice().cmp(m)) {
            self.0.remove(i);
        }
    }

    /// Every coefficient replaced by `f` of it, which must not make one 0.
    pub(super) fn map_coefficients(&self, f: impl Fn(i64) -> i64) -> Terms {
        let terms: List = self.0.iter().map(|(m, c)| (m.clone(), f(*c))).collect();
        debug_assert!(terms.iter().all(|t| t.1 != 0));
        Terms(terms)
    }

    /// `self + sign * other`; `None` on overflow.
    pub(super) fn combine(&self, other: &Terms, sign: i64) -> Option<Terms> {
        let mut out = List::with_capacity(self.0.len() + other.0.len());
        self.merge(other, sign, |m, c| out.push((m.clone(), c)))?;
        Some(Terms(out))
    }

    /// The terms of `self + sign * other`, in order, given to `out`; `None` on overflow.
    pub(super) fn merge<'a>(
        &'a self,
        other: &'a Terms,
        sign: i64,
        mut out: impl FnMut(&'a Monomial, i64),
    ) -> Option<()> {
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        loop {
            let order = match (a.peek(), b.peek()) {
                (None, None) => return Some(()),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(x), Some(y)) => x.0.cmp(&y.0),
            };
            match order {
                Ordering::Less => {
                    let (m, c) = a.next()?;
                    out(m, *c);
                }
                Ordering::Greater => {
                    let (m, c) = b.next()?;
                    out(m, c.checked_mul(sign)?);
                }
                Ordering::Equal => {
                    let ((m, x), (_, y)) = (a.next()?, b.next()?);
                    let sum = x.checked_add(y.checked_mul(sign)?)?;
                    if sum != 0 {
                        out(m, sum);
                    }
                }
            }
        }
    }

    /// The product; `None` on overflow. The products of one monomial are summed in the order a loop over `self`,
    /// then over `other`, meets them (the sort is stable), so an overflow of a partial sum is met as it always was.
    pub(super) fn product(&self, other: &Terms) -> Option<Terms> {
        let mut all = List::with_capacity(self.0.len() * other.0.len());
        for (ma, ca) in &self.0 {
            for (mb, cb) in &other.0 {
                let mut m: Monomial = ma.iter().chain(mb).cloned().collect();
                if !ma.is_empty() && !mb.is_empty() {
                    m.sort();
                }
                all.push((m, ca.checked_mul(*cb)?));
            }
        }
        // Times a constant, the order is the other factor's and the monomials stay distinct: nothing to sort or
        // merge. (Times any other single term they stay distinct but not in order: `B` after `1`, `A*B` before `B`.)
        let constant = |t: &Terms| matches!(t.0.as_slice(), [(m, _)] if m.is_empty());
        if !constant(self) && !constant(other) {
            all.sort_by(|x, y| x.0.cmp(&y.0));
            let mut merged = List::with_capacity(all.len());
            for (m, c) in all {
                match merged.last_mut() {
                    Some(last) if last.0 == m => last.1 = last.1.checked_add(c)?,
                    _ => merged.push((m, c)),
                }
            }
            merged.retain(|t| t.1 != 0);
            all = merged;
        }
        Some(Terms(all))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::hash_map::DefaultHasher;
    use std::collections::BTreeMap;
    use std::hash::{Hash, Hasher};
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::super::{Atom, Monomial, Poly};
    use super::Terms;

    type Map = BTreeMap<Monomial, i64>;

    /// `a + sign * b` as the map form computed it.
    fn map_combine(a: &Map, b: &Map, sign: i64) -> Option<Map> {
        let mut terms = a.clone();
        for (m, c) in b {
            let entry = terms.entry(m.clone()).or_insert(0);
            *entry = entry.checked_add(c.checked_mul(sign)?)?;
            if *entry == 0 {
                terms.remove(m);
            }
        }
        Some(terms)
    }

    /// `a * b` as the map form computed it.
    fn map_product(a: &Map, b: &Map) -> Option<Map> {
        let mut terms = Map::new();
        for (ma, ca) in a {
            for (mb, cb) in b {
                let mut m: Monomial = ma.iter().chain(mb).cloned().collect();
                m.sort();
                let entry = terms.entry(m).or_insert(0);
                *entry = entry.checked_add(ca.checked_mul(*cb)?)?;
            }
        }
        terms.retain(|_, c| *c != 0);
        Some(terms)
    }

    fn terms_of(map: &Map) -> Terms {
        Terms::from_sorted(map.clone().into_iter().collect())
    }

    fn hash_of(v: &impl Hash) -> u64 {
        let mut h = DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    fn atom() -> impl Strategy<Value = Atom> {
        prop_oneof![
            4 => "[a-d]".prop_map(|s| Atom::Sym(Arc::from(s))),
            1 => (2i64..4).prop_map(|k| Atom::Floor(Arc::new(Poly::atom("h")), Arc::new(Poly::constant(k)))),
        ]
    }

    /// Small coefficients, which cancel, and large ones, whose sums and products overflow.
    fn coefficient() -> impl Strategy<Value = i64> {
        prop_oneof![
            4 => (-3i64..=3).prop_filter("non-zero", |c| *c != 0),
            1 => prop::sample::select(vec![i64::MAX, i64::MIN, i64::MAX / 2 + 1, -(1i64 << 62), 3037000500]),
        ]
    }

    fn map() -> impl Strategy<Value = Map> {
        let monomial = prop::collection::vec(atom(), 0..3).prop_map(|mut m| {
            m.sort();
            m
        });
        prop::collection::btree_map(monomial, coefficient(), 0..5)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn terms_compute_compare_and_hash_as_the_map_they_replaced(a in map(), b in map()) {
            let (ta, tb) = (terms_of(&a), terms_of(&b));
            for sign in [1, -1] {
                prop_assert_eq!(ta.combine(&tb, sign), map_combine(&a, &b, sign).map(|m| terms_of(&m)));
            }
            prop_assert_eq!(ta.product(&tb), map_product(&a, &b).map(|m| terms_of(&m)));
            prop_assert_eq!(ta.cmp(&tb), a.cmp(&b));
            prop_assert_eq!(ta == tb, a == b);
            prop_assert_eq!(hash_of(&ta), hash_of(&a));
            for m in a.keys().chain(b.keys()).chain([&Vec::new()]) {
                prop_assert_eq!(ta.get(m), a.get(m).copied());
                let mut without = ta.clone();
                without.remove(m);
                let mut map_without = a.clone();
                map_without.remove(m);
                prop_assert_eq!(without, terms_of(&map_without));
            }
            let order: Vec<(&Monomial, i64)> = ta.iter().collect();
            prop_assert_eq!(order, a.iter().map(|(m, c)| (m, *c)).collect::<Vec<_>>());
        }
    }
}
