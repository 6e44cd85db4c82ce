//! Edits keyed by the position of what they change (a node of a graph), kept in one list in the order of the
//! positions.
//!
//! A rewrite plans a graph node by node in the order of their positions (`expand` and `fold` both do), so adding an
//! edit is pushing it; and the splice reads them in the same order as it walks the graph's nodes, so it finds each
//! one by looking at the next entry only ([`Cursor`]). A tree map paid a search on every insert and on every node
//! the splice walked, and a node of its own for every few entries: for 100,000 rewritten nodes, about a tenth of
//! `expand`'s instructions went to the map. Entries added out of order are placed by a binary search (a shift of
//! the entries after them): right, but meant for the few.

/// Values by position, in increasing order of position, at most one per position.
#[derive(Clone, Debug, PartialEq)]
pub struct ByPosition<T> {
    entries: Vec<(usize, T)>,
}

impl<T> Default for ByPosition<T> {
    fn default() -> Self {
        ByPosition { entries: Vec::new() }
    }
}

impl<T> ByPosition<T> {
    /// Where the entry at `position` is (`Ok`) or would go (`Err`): the end, for the position after the last,
    /// without a search.
    #[inline]
    fn find(&self, position: usize) -> Result<usize, usize> {
        match self.entries.last() {
            None => Err(0),
            Some((last, _)) if *last < position => Err(self.entries.len()),
            Some(_) => self.entries.binary_search_by_key(&position, |(p, _)| *p),
        }
    }

    /// Sets the value at `position`; returns the value it replaces.
    #[inline]
    pub fn insert(&mut self, position: usize, value: T) -> Option<T> {
        match self.find(position) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (position, value));
                None
            }
        }
    }

    /// The value at `position`, made by `make` if there is none.
    pub fn get_or_insert_with(&mut self, position: usize, make: impl FnOnce() -> T) -> &mut T {
        let i = match self.find(position) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (position, make()));
                i
            }
        };
        &mut self.entries[i].1
    }

    pub fn get(&self, position: usize) -> Option<&T> {
        self.find(position).ok().map(|i| &self.entries[i].1)
    }

    pub fn contains(&self, position: usize) -> bool {
        self.find(position).is_ok()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Room for `additional` more entries at once.
    pub fn reserve(&mut self, additional: usize) {
        self.entries.reserve(additional);
    }

    /// The entries in order of position.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.entries.iter().map(|(p, v)| (*p, v))
    }

    /// A reader of the entries at increasing positions.
    pub fn cursor(&self) -> Cursor<'_, T> {
        Cursor { rest: &self.entries }
    }
}

/// Reads a [`ByPosition`] at positions asked in increasing order, each in constant time (amortized).
pub struct Cursor<'a, T> {
    /// The entries at the positions not yet passed.
    rest: &'a [(usize, T)],
}

impl<'a, T> Cursor<'a, T> {
    /// The value at `position`, which is at least every position asked before.
    pub fn at(&mut self, position: usize) -> Option<&'a T> {
        while let Some(((p, value), after)) = self.rest.split_first() {
            if *p > position {
                return None;
            }
            if *p == position {
                return Some(value);
            }
            self.rest = after;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_added_in_any_order_are_kept_in_the_order_of_their_positions() {
        let mut by = ByPosition::default();
        for p in [5, 1, 9, 3, 7, 1] {
            by.insert(p, p * 10);
        }
        assert_eq!(by.insert(3, 33), Some(30));
        assert_eq!(by.iter().collect::<Vec<_>>(), [(1, &10), (3, &33), (5, &50), (7, &70), (9, &90)]);
        assert_eq!((by.get(7), by.get(4), by.contains(9), by.len()), (Some(&70), None, true, 5));
        by.get_or_insert_with(4, || 0).clone_from(&44);
        *by.get_or_insert_with(5, || 0) += 1;
        assert_eq!(by.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [10, 33, 44, 51, 70, 90]);
    }

    #[test]
    fn a_cursor_finds_each_entry_asked_in_order_and_nothing_between() {
        let mut by = ByPosition::default();
        for p in [2, 3, 8] {
            by.insert(p, p);
        }
        let mut cursor = by.cursor();
        let found: Vec<Option<usize>> = (0..10).map(|p| cursor.at(p).copied()).collect();
        assert_eq!(found, [None, None, Some(2), Some(3), None, None, None, None, Some(8), None]);
        // Positions skipped over are passed all the same.
        let mut cursor = by.cursor();
        assert_eq!((cursor.at(5), cursor.at(8)), (None, Some(&8)));
    }
}
