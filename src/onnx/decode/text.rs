//! A string field's value checked as UTF-8 and copied out of the bytes it was read from, as prost's `string::merge`
//! takes it (the same strings accepted), in fewer instructions: short ASCII (most names) a word at a time, longer
//! text by `simdutf8`.
//!
//! Why: PyTorch's dynamo exporter writes each node's stack trace into its metadata entries (the 132 PyTorch models:
//! 46,000 entries, 17.6 MB of text), and `std::str::from_utf8` took ~1 instruction a byte over them, a tenth of
//! decoding those models; most of their value names are over 24 bytes, past the words checked inline. simdutf8
//! (the validator of simdjson, with its own tests against `std`'s) checks 64 bytes in a few AVX2 or SSE 4.2
//! instructions, chosen when first called; its `basic` checker says only whether the bytes are UTF-8, which is all
//! the fast path needs: where they are not, prost reads the message again and reports its own error.

use compact_str::CompactString;

use super::payload;

/// A string field's value in one exact allocation; `None` when it is not UTF-8.
#[inline(always)]
pub(super) fn string(rest: &mut &[u8]) -> Option<String> {
    let bytes = payload(rest)?;
    if let Some(ascii) = short_ascii(bytes) {
        // SAFETY: ASCII is UTF-8.
        return Some(unsafe { String::from_utf8_unchecked(ascii) });
    }
    utf8(bytes).map(str::to_owned)
}

/// A copy of `bytes` when they are 1 to 16 bytes of ASCII (most names), checked and copied a word at a time:
/// the first and last word (or half-word) cover them, overlapping. `None` for anything else.
#[inline(always)]
fn short_ascii(bytes: &[u8]) -> Option<Vec<u8>> {
    let len = bytes.len();
    if !(1..=16).contains(&len) {
        return None;
    }
    let src = bytes.as_ptr();
    // SAFETY: each read is of bytes within `bytes` (`len` is at least the width read from either end).
    let (head, tail, width) = unsafe {
        match len {
            8.. => (src.cast::<u64>().read_unaligned(), src.add(len - 8).cast::<u64>().read_unaligned(), 8),
            4.. => {
                let (head, tail) =
                    (src.cast::<u32>().read_unaligned(), src.add(len - 4).cast::<u32>().read_unaligned());
                (u64::from(head), u64::from(tail), 4)
            }
            _ => (u64::from(*src) | u64::from(*src.add(len / 2)) << 8, u64::from(*src.add(len - 1)), 1),
        }
    };
    if (head | tail) & 0x8080_8080_8080_8080 != 0 {
        return None;
    }
    let mut out = Vec::<u8>::with_capacity(len);
    let dst = out.as_mut_ptr();
    // SAFETY: `out` has room for `len` bytes; the writes put back what was read, at the same offsets, so all `len`
    // bytes are written before `set_len`.
    unsafe {
        match width {
            8 => {
                dst.cast::<u64>().write_unaligned(head);
                dst.add(len - 8).cast::<u64>().write_unaligned(tail);
            }
            4 => {
                dst.cast::<u32>().write_unaligned(head as u32);
                dst.add(len - 4).cast::<u32>().write_unaligned(tail as u32);
            }
            _ => {
                *dst = head as u8;
                *dst.add(len / 2) = (head >> 8) as u8;
                *dst.add(len - 1) = tail as u8;
            }
        }
        out.set_len(len);
    }
    Some(out)
}

/// A string field's value as a compact string (inline up to 24 bytes); `None` when it is not UTF-8.
#[inline(always)]
pub(super) fn compact(rest: &mut &[u8]) -> Option<CompactString> {
    let bytes = payload(rest)?;
    if bytes.len() <= INLINE {
        if inline_ascii(bytes) {
            // SAFETY: ASCII is UTF-8.
            return Some(CompactString::new(unsafe { std::str::from_utf8_unchecked(bytes) }));
        }
        return std::str::from_utf8(bytes).ok().map(CompactString::new);
    }
    utf8(bytes).map(CompactString::new)
}

/// The longest name a compact string holds inline.
const INLINE: usize = 24;

