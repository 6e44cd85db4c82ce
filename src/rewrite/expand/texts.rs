//! Texts kept one after another in one buffer and found again by their hash, each with a value that may carry a
//! tag: the names `names` makes (no value, tag 0), and the values `hot` expands (the `Expand`'s name, tagged with
//! its target's number).
//!
//! One buffer rather than a `String` each, and a table entry of a span (16 bytes) and the value rather than an
//! owned key: a plan of 100,000 sites makes 20,000 names and 10,000 `Expand`s, and asks for them 100,000 times by
//! borrowed text. A span holds where the text starts and ends, both as long as the buffer's own length: any text
//! fits, whatever its length, with no conversion to fail.

use std::hash::{BuildHasher, Hasher};

/// Texts held one after another in one buffer, each with a value, found by the text and the value's tag.
pub(super) struct Texts<T> {
    text: String,
    table: hashbrown::HashTable<Entry<T>>,
}

impl<T> Default for Texts<T> {
    fn default() -> Self {
        Texts { text: String::new(), table: hashbrown::HashTable::new() }
    }
}

struct Entry<T> {
    start: usize,
    end: usize,
    value: T,
}

/// What a text is held with, and the number that tells apart the same text held twice (`hot` holds a value once
/// per target).
pub(super) trait Tagged {
    fn tag(&self) -> u32;
}

/// A text held alone, once.
impl Tagged for () {
    fn tag(&self) -> u32 {
        0
    }
}

impl<T> Entry<T> {
    fn text<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.end]
    }
}

/// The hash of `text` with `tag`, by which [`Texts`] holds and finds it: hashed as it is, not put together with
/// its tag into a key first.
pub(super) fn hash(text: &str, tag: u32) -> u64 {
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(text.as_bytes());
    h.write_u32(tag);
    h.finish()
}

impl<T: Tagged> Texts<T> {
    /// The value held for `text` with tag `tag`, of hash `hash` ([`hash`]).
    pub fn get(&self, hash: u64, text: &str, tag: u32) -> Option<&T> {
        // The tag first: comparing it costs less than comparing the text.
        let found = self.table.find(hash, |e| e.value.tag() == tag && e.text(&self.text) == text);
        found.map(|e| &e.value)
    }

    /// Holds `text` with `value`, of hash `hash` ([`hash`] of the text and the value's tag), which it is not held
    /// with yet; gives back the text as held.
    pub fn insert(&mut self, hash: u64, text: &str, value: T) -> &str {
        let start = self.text.len();
        self.text.push_str(text);
        let entry = Entry { start, end: self.text.len(), value };
        let held = &self.text;
        self.table.insert_unique(hash, entry, |e| self::hash(e.text(held), e.value.tag()));
        &self.text[start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value tagged with its number.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Numbered(u32, char);

    impl Tagged for Numbered {
        fn tag(&self) -> u32 {
            self.0
        }
    }

    #[test]
    fn a_text_is_found_with_its_tag_and_by_no_other_text_or_tag() {
        let mut texts = Texts::default();
        for (text, tag, value) in [("ab", 1, 'a'), ("a", 1, 'b'), ("ab", 2, 'c'), ("", 0, 'd')] {
            assert_eq!(texts.insert(hash(text, tag), text, Numbered(tag, value)), text);
        }
        let get = |text: &str, tag| texts.get(hash(text, tag), text, tag).map(|n| n.1);
        assert_eq!([get("ab", 1), get("a", 1), get("ab", 2), get("", 0)], [Some('a'), Some('b'), Some('c'), Some('d')]);
        // A text held with another tag, a text that starts like one held, one that ends like one.
        assert_eq!([get("a", 2), get("abc", 1), get("b", 1), get("", 1)], [None; 4]);
    }

    #[test]
    fn a_text_held_alone_takes_an_entry_of_its_span_and_nothing_more() {
        assert_eq!(std::mem::size_of::<Entry<()>>(), 16);
    }
}
