//! JSON objects whose fields are listed once and written two ways: to any serde serializer (a `Value`, a whole
//! report) or, in streamed output, straight into a byte buffer with each key as the literal text it is. There a
//! string with nothing to escape is copied between its quotes and a shape of known sizes writes its digits itself
//! ([`Direct`]); every other value, and every string that has a byte to escape (every name in a model is
//! untrusted), goes through serde_json. The keys, and the words of [`Fields::word`], are the program's own ASCII
//! words, which JSON writes as they are. The bytes are serde_json's compact form (the tests here and in
//! `render::json` compare the two).

use std::io::{self, Write};

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

/// An object: its fields, in order.
pub(super) trait Object {
    /// How many fields [`Object::fields`] gives (a hint to serializers).
    fn len(&self) -> usize;
    fn fields<F: Fields>(&self, out: &mut F) -> Result<(), F::Error>;
}

/// Where an object's fields go.
pub(super) trait Fields {
    type Error;
    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Self::Error>;
    /// A field whose value is a string: [`Fields::field`] of it, which a destination may write faster.
    fn text(&mut self, key: &'static str, value: &str) -> Result<(), Self::Error> {
        self.field(key, value)
    }
    /// A field whose value is one of the program's own words (a rule's or a verdict's name), which JSON writes as
    /// it is, as it writes the keys.
    fn word(&mut self, key: &'static str, value: &'static str) -> Result<(), Self::Error> {
        self.field(key, value)
    }
    /// A field whose value may write its compact JSON itself ([`Direct`]): [`Fields::field`] of it elsewhere.
    fn direct<T: Direct>(&mut self, key: &'static str, value: &T) -> Result<(), Self::Error> {
        self.field(key, value)
    }
    /// A field whose value is a list of objects.
    fn objects<O: Object>(
        &mut self,
        key: &'static str,
        items: impl Iterator<Item = O> + Clone,
    ) -> Result<(), Self::Error>;
}

/// A value that writes its own compact JSON where that is a few digits and commas (a shape of known sizes), the same
/// bytes serde_json writes for it, and leaves any other case to serde_json.
pub(super) trait Direct: Serialize {
    /// Writes the value at the end of `out` and returns true, or writes nothing and returns false.
    fn write_direct(&self, out: &mut Vec<u8>) -> bool;
}

/// An object serialized as a struct by any serde serializer (what `impl Serialize` of an [`Object`] calls).
pub(super) fn serialize<O: Object, S: Serializer>(object: &O, name: &'static str, s: S) -> Result<S::Ok, S::Error> {
    let mut out = Struct(s.serialize_struct(name, object.len())?);
    object.fields(&mut out)?;
    out.0.end()
}

/// A serde struct as the destination of [`Fields`].
struct Struct<S>(S);

impl<S: SerializeStruct> Fields for Struct<S> {
    type Error = S::Error;

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), S::Error> {
        self.0.serialize_field(key, value)
    }

    fn objects<O: Object>(
        &mut self,
        key: &'static str,
        items: impl Iterator<Item = O> + Clone,
    ) -> Result<(), S::Error> {
        self.0.serialize_field(key, &List(items))
    }
}

/// A list of objects as a serde sequence.
struct List<I>(I);

impl<O: Object, I: Iterator<Item = O> + Clone> Serialize for List<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.clone().map(AsStruct))
    }
}

struct AsStruct<O>(O);

impl<O: Object> Serialize for AsStruct<O> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize(&self.0, "object", s)
    }
}

/// Writes `object` as compact JSON at the end of `out`: the same bytes as `serde_json::to_writer` of its
/// [`serialize`]d struct.
pub(super) fn write_raw<O: Object>(out: &mut Vec<u8>, object: &O) -> serde_json::Result<()> {
    let mut raw = Raw { out, first: true };
    object.fields(&mut raw)?;
    raw.out.extend_from_slice(if raw.first { b"{}" } else { b"}" });
    Ok(())
}

/// An object being written by [`write_raw`].
struct Raw<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl Raw<'_> {
    /// `{"key":` or `,"key":`.
    fn key(&mut self, key: &'static str) {
        debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{key} needs no escaping");
        let lead = if std::mem::take(&mut self.first) { b"{\"" } else { b",\"" };
        // Room for the whole key once; the copies of a known length are a store each.
        self.out.reserve(key.len() + 4);
        self.out.extend_from_slice(lead);
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    /// `value` between quotes, as it is: a string with nothing to escape.
    fn quoted(&mut self, value: &str) {
        self.out.reserve(value.len() + 2);
        self.out.push(b'"');
        self.out.extend_from_slice(value.as_bytes());
        self.out.push(b'"');
    }
}

