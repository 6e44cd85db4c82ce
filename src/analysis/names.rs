//! The tables of names the plan of a body ([`super::flow`]) asks of every node input and output: one hash of a
//! name, which it carries to each of them (its pending reads, its list of the names made, the inputs' and
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
/// with its [`hash`], so that what asks of them hashes no name again, whether some reader reads its value range, and
/// the number its readers and its maker are given (by the caller, once).
#[derive(Default)]
pub(super) struct Pending<'m> {
    table: hashbrown::HashTable<(u64, &'m str, bool, u32)>,
}

impl<'m> Pending<'m> {
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Adds `name` (of hash `h`), its range read if `ranged`, numbered `number()`; or, when it is there already,
    /// notes its range read if `ranged`. Whether it was added, and its number.
    #[inline]
    pub(super) fn insert(&mut self, h: u64, name: &'m str, ranged: bool, number: impl FnOnce() -> u32) -> (bool, u32) {
        match self.table.entry(h, |&(eh, n, _, _)| eh == h && same(n, name), |&(eh, _, _, _)| eh) {
            hashbrown::hash_table::Entry::Occupied(mut e) => {
                e.get_mut().2 |= ranged;
                (false, e.get().3)
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                let n = number();
                e.insert((h, name, ranged, n));
                (true, n)
            }
        }
    }

    /// Whether `name` (of hash `h`) is here.
    #[inline]
    pub(super) fn contains(&self, h: u64, name: &str) -> bool {
        self.table.find(h, |&(eh, n, _, _)| eh == h && same(n, name)).is_some()
    }

    /// Takes `name` (of hash `h`) out: whether some reader reads its range, and its number, if it was here.
    #[inline]
    pub(super) fn remove(&mut self, h: u64, name: &str) -> Option<(bool, u32)> {
        let found = self.table.find_entry(h, |&(eh, n, _, _)| eh == h && same(n, name)).ok();
        found.map(|e| e.remove().0).map(|(_, _, ranged, n)| (ranged, n))
    }

    /// The hashes of the names here, in no order.
    pub(super) fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.table.iter().map(|&(h, _, _, _)| h)
    }
}

/// The hashes of the names a body defines, told apart in one go once all are met ([`Made::repeats`]). A table of
/// them probed as each is met is as long as the graph and probed at random: on a 400,000-node model its probes cost
/// the plan ~28 ns a node in paired walls (11 of 98 ms), and asking for their memory ahead did not help. Here the
/// hashes are written in order, 8 bytes a name (a table probed at random took 8 to 16); then sorted into buckets
/// in place, and each bucket's hashes told apart in a table small enough to stay in the caches.
pub(super) struct Made {
    /// The hashes met, `len` of them, then room for that table: a block of its own (32 KiB) was one more 2 MiB huge
    /// page of the allocator's arena to fault in, which raised check's peak RSS at 25,000 nodes by 2.1 MiB.
    hashes: Vec<u64>,
    len: usize,
    /// How many hashes each bucket holds: by their top `64 - shift` bits.
    counts: Vec<u32>,
    /// `64 - shift` is how many top bits of a hash are its bucket's (1 to 54).
    shift: u32,
}

/// Buckets hold 2^BUCKET_BITS to 2^(BUCKET_BITS + 1) hashes on average: a table of twice the largest (rounded up to a
/// power of two), of 8 bytes a place, takes 32 to 64 KiB, within the first- or second-level cache.
const BUCKET_BITS: u32 = 10;

impl Made {
    /// Room for `n` hashes, and the table of their largest bucket.
    pub(super) fn with_capacity(n: usize) -> Made {
        // Two buckets at least, so that a bucket is one shift of a hash.
        let bits = (usize::BITS - n.leading_zeros()).saturating_sub(BUCKET_BITS + 1).max(1);
        // Room for a bucket four standard deviations above the mean (a larger one gets a table of its own).
        let mean = n >> bits;
        let table = (2 * (mean + 4 * mean.isqrt() + 8)).next_power_of_two();
        Made { hashes: vec![0; n + table], len: 0, counts: vec![0; 1 << bits], shift: 64 - bits }
    }

