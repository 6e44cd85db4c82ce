//! JSON objects whose fields are listed once and written two ways: to any serde serializer (a `Value`, a whole
//! report) or, in streamed output, straight into a byte buffer with each key as the literal text it is. Every
//! value goes through serde_json either way, which escapes every string (every name in a model is untrusted); the
//! keys are the program's own ASCII words, which JSON writes as they are. The bytes are serde_json's compact form
//! (`render::json`'s tests compare the two).

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
    /// A field whose value is a list of objects.
    fn objects<O: Object>(
        &mut self,
        key: &'static str,
        items: impl Iterator<Item = O> + Clone,
    ) -> Result<(), Self::Error>;
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
}

impl Fields for Raw<'_> {
    type Error = serde_json::Error;

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> serde_json::Result<()> {
        self.key(key);
        serde_json::to_writer(Bytes(self.out), value)
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