impl Fields for Raw<'_> {
    type Error = serde_json::Error;

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> serde_json::Result<()> {
        self.key(key);
        serde_json::to_writer(Bytes(self.out), value)
    }

    /// A string with nothing to escape (most names and messages) is copied whole between its quotes, where
    /// serde_json looks up every byte in its escape table (~12 instructions a byte: a third of what a site's
    /// object cost `check --format json`); any other goes to serde_json, so every string is escaped by it.
    fn text(&mut self, key: &'static str, value: &str) -> serde_json::Result<()> {
        self.key(key);
        if !written_as_it_is(value) {
            return serde_json::to_writer(Bytes(self.out), value);
        }
        self.quoted(value);
        Ok(())
    }

    fn word(&mut self, key: &'static str, value: &'static str) -> serde_json::Result<()> {
        debug_assert!(written_as_it_is(value), "{value} needs no escaping");
        self.key(key);
        self.quoted(value);
        Ok(())
    }

    fn direct<T: Direct>(&mut self, key: &'static str, value: &T) -> serde_json::Result<()> {
        self.key(key);
        match value.write_direct(self.out) {
            true => Ok(()),
            false => serde_json::to_writer(Bytes(self.out), value),
        }
    }

    fn objects<O: Object>(
        &mut self,
        key: &'static str,
        items: impl Iterator<Item = O> + Clone,
    ) -> serde_json::Result<()> {
        self.key(key);
        self.out.push(b'[');
        for (k, item) in items.enumerate() {
            if k > 0 {
                self.out.push(b',');
            }
            write_raw(self.out, &item)?;
        }
        self.out.push(b']');
        Ok(())
    }
}

/// Whether JSON writes `text` between its quotes as it is: no control character, `"` or `\` (the bytes
/// serde_json escapes; every other byte, non-ASCII ones too, it copies). Every byte is looked at in chunks of 16 or
/// 4 (the last chunk overlapping the one before), which the compiler tests as one vector each: byte by byte, the
/// test cost more than the rest of the string's writing.
fn written_as_it_is(text: &str) -> bool {
    let bytes = text.as_bytes();
    in_chunks::<16>(bytes).or_else(|| in_chunks::<4>(bytes)).unwrap_or_else(|| bytes.iter().all(|&b| plain(b)))
}

/// [`written_as_it_is`] of `bytes` tested `N` bytes at a time, or `None` when they are fewer than `N`.
fn in_chunks<const N: usize>(bytes: &[u8]) -> Option<bool> {
    let last = bytes.last_chunk::<N>()?;
    let all = |chunk: &[u8; N]| chunk.iter().fold(true, |all, &b| all & plain(b));
    let (chunks, _) = bytes.as_chunks::<N>();
    Some(chunks.iter().fold(all(last), |all_so_far, chunk| all_so_far & all(chunk)))
}

/// Whether JSON writes byte `b` of a string as it is.
fn plain(b: u8) -> bool {
    (b >= 0x20) & (b != b'"') & (b != b'\\')
}

/// A byte buffer for serde_json, which writes a JSON text in pieces of a byte or a few (`"`, `:`, `,`): a single
/// byte is pushed, not copied by `memcpy` as `Vec<u8>`'s own `Write` does.
pub(super) struct Bytes<'a>(pub &'a mut Vec<u8>);

impl Write for Bytes<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match buf {
            [byte] => self.0.push(*byte),
            _ => self.0.extend_from_slice(buf),
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object of one string field, written by [`Fields::text`].
    struct Text<'a>(&'a str);

    impl Object for Text<'_> {
        fn len(&self) -> usize {
            1
        }

        fn fields<F: Fields>(&self, out: &mut F) -> Result<(), F::Error> {
            out.text("name", self.0)?;
            out.word("rule", "multidirectional")
        }
    }

    /// Strings of every length up to 40 (across the 4- and 16-byte chunks and their overlapping last chunk), with a
    /// byte JSON escapes (each control character, `"`, `\`) at every position or none, among ASCII and non-ASCII
    /// characters: the streamed bytes are serde_json's own.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let escaped = (0u8..0x20).map(char::from).chain(['"', '\\']);
        for len in 0..=40 {
            for filler in ['a', 'é', '\u{7f}'] {
                let plain: Vec<char> = std::iter::repeat_n(filler, len).collect();
                let mut texts = vec![plain.iter().collect::<String>()];
                for at in 0..len {
                    for e in escaped.clone() {
                        let mut with = plain.clone();
                        with[at] = e;
                        texts.push(with.into_iter().collect());
                    }
                }
                for text in texts {
                    let mut raw = Vec::new();
                    write_raw(&mut raw, &Text(&text)).unwrap();
                    let serde = serde_json::to_vec(&AsStruct(Text(&text))).unwrap();
                    assert_eq!(String::from_utf8(raw).unwrap(), String::from_utf8(serde).unwrap(), "{text:?}");
                }
            }
        }
    }
}