/// Whether `bytes`, at most [`INLINE`] of them, are ASCII: checked on the words `CompactString::new` then reads to
/// hold them inline (from both ends, overlapping), split at the same lengths (16, 8, 4, 2), so that the compiler
/// takes one branch of lengths for both and reads each word once.
#[inline(always)]
fn inline_ascii(bytes: &[u8]) -> bool {
    let len = bytes.len();
    let src = bytes.as_ptr();
    // SAFETY: each read is of bytes within `bytes` (`len` is at least the width read from either end).
    let word = |at: usize| unsafe { src.add(at).cast::<u64>().read_unaligned() };
    let half = |at: usize| unsafe { u64::from(src.add(at).cast::<u32>().read_unaligned()) };
    let quarter = |at: usize| unsafe { u64::from(src.add(at).cast::<u16>().read_unaligned()) };
    let bits = if len >= 16 {
        word(0) | word(8) | word(len - 8)
    } else if len >= 8 {
        word(0) | word(len - 8)
    } else if len >= 4 {
        half(0) | half(len - 4)
    } else if len >= 2 {
        quarter(0) | quarter(len - 2)
    } else if len == 1 {
        u64::from(bytes[0])
    } else {
        0
    };
    bits & 0x8080_8080_8080_8080 == 0
}

/// `bytes` as text when they are UTF-8: ASCII of up to [`WORDS`] bytes checked a word at a time (inline), longer
/// text by simdutf8.
#[inline(always)]
pub(super) fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.len() <= WORDS {
        if ascii_words(bytes) {
            // SAFETY: ASCII is UTF-8.
            return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        return std::str::from_utf8(bytes).ok();
    }
    simdutf8::basic::from_utf8(bytes).ok()
}

/// The longest text checked a word at a time. Why 128: parameter names in PyTorch's exports run to 65–128 bytes
/// ("albert.encoder.albert_layer_groups.0.albert_layers.0.ffn_output.weight"), where simdutf8's call cost ~90
/// instructions a name; the 132 PyTorch models' decoding −0.5 M instructions with it at 128 rather than 64.
const WORDS: usize = 128;

/// Whether `bytes` are at most [`WORDS`] bytes of ASCII, checked a word at a time: words read from both ends (and
/// the middle, or all along) cover them, overlapping. `std::str::from_utf8` cost ~90 instructions a name.
#[inline(always)]
fn ascii_words(bytes: &[u8]) -> bool {
    let len = bytes.len();
    let src = bytes.as_ptr();
    // SAFETY: each read is of bytes within `bytes` (`len` is at least the width read from either end).
    let word = |at: usize| unsafe { src.add(at).cast::<u64>().read_unaligned() };
    let half = |at: usize| unsafe { u64::from(src.add(at).cast::<u32>().read_unaligned()) };
    let bits = match len {
        25..=WORDS => {
            // Two words a step, and the last two words (overlapping what the steps read).
            let mut bits = word(len - 16) | word(len - 8);
            let mut at = 0;
            while at + 16 < len {
                bits |= word(at) | word(at + 8);
                at += 16;
            }
            bits
        }
        17..=24 => word(0) | word(8) | word(len - 8),
        8..=16 => word(0) | word(len - 8),
        4..=7 => half(0) | half(len - 4),
        1..=3 => u64::from(bytes[0] | bytes[len / 2] | bytes[len - 1]),
        0 => 0,
        _ => return false,
    };
    bits & 0x8080_8080_8080_8080 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length up to past simdutf8's first block of 64 bytes and the inline words' 128, ASCII and not: each
    /// byte in turn made a two-byte character, a lone continuation byte, a byte never in UTF-8, or the start of a
    /// character cut by the end. `utf8`, `compact` and `string` accept exactly what `std` accepts, as the same text,
    /// and each moves past the field's length and text.
    #[test]
    fn text_is_utf8_exactly_where_std_says_it_is() {
        let mut checked = [0, 0];
        for len in 0..200 {
            let ascii: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut texts = vec![ascii.clone()];
            for at in 0..len {
                for bad in [&[0xc3, 0xa9][..], &[0x80], &[0xff], &[0xe2, 0x82]] {
                    let mut text = ascii.clone();
                    text.splice(at..(at + bad.len()).min(len), bad.iter().copied());
                    texts.push(text);
                }
            }
            for text in texts {
                let std = std::str::from_utf8(&text).ok();
                assert_eq!(utf8(&text), std, "{text:02x?}");
                let mut field = Vec::new();
                prost::encoding::encode_varint(text.len() as u64, &mut field);
                field.extend_from_slice(&text);
                field.push(0x12);
                let (mut a, mut b) = (&field[..], &field[..]);
                assert_eq!(compact(&mut a).as_deref(), std, "{text:02x?}");
                assert_eq!(string(&mut b).as_deref(), std, "{text:02x?}");
                if std.is_some() {
                    assert_eq!((a, b), (&[0x12][..], &[0x12][..]), "{text:02x?}");
                }
                checked[usize::from(std.is_some())] += 1;
            }
        }
        assert!(checked[0] > 10_000 && checked[1] > 5_000, "both kinds checked: {checked:?}");
    }
}
