//! The tables of names the plan of a body ([`super::flow`]) asks of every node input and output: one hash of a
//! name, which it carries to each of them (its pending reads, its fingerprints of the names made, the inputs' and
//! initializers' slots), and tables that compare the names themselves on a hash hit, so that two names are never
//! taken for one.

use std::hash::Hasher;

/// The hash of a name, for every table in this module. FxHash's
/// bytes hash (a folded multiply of the first and last eight bytes, for names up to sixteen), without the end
/// marker `str`'s `Hash` adds, which only serves a hash of several fields: its high bits place a name, its low bits
/// tell names apart.
#[inline]
pub(super) fn hash(name: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(name.as_bytes());
    h.finish()
}

/// Whether two names are the same, compared byte by byte: names are short, and a call of the C library's comparison
/// for a few bytes costs more than the bytes.
#[inline]
pub(super) fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    // The first and last eight (or four) bytes, which overlap in a name shorter than sixteen (or eight).
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("eight bytes"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("four bytes"));
    match a.len() {
        n @ 8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        n @ 4..8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        0..4 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
    }
}

/// Names read before the node that makes them, in a walk from the last node to the first ([`super::flow`]): each
/// with its [`hash`], so that what asks of them hashes no name again.
#[derive(Default)]
pub(super) struct Pending<'m> {
    table: hashbrown::HashTable<(u64, &'m str)>,
}

impl<'m> Pending<'m> {
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Adds `name` (of hash `h`); false when it is there already.
    #[inline]
    pub(super) fn insert(&mut self, h: u64, name: &'m str) -> bool {
        match self.table.entry(h, |&(eh, n)| eh == h && same(n, name), |&(eh, _)| eh) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert((h, name));
                true
            }
        }
    }

    /// Whether `name` (of hash `h`) is here.
    #[inline]
    pub(super) fn contains(&self, h: u64, name: &str) -> bool {
        self.table.find(h, |&(eh, n)| eh == h && same(n, name)).is_some()
    }

    /// Takes `name` (of hash `h`) out; whether it was here.
    #[inline]
    pub(super) fn remove(&mut self, h: u64, name: &str) -> bool {
        self.table.find_entry(h, |&(eh, n)| eh == h && same(n, name)).map(|e| e.remove()).is_ok()
    }

    /// The hashes of the names here, in no order.
    pub(super) fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.table.iter().map(|&(h, _)| h)
    }
}

/// A set of names as 32-bit fingerprints of their hashes, in a table placed by the hash's high bits: 8 bytes a
/// name where a table of the names takes ~50. Two names with one fingerprint at one place count as one: what
/// asks then takes the safe answer (a name defined twice; a name maybe made here).
pub(super) struct Fingerprints {
    table: Vec<u32>,
    shift: u32,
}

impl Fingerprints {
    pub(super) fn with_capacity(n: usize) -> Fingerprints {
        let size = (2 * n).next_power_of_two().max(16);
        Fingerprints { table: vec![0; size], shift: 64 - size.trailing_zeros() }
    }

