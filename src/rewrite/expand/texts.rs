//! Texts kept one after another in one buffer and found again by their hash and a tag: the names `names` makes,
//! and the values `hot` expands, which held near-copies of it.

/// Texts held one after another in one buffer, each with a tag and a value, found by the text and the tag: the
/// names `names` makes (tag 0, no value), and the values `hot` expands (tagged with the target's number, with the
/// `Expand`'s name).
///
/// One buffer rather than a `String` each, and a table entry of 16 bytes and the value rather than an owned key: a
/// plan of 100,000 sites makes 20,000 names and 10,000 `Expand`s, and asks for them 100,000 times by borrowed text.
/// The tag sits beside the text's length, in 32 bits each: with an `Expand`'s name an entry is 32 bytes, where one
/// of 40 (a length of 64 bits) made expand's peak RSS 2 MiB higher at 100,000 nodes (measured: the allocator then
/// cleared two later 1 MiB buffers by hand, which it had handed out fresh, untouched, before). A text held is
/// therefore a [`Short`] one.
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
    len: u32,
    tag: u32,
    value: T,
}

impl<T> Entry<T> {
    fn text<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.start + self.len as usize]
    }
}

/// A text shorter than 4 GiB, whose length a [`Texts`] entry holds in 32 bits: made only by [`Short::new`], which
/// checks it. (No name of a loaded model is longer, [`crate::onnx::long_fields`]; a name made here may be, in
/// principle: a shape constant's is named after its dims.)
#[derive(Clone, Copy)]
pub(super) struct Short<'t> {
    text: &'t str,
    len: u32,
}

impl<'t> Short<'t> {
    pub fn new(text: &'t str) -> Option<Short<'t>> {
        Some(Short { text, len: u32::try_from(text.len()).ok()? })
    }
}

/// The hash of `text` with `tag`, by which [`Texts`] holds and finds it: hashed as it is, not put together with
/// its tag into a key first.
pub(super) fn hash_tagged(text: &str, tag: u32) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(text.as_bytes());
    h.write_u32(tag);
    h.finish()
}

impl<T> Texts<T> {
    /// The value held for `text` with `tag`, of hash `hash` ([`hash_tagged`]); never one for a text of 4 GiB or
    /// more, which is never held.
    #[inline]
    pub fn get(&self, hash: u64, text: &str, tag: u32) -> Option<&T> {
        // The tag first: comparing it costs less than comparing the text.
        let found = self.table.find(hash, |e| e.tag == tag && e.text(&self.text) == text);
        found.map(|e| &e.value)
    }

    /// Holds `text` with `tag` and `value`, of hash `hash` ([`hash_tagged`]), which it is not held with yet; gives
    /// back the text as held.
    pub fn insert(&mut self, hash: u64, text: Short<'_>, tag: u32, value: T) -> &str {
        let start = self.text.len();
        self.text.push_str(text.text);
        let entry = Entry { start, len: text.len, tag, value };
        let held = &self.text;
        self.table.insert_unique(hash, entry, |e| hash_tagged(e.text(held), e.tag));
        &self.text[start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_found_with_its_tag_and_by_no_other_text_or_tag() {
        let mut texts = Texts::default();
        for (text, tag, value) in [("ab", 1, 'a'), ("a", 1, 'b'), ("ab", 2, 'c'), ("", 0, 'd')] {
            let short = Short::new(text).expect("short");
            assert_eq!(texts.insert(hash_tagged(text, tag), short, tag, value), text);
        }
        let get = |text: &str, tag| texts.get(hash_tagged(text, tag), text, tag).copied();
        assert_eq!([get("ab", 1), get("a", 1), get("ab", 2), get("", 0)], [Some('a'), Some('b'), Some('c'), Some('d')]);
        // A text held with another tag, a text that starts like one held, one that ends like one.
        assert_eq!([get("a", 2), get("abc", 1), get("b", 1), get("", 1)], [None; 4]);
    }

    #[test]
    fn an_entry_is_16_bytes_and_an_expands_32_as_measured_at_100000_nodes() {
        assert_eq!(std::mem::size_of::<Entry<()>>(), 16);
        assert_eq!(std::mem::size_of::<Entry<std::sync::Arc<str>>>(), 32);
    }
}