    /// The bucket of hash `h`: its top `64 - shift` bits.
    #[inline(always)]
    fn bucket(&self, h: u64) -> usize {
        (h >> self.shift) as usize
    }

    /// Adds the hash `h` (of at most the `n` [`Made::with_capacity`] made room for).
    #[inline(always)]
    pub(super) fn push(&mut self, h: u64) {
        self.hashes[self.len] = h;
        self.len += 1;
        let b = self.bucket(h);
        self.counts[b] += 1;
    }

    /// Whether some hash here is met twice (a name made twice, or two names of one hash: what asks then takes the
    /// safe answer), or is one of `also`'s. Sorts the hashes into their buckets, and leaves the table as it is.
    pub(super) fn repeats(mut self, also: impl Iterator<Item = u64>) -> bool {
        let also: rustc_hash::FxHashSet<u64> = also.collect();
        if !also.is_empty() && self.hashes[..self.len].iter().any(|h| also.contains(h)) {
            return true;
        }
        let ends = self.sort_into_buckets();
        let largest = self.counts.iter().max().copied().unwrap_or(0) as usize;
        let size = (2 * largest).next_power_of_two().max(16);
        // The table in the room after the hashes (zeros, as `with_capacity` made it), or of its own for a larger
        // bucket.
        let mut own = Vec::new();
        let (hashes, table) = match self.len + size <= self.hashes.len() {
            true => {
                let (hashes, room) = self.hashes.split_at_mut(self.len);
                (hashes, &mut room[..size])
            }
            false => {
                own.resize(size, 0);
                (self.hashes.as_mut_slice(), own.as_mut_slice())
            }
        };
        let mask = table.len() - 1;
        let mut from = 0;
        for end in ends {
            // 0 marks a place never taken: a hash of 0 is taken for 1 (two hashes then met as one, which is safe).
            // A place taken in an earlier bucket holds a hash of other top bits, and counts as free: the table is
            // never cleared.
            for h in hashes[from..end].iter().map(|&h| h | 1) {
                // Placed by bits below the bucket's, which are the same for every hash of a bucket.
                let mut p = (h >> 16) as usize & mask;
                loop {
                    let x = table[p];
                    if x == h {
                        return true;
                    }
                    if x == 0 || (x ^ h) >> self.shift != 0 {
                        table[p] = h;
                        break;
                    }
                    p = (p + 1) & mask;
                }
            }
            from = end;
        }
        false
    }

    /// Sorts the hashes into their buckets, in place (each carried to the next free place of its bucket, and the one
    /// there carried on in turn); gives where each bucket ends.
    fn sort_into_buckets(&mut self) -> Vec<usize> {
        let mut ends = Vec::with_capacity(self.counts.len());
        ends.extend(self.counts.iter().scan(0, |end, &c| {
            *end += c as usize;
            Some(*end)
        }));
        // The next place of each bucket not yet holding one of its hashes.
        let mut next: Vec<usize> = ends.iter().zip(&self.counts).map(|(&end, &c)| end - c as usize).collect();
        for b in 0..ends.len() {
            while next[b] < ends[b] {
                // The hash at bucket b's next place, carried to its own bucket's next place, and the one found there
                // carried on, until one of bucket b's comes back for this place.
                let mut h = self.hashes[next[b]];
                let mut t = self.bucket(h);
                while t != b {
                    let at = next[t];
                    next[t] += 1;
                    h = std::mem::replace(&mut self.hashes[at], h);
                    t = self.bucket(h);
                }
                self.hashes[next[b]] = h;
                next[b] += 1;
            }
        }
        ends
    }
}