    /// Adds the name of hash `h`; false when it may be there already.
    #[inline]
    pub(super) fn insert(&mut self, h: u64) -> bool {
        let (fingerprint, mask) = (h as u32 | 1, self.table.len() - 1);
        let mut at = (h >> self.shift) as usize;
        loop {
            match self.table[at] {
                0 => {
                    self.table[at] = fingerprint;
                    return true;
                }
                f if f == fingerprint => return false,
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// Whether the name of hash `h` may be in the set.
    pub(super) fn may_contain(&self, h: u64) -> bool {
        let (fingerprint, mask) = (h as u32 | 1, self.table.len() - 1);
        let mut at = (h >> self.shift) as usize;
        loop {
            match self.table[at] {
                0 => return false,
                f if f == fingerprint => return true,
                _ => at = (at + 1) & mask,
            }
        }
    }
}

/// The slots of a body's inputs and initializers by name, for the plan ([`super::flow`]), which asks it of most node
/// inputs: (fingerprint, slot) pairs placed as [`Fingerprints`] are, each fingerprint hit confirmed by comparing the
/// slot's name, in a probe the caller inlines (a lookup in a `hashbrown` table is a call of ~50 instructions, this
/// ~15).
pub(super) struct Settled<'m> {
    table: Vec<(u32, u32)>,
    shift: u32,
    /// Each slot's name.
    names: Vec<&'m str>,
}

impl<'m> Settled<'m> {
    /// Room for `n` names, of slots below `slots`.
    pub(super) fn with_capacity(n: usize, slots: u32) -> Settled<'m> {
        let size = (2 * n).next_power_of_two().max(16);
        Settled { table: vec![(0, 0); size], shift: 64 - size.trailing_zeros(), names: vec![""; slots as usize] }
    }

    /// Adds `name`, of hash `h`, in slot `s` (each name once).
    pub(super) fn insert(&mut self, h: u64, name: &'m str, s: u32) {
        let (fingerprint, mask) = (h as u32 | 1, self.table.len() - 1);
        let mut at = (h >> self.shift) as usize;
        while self.table[at].0 != 0 {
            at = (at + 1) & mask;
        }
        self.table[at] = (fingerprint, s);
        self.names[s as usize] = name;
    }

    /// The slot of `name`, of hash `h`.
    #[inline]
    pub(super) fn get(&self, h: u64, name: &str) -> Option<u32> {
        let (fingerprint, mask) = (h as u32 | 1, self.table.len() - 1);
        let mut at = (h >> self.shift) as usize;
        loop {
            match self.table[at] {
                (0, _) => return None,
                (f, s) if f == fingerprint && same(self.names[s as usize], name) => return Some(s),
                _ => at = (at + 1) & mask,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_equal_only_byte_for_byte_at_every_length() {
        for n in 0..40 {
            let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert!(same(&a, &a.clone()));
            for k in 0..n {
                let mut b = a.clone().into_bytes();
                b[k] ^= 1;
                assert!(!same(&a, std::str::from_utf8(&b).expect("ascii")), "{a} differs at {k}");
            }
            assert!(!same(&a, &format!("{a}x")));
        }
    }

    #[test]
    fn a_pending_name_is_found_by_its_hash_and_its_bytes() {
        let mut pending = Pending::default();
        assert!(pending.insert(hash("a"), "a"));
        assert!(!pending.insert(hash("a"), "a"), "once");
        // The same hash with another name is another name: a hash hit is confirmed by the bytes.
        assert!(pending.insert(hash("a"), "b"));
        assert!(pending.contains(hash("a"), "b") && !pending.contains(hash("b"), "b"));
        assert!(pending.remove(hash("a"), "a") && !pending.contains(hash("a"), "a"));
        assert_eq!(pending.hashes().collect::<Vec<_>>(), [hash("a")]);
    }

    #[test]
    fn a_settled_name_is_found_by_its_hash_and_its_bytes() {
        let mut settled = Settled::with_capacity(2, 2);
        settled.insert(hash("x"), "x", 0);
        // A second name of the same hash, as a collision would place it.
        settled.insert(hash("x"), "w", 1);
        assert_eq!((settled.get(hash("x"), "x"), settled.get(hash("x"), "w")), (Some(0), Some(1)));
        assert_eq!((settled.get(hash("y"), "y"), settled.get(hash("x"), "y")), (None, None));
    }

    #[test]
    fn a_fingerprint_met_again_is_a_name_maybe_met_before() {
        let mut made = Fingerprints::with_capacity(2);
        assert!(made.insert(hash("a")) && made.insert(hash("b")));
        assert!(!made.insert(hash("a")));
        assert!(made.may_contain(hash("b")) && !made.may_contain(hash("c")));
    }
}
