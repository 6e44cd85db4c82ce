//! What the walk makes of each node's op (a broadcasting site or not, and how; the config file's declaration),
//! remembered by domain, op name and opset. Every node asks, a model has few distinct ops, and asking the op table
//! and the declarations is a hash of the name each: the memo finds the answer with one comparison of names.

use crate::infer::custom::OpDecl;
use crate::rules::ops::BroadcastOp;

/// What the walk makes of an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct OpFacts {
    /// The config file's declaration of the op (`[ops]`).
    pub(super) decl: Option<OpDecl>,
    /// How the op broadcasts, when it does: from the op table, a declaration, or the contrib ops.
    pub(super) broadcast: Option<BroadcastOp>,
    /// The op is of the ONNX domain and its node's output asks nothing beyond its inputs' broadcast (not `Gemm`):
    /// a broadcasting node of such an op may be judged as a counted pair.
    pub(super) plain: bool,
}

/// The places of the memo: an op's place follows from its name (see [`place`]).
const PLACES: usize = 64;

/// The facts of the last op met at each place, with the domain, name and opset they are for. Two ops that share a
/// place take turns: each is asked again when the other came between, which costs what no memo would.
pub(super) struct OpMemo<'m> {
    places: Vec<Entry<'m>>,
}

/// One op remembered: its name's [`key`], domain, name and opset, and its facts.
type Entry<'m> = (u64, &'m str, &'m str, i64, OpFacts);

/// A place no op has taken yet: its key is no name's (a name's length would have to be 2^64 - 1).
const EMPTY: Entry<'static> = (u64::MAX, "", "", 0, OpFacts { decl: None, broadcast: None, plain: false });

impl<'m> OpMemo<'m> {
    pub(super) fn new() -> OpMemo<'m> {
        OpMemo { places: vec![EMPTY; PLACES] }
    }

    /// The facts of `op` in `domain` at `opset`: remembered, or found by `find` and remembered. (A reference: the
    /// caller reads a field or two, where a copy of the whole facts cost every node a dozen moves.)
    #[inline(always)]
    pub(super) fn get(
        &mut self,
        (domain, op, opset): (&'m str, &'m str, i64),
        find: impl FnOnce() -> OpFacts,
    ) -> &OpFacts {
        let k = key(op);
        let at = &mut self.places[place(k)];
        // A name of three bytes or fewer is its key whole (most standard ops': `Add`, `Mul`, `Sub`, `Div`).
        let (x, d, o, v, _) = *at;
        if !(x == k && (op.len() <= 3 || same(o, op)) && same(d, domain) && v == opset) {
            *at = (k, domain, op, opset, find());
        }
        &at.4
    }
}

/// Whether two names (of an op, of a domain) are the same: the empty default domain at once, any other name a word
/// at a time ([`super::names::same`]). Byte by byte, the comparison cost the 132 PyTorch exports' walk 1.4 M
/// instructions (~35 a node, for op names of 6 to 9 bytes).
#[inline(always)]
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && (a.is_empty() || super::names::same(a, b))
}

/// An op's name as its length and its first, middle and last bytes: the whole name when it is three bytes or
/// fewer, so that two such names with one key are the same name.
#[inline]
fn key(op: &str) -> u64 {
    let b = op.as_bytes();
    let Some(&last) = b.last() else { return 0 };
    b.len() as u64 | (b[0] as u64) << 8 | (b[b.len() / 2] as u64) << 16 | (last as u64) << 24
}

/// The place of an op's name from its [`key`], mixed by a multiplication (as FxHash mixes), which tells the
/// standard ops' names apart well enough for a memo.
#[inline]
fn place(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % PLACES
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::ops;

    fn facts(op: &str, opset: i64) -> OpFacts {
        OpFacts { decl: None, broadcast: ops::broadcast_op("", op, opset), plain: true }
    }

    #[test]
    fn the_memo_answers_what_the_op_table_does_for_each_domain_op_and_opset() {
        let mut memo = OpMemo::new();
        let asks = [("", "Add", 17), ("", "Add", 6), ("", "Relu", 17), ("com.microsoft", "Add", 17), ("", "Equal", 17)];
        for _ in 0..3 {
            for (domain, op, opset) in asks {
                let found = memo.get((domain, op, opset), || OpFacts {
                    decl: None,
                    broadcast: ops::broadcast_op(domain, op, opset),
                    plain: domain.is_empty(),
                });
                assert_eq!(found.broadcast, ops::broadcast_op(domain, op, opset), "{domain} {op} {opset}");
            }
        }
        assert_ne!(facts("Add", 6), facts("Add", 17), "the opset is part of what is remembered");
    }

    #[test]
    fn names_of_three_bytes_or_fewer_have_keys_of_their_own() {
        let letters = ["", "A", "d", "x", "Ad", "dd", "Add", "Adx", "Axd", "dAd", "Mul", "Mux", "Sub", "Div", "Dix"];
        for a in letters {
            for b in letters {
                assert_eq!(key(a) == key(b), a == b, "{a:?} {b:?}");
            }
        }
        // Longer names may share a key (the same length, first, middle and last bytes): the memo compares them
        // whole.
        assert_eq!(key("Axxd"), key("Ayxd"));
        let mut memo = OpMemo::new();
        let first = *memo.get(("", "Axxd", 17), || facts("Add", 17));
        let second = *memo.get(("", "Ayxd", 17), || facts("Relu", 17));
        assert_ne!(first, second, "two names of one key are told apart");
    }

    #[test]
    fn an_op_remembered_is_not_asked_again_and_one_at_the_same_place_is() {
        let other = (0..1000)
            .map(|i| format!("Op{i}"))
            .find(|n| place(key(n)) == place(key("Mul")))
            .expect("a name at Mul's place");
        let mut memo = OpMemo::new();
        let mut asked = 0;
        for _ in 0..4 {
            memo.get(("", "Mul", 17), || {
                asked += 1;
                facts("Mul", 17)
            });
        }
        assert_eq!(asked, 1);
        // An op at Mul's place, with another name, is asked and takes the place; Mul is asked again after it.
        memo.get(("", &other, 17), || facts(&other, 17));
        memo.get(("", "Mul", 17), || {
            asked += 1;
            facts("Mul", 17)
        });
        assert_eq!(asked, 2);
    }
}