/// The slots of a body's inputs and initializers by name, for the plan ([`super::flow`]), which asks it of most node
/// inputs: (fingerprint, slot) pairs, the fingerprint a hash's low 32 bits, placed by its high bits in a table at most
/// half full, each fingerprint hit confirmed by comparing the slot's name, in a probe the caller inlines (a lookup in a `hashbrown` table is a call of ~50 instructions, this
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
    fn a_pending_name_is_found_by_its_hash_and_its_bytes_and_keeps_its_number() {
        let mut pending = Pending::default();
        assert_eq!(pending.insert(hash("a"), "a", false, || 7), (true, 7));
        assert_eq!(pending.insert(hash("a"), "a", false, || 8), (false, 7), "once, with its first number");
        // The same hash with another name is another name: a hash hit is confirmed by the bytes.
        assert_eq!(pending.insert(hash("a"), "b", false, || 9), (true, 9));
        assert!(pending.contains(hash("a"), "b") && !pending.contains(hash("b"), "b"));
        assert_eq!(pending.remove(hash("a"), "a"), Some((false, 7)));
        assert!(!pending.contains(hash("a"), "a"));
        assert_eq!(pending.hashes().collect::<Vec<_>>(), [hash("a")]);
        assert_eq!(pending.remove(hash("a"), "a"), None);
    }

    #[test]
    fn a_pending_name_is_ranged_when_any_of_its_readers_reads_its_range() {
        let mut pending = Pending::default();
        pending.insert(hash("a"), "a", false, || 0);
        pending.insert(hash("a"), "a", true, || 1);
        pending.insert(hash("a"), "a", false, || 2);
        pending.insert(hash("b"), "b", false, || 3);
        assert_eq!(
            (pending.remove(hash("a"), "a"), pending.remove(hash("b"), "b")),
            (Some((true, 0)), Some((false, 3)))
        );
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

    /// Whether a [`Made`] with room for `room` hashes, given `made`, finds a repeat among them and `also`.
    fn repeats(room: usize, made: &[u64], also: &[u64]) -> bool {
        let mut m = Made::with_capacity(room);
        made.iter().for_each(|&h| m.push(h));
        m.repeats(also.iter().copied())
    }

    #[test]
    fn a_hash_made_twice_is_found_among_many_and_only_then() {
        // Enough hashes for many buckets, and none.
        for n in [0, 1, 3, 1000, 5000] {
            let mut names: Vec<u64> = (0..n).map(|i| hash(&format!("v_{i}"))).collect();
            assert!(!repeats(n + 1, &names, &[]), "{n} distinct names");
            assert_eq!(repeats(n + 1, &names, &[hash("v_0")]), n > 0, "{n} names, one asked of");
            assert!(!repeats(n + 1, &names, &[hash("w")]), "{n} names, another asked of");
            if n > 0 {
                names.push(hash(&format!("v_{}", n / 2)));
                assert!(repeats(n + 1, &names, &[]), "{n} names, one of them twice");
            }
        }
        // One bucket, one place: only the whole hash tells them apart.
        let alike: Vec<u64> = (0..32u64).map(|i| i << 1).collect();
        assert!(!repeats(64, &alike, &[]));
        assert!(repeats(64, &[alike.as_slice(), &[7 << 1]].concat(), &[]));
    }

    #[test]
    fn a_bucket_past_the_room_for_its_table_gets_a_table_of_its_own() {
        // 4,096 hashes in the first of four buckets, and one in the last: the first is four times its share.
        let crowded: Vec<u64> = (0..(1u64 << 12)).map(|i| i << 1).chain([u64::MAX]).collect();
        assert!(!repeats(crowded.len(), &crowded, &[]));
        for twice in [0, 4095 << 1, u64::MAX] {
            assert!(repeats(crowded.len(), &[crowded.as_slice(), &[twice]].concat(), &[]), "{twice:x} made twice");
        }
        // The same hashes in room for four times as many: the table in the room after them.
        assert!(!repeats(crowded.len() * 4, &crowded, &[]));
        assert!(repeats(crowded.len() * 4, &[crowded.as_slice(), &[17 << 1]].concat(), &[]));
    }
}
