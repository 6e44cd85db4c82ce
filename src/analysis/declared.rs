//! A body's declarations (graph inputs, `value_info`, graph outputs; a function's `value_info`) and the one rule
//! for a value declared more than once, which `check` (through the notes of the walk) and `infer` (through
//! [`crate::rewrite::annotate`], which compares every declaration it rewrites with the same facts) both apply: the first
//! declaration is the one the walk reads, and every other declaration of the value is compared with what the value
//! is (what inference finds, completed by that first declaration), so that a second declaration `[5, 7]` of a value
//! declared and inferred `[2, 3]` is a `declared-shape-mismatch` in both commands. A graph input listed twice is a
//! `duplicate-value` already, and is not compared again.

use super::scope::{Env, Scope, NONE};
use super::*;

/// What a body declares: the first declaration of each value, and the later ones.
#[derive(Default)]
pub(super) struct Declared<'m> {
    first: HashMap<&'m str, ValueFacts>,
    /// Declarations of a value after its first one (repeated graph inputs left out).
    later: HashMap<&'m str, Vec<ValueFacts>>,
    /// Values declared only outside the graph inputs (a `value_info` or an output): an initializer's first
    /// declaration is such a one, and is compared with the tensor.
    not_inputs: HashSet<&'m str>,
    /// Which node-made values some declaration names, one bit per slot from the first node-made one, where the walk
    /// follows values by number (each name made once at most): a node output is then looked up by name only when
    /// it is declared. `None`: every node output is looked up by name.
    made: Option<(u32, Vec<u64>)>,
}

impl<'m> Declared<'m> {
    /// The first declaration of `name`.
    pub(super) fn get(&self, name: &str) -> Option<&ValueFacts> {
        self.first.get(name)
    }

    /// The names declared, in no order.
    pub(super) fn names(&self) -> impl ExactSizeIterator<Item = &'m str> + '_ {
        self.first.keys().copied()
    }

    /// Notes which node-made values of `scope`, once numbered, are declared (see `made`).
    pub(super) fn index_made(&mut self, scope: &Scope<'m>) {
        if scope.by_numbers() {
            let (base, end) = scope.made_slots();
            let mut bits = vec![0u64; (end - base).div_ceil(64) as usize];
            for s in self.first.keys().map(|name| scope.slot(name)).filter(|&s| scope.made_here(s)) {
                bits[((s - base) / 64) as usize] |= 1 << ((s - base) % 64);
            }
            self.made = Some((base, bits));
        }
    }

    /// Starts the bits of `made` at slot `base`, for a walk that sets them value by value ([`Declared::set_made`]).
    pub(super) fn made_from(&mut self, base: u32) {
        self.made = Some((base, Vec::new()));
    }

    /// Notes whether a declaration names the value a node makes in slot `s` (after [`Declared::made_from`]).
    #[inline]
    pub(super) fn set_made(&mut self, s: u32, declared: bool) {
        let Some((base, bits)) = &mut self.made else { return };
        let (word, bit) = (((s - *base) / 64) as usize, 1 << ((s - *base) % 64));
        if word >= bits.len() {
            bits.resize(word + 1, 0);
        }
        match declared {
            true => bits[word] |= bit,
            false => bits[word] &= !bit,
        }
    }

    /// The first declaration of the value a node makes in slot `s`, named `name`.
    #[inline(always)]
    pub(super) fn of_made(&self, s: u32, name: &str) -> Option<&ValueFacts> {
        match &self.made {
            // A bit past the end is one never set (a walk whose values flow sets none where nothing is declared).
            Some((base, bits))
                if bits.get(((s - base) / 64) as usize).is_none_or(|w| w & 1 << ((s - base) % 64) == 0) =>
            {
                None
            }
            _ => self.first.get(name),
        }
    }
}

impl<'m> Walker<'m, '_> {
    /// Each settled value (an input, an initializer) compared with its other declarations, once per name.
    pub(super) fn compare_settled(
        &mut self,
        env: &Env<'m, '_>,
        scope: &Scope<'m>,
        declared: &Declared<'m>,
        (settled, how_many): (impl Iterator<Item = &'m str>, usize),
    ) {
        if declared.names().len() < how_many {
            // Fewer declarations than inputs and initializers (a graph of many weights, few declared): each
            // declared name is looked up among them instead, in the order they were defined (their slots' order,
            // which is the order of their first mention in `settled`). Only they are in the scope yet.
            let mut here: Vec<(u32, &'m str)> =
                declared.names().map(|name| (scope.slot(name), name)).filter(|&(s, _)| s != NONE).collect();
            here.sort_unstable();
            for (_, name) in here {
                if let Some(facts) = scope.get(name).cloned() {
                    self.compare_declarations(env, declared, (name, &facts), None, true);
                }
            }
            return;
        }
        let mut compared = HashSet::default();
        // Only a declared value is compared: no copy of the others' facts.
        for name in settled.filter(|name| declared.get(name).is_some()) {
            if let Some(facts) = scope.get(name).filter(|_| compared.insert(name)).cloned() {
                self.compare_declarations(env, declared, (name, &facts), None, true);
            }
        }
    }

    /// The facts each value's declarations give (graph inputs first: `declared_inputs` of them, read with the bound
    /// sizes).
    pub(super) fn declared(
        &mut self,
        env: &Env<'m, '_>,
        infos: &[&'m ValueInfoProto],
        declared_inputs: usize,
    ) -> Declared<'m> {
        let mut declared = Declared::default();
        for (i, vi) in infos.iter().enumerate() {
            let mut negative = Vec::new();
            let mut facts = tensor::facts_from_type(vi.r#type.as_ref(), &mut negative, i >= declared_inputs);
            if i < declared_inputs && !self.bindings.is_empty() {
                facts = self.bindings.facts(&facts);
            }
            if !negative.is_empty() {
                let axes: Vec<String> = negative.iter().map(usize::to_string).collect();
                let msg = format!(
                    "value '{}' declares a negative size on axis {}; read as unknown",
                    crate::sys::escape::name(vi.name()),
                    axes.join(", ")
                );
                self.note(env, Code::NegativeDim, None, msg);
            }
            if declared.first.contains_key(vi.name()) {
                if i >= declared_inputs {
                    declared.later.entry(vi.name()).or_default().push(facts);
                }
            } else {
                if i >= declared_inputs {
                    declared.not_inputs.insert(vi.name());
                }
                declared.first.insert(vi.name(), facts);
            }
        }
        declared
    }

    /// The rule for the declarations of a value that is already defined with `facts`: each declaration after the
    /// first (and, with `first_too`, the first: an initializer's, which the tensor defines) that contradicts them.
    pub(super) fn compare_declarations(
        &mut self,
        env: &Env<'m, '_>,
        declared: &Declared<'m>,
        (value, facts): (&str, &ValueFacts),
        node: Option<(&NodeProto, usize)>,
        first_too: bool,
    ) {
        let first = declared.get(value).filter(|_| first_too && declared.not_inputs.contains(value));
        for d in first.into_iter().chain(declared.later.get(value).into_iter().flatten()) {
            if let Some(why) = tensor::contradiction(facts, d) {
                let value = crate::sys::escape::name(value);
                let msg =
                    format!("value '{value}' is declared more than once, and a declaration contradicts it: {why}");
                self.note(env, Code::DeclaredShapeMismatch, node, msg);
            }
        }
    }
}
