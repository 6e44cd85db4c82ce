//! The walk of a body whose nodes come in file order and make each name once (as ONNX requires, and as exporters
//! write): each value followed from the node that makes it to its last reader, then dropped, with tables as large
//! as the graph is wide rather than long. Numbering every value first ([`super::scope::Producers`]) holds a table of
//! every name and tables of every node and value at once: on a chain of a million nodes, ~100 MB beside the
//! model. This walk holds, beside a few flags a node, only the values alive and the slots of those a node other
//! than the next one reads, by number.
//!
//! What it cannot follow (a name made twice, or made by a node and also an input or initializer; a node reading
//! what a later node makes) is found before any node is walked, and such a body is walked by numbers as before.

use super::declared::Declared;
use super::names::{hash, same, Made, Pending, Settled};
use super::scope::{Env, Scope, NONE};
use super::walker::Walker;
use super::*;
use crate::onnx::pb::node::CompactString;

/// Of a node input: the value it reads goes after the node (no later node reads it, and it is no body output).
pub(super) const LAST: u8 = 1;
/// Of a node input: it reads an output of the node just before, at the position the flag's upper five bits give.
pub(super) const PREVIOUS: u8 = 2;
/// Of a node input: it reads an input or initializer of the body, whose slot is the next of [`Flow::settled`].
pub(super) const SETTLED: u8 = 4;
/// Where a [`PREVIOUS`] input's position starts in its flags.
pub(super) const POSITION: u8 = 3;
/// Of a node output: no node reads it, and it is no body output: it goes right after its node.
pub(super) const UNREAD: u8 = 1;
/// Of a node output: a node other than the next one reads it, or it is a body output: it is found by its number
/// ([`Flow::numbers`]).
pub(super) const NAMED: u8 = 2;
/// Of a node output: a declaration of the body names it.
const DECLARED: u8 = 4;
/// Of a node's first output: the walk works out its value range ([`crate::infer::value_range`]), which some reader
/// reads, or with which the node checks its indices ([`super::index_bound`]). Most values of a real model are sizes
/// and shapes that only Reshape, Expand and the like read: their ranges (the `max` of a Concat's sizes, say) cost
/// a seventh of the walk and were never read.
pub(super) const RANGED: u8 = 8;
/// Of the plan's bits of a node's outputs the next node reads (by position, below 32): the next node reads the
/// range of the first.
const RANGE_NEXT: u64 = 1 << 63;

/// What the walk needs to know ahead of each node input and output, worked out in one pass over the nodes from
/// the last to the first: a value's last reader is then the first met (a byte of flags each, in file order).
pub(super) struct Flow {
    pub(super) inputs: Vec<u8>,
    pub(super) outputs: Vec<u8>,
    /// The slots the [`SETTLED`] inputs read, in file order: the walk then looks no name up for them again.
    pub(super) settled: Vec<u32>,
    /// Of each other input with a name (neither [`SETTLED`] nor [`PREVIOUS`]), in file order, the number of the
    /// value it reads; of each [`NAMED`] output, in file order, its number; of each body output, its number
    /// ([`NONE`] for one the body's inputs or initializers hold, or empty). A value's slot is found by its number in
    /// a table as long as the most values alive at once (a number is used again once its value is gone), where a
    /// table of names cost a hash of the name at the value's definition, at each reader and at its last: 7.6 M
    /// instructions over the 132 PyTorch exports.
    pub(super) numbers: Numbers,
}

/// The numbers of the values a walk finds by name (see [`Flow::numbers`]).
#[derive(Default)]
pub(super) struct Numbers {
    pub(super) reads: Vec<u32>,
    pub(super) makes: Vec<u32>,
    pub(super) body_outputs: Vec<u32>,
    /// How many numbers there are.
    pub(super) count: u32,
    /// The numbers free again, in a plan (from the last node to the first): a value's number is free once the node
    /// that makes it is met, for the values the nodes before it read.
    free: Vec<u32>,
}

impl Numbers {
    /// A number no value being planned holds.
    #[inline]
    fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.count += 1;
            self.count - 1
        })
    }
}

impl Flow {
    /// The flags of `nodes`' inputs and outputs in a body whose inputs and initializers `scope` holds, whose
    /// outputs are `body_outputs`; `None` when the body is not one this walk follows (see the module's comment).
    #[inline(never)]
    pub(super) fn plan<'m>(
        nodes: &'m [NodeProto],
        scope: &Scope<'m>,
        body_outputs: &[&'m str],
        declared: &Declared<'m>,
    ) -> Option<Flow> {
        let (all_inputs, all_outputs) = nodes.iter().fold((0, 0), |(i, o), n| (i + n.input.len(), o + n.output.len()));
        // `settled` at its largest at once: grown by doubling, it would be copied, and briefly held twice.
        let settled = Vec::with_capacity(all_inputs);
        let numbers = Numbers::default();
        let mut flow = Flow { inputs: vec![0; all_inputs], outputs: vec![0; all_outputs], settled, numbers };
        let mut planner = Planner {
            declared,
            made: Made::with_capacity(all_outputs + scope.names.len()),
            settled: Settled::with_capacity(scope.names.len(), scope.defined()),
            pending: Pending::default(),
            declared_mask: declared.names().fold(0u64, |m, name| m | bloom_bit(hash(name))),
            numbers: &mut flow.numbers,
        };
        for (&name, &slot) in &scope.names {
            let h = hash(name);
            planner.made.push(h);
            planner.settled.insert(h, name, slot);
        }
        for &name in body_outputs {
            let number = match !name.is_empty() && scope.slot(name) == NONE {
                true => planner.pending.insert(hash(name), name, false, || planner.numbers.take()).1,
                false => NONE,
            };
            planner.numbers.body_outputs.push(number);
        }
        let (mut ins, mut outs) = (all_inputs, all_outputs);
        // Which outputs of the node at hand the node after it reads (bit by position), and its first output's name:
        // each turn decodes the previous node's first output as an input may read it, and the next turn takes it
        // as its own.
        // (The outputs are carried too: a node's list of outputs, inline or not, is asked where it is once.)
        let mut outputs: &'m [CompactString] = nodes.last().map_or(&[], |n| &n.output);
        let (mut by_next, mut first) = (0, outputs.first().map_or("", |o| o.as_str()));
        for i in (0..nodes.len()).rev() {
            let inputs = nodes[i].input.as_slice();
            (ins, outs) = (ins - inputs.len(), outs - outputs.len());
            let out_flags = &mut flow.outputs[outs..outs + outputs.len()];
            let ranged = planner.outputs(outputs, first, by_next, out_flags);
            let indices = super::index_bound::indices_read(nodes[i].op_type());
            let before: &'m [CompactString] = if i > 0 { &nodes[i - 1].output } else { &[] };
            let before_first = before.first().map_or("", |o| o.as_str());
            let flags = &mut flow.inputs[ins..ins + inputs.len()];
            by_next = planner.inputs(inputs, (before, before_first), flags, &mut flow.settled);
            // Most nodes' ranges are read by none, and most nodes check no indices: nothing more is asked of them.
            if ranged || indices != 0 {
                let out_flags = &mut flow.outputs[outs..outs + outputs.len()];
                by_next |= planner.ranges_read(&nodes[i], (inputs, flags, out_flags), (ranged, indices));
            }
            (first, outputs) = (before_first, before);
        }
        // What is still pending is read before any node makes it: made by none (an enclosing scope's value, or
        // undefined), or by a later node, which this walk does not follow.
        // So is a name defined twice (by two nodes, or by a node and an input or initializer): both are told once
        // every name is met.
        if planner.made.repeats(planner.pending.hashes()) {
            return None;
        }
        flow.settled.reverse();
        flow.numbers.reads.reverse();
        flow.numbers.makes.reverse();
        Some(flow)
    }
}

/// What [`Flow::plan`] carries from node to node, from the last to the first. Each name it looks up is hashed once
/// ([`hash`]), and the hash serves every table that asks.
struct Planner<'m, 'p> {
    declared: &'p Declared<'m>,
    /// Every name defined here, as its hash: a name defined twice is found once all are met ([`Made::repeats`]).
    made: Made,
    /// The inputs' and initializers' slots by name.
    settled: Settled<'m>,
    /// Names read by a node after the one at hand (or body outputs) that no node before it made: a value's
    /// readers are met before the node that makes it. Outputs read by the next node only are not among them.
    pending: Pending<'m>,
    /// The declared names' bits (see [`bloom_bit`]): most outputs are told undeclared without a lookup.
    declared_mask: u64,
    /// The numbers of the values read by name, pushed from the last node's to the first's.
    numbers: &'p mut Numbers,
}

impl<'m> Planner<'m, '_> {
    /// The flags of a node's `outputs` (`first`: the first one's name, `by_next`: those the next node reads, bit
    /// by position, and [`RANGE_NEXT`]); whether some reader reads the first one's range.
    #[inline(always)]
    fn outputs(&mut self, outputs: &'m [CompactString], first: &'m str, by_next: u64, flags: &mut [u8]) -> bool {
        // Most nodes make one value: the first goes apart from a loop, whose set-up would cost as much again.
        let Some(flag) = flags.first_mut() else { return false };
        let at = self.numbers.makes.len();
        let ranged;
        (*flag, ranged) = self.output(first, by_next & 1 == 1);
        if outputs.len() > 1 {
            for (k, (o, flag)) in outputs.iter().zip(flags).enumerate().skip(1) {
                *flag = self.output(o.as_str(), k < 32 && by_next >> k & 1 == 1).0;
            }
            // The node's numbers, the first output's among them, in the order of its outputs once the whole list is
            // turned around.
            self.numbers.makes[at..].reverse();
        }
        ranged || by_next & RANGE_NEXT != 0
    }

    /// The flags of output `o` (`by_next`: whether the next node reads it), and whether a reader other than the
    /// next node reads its range.
    #[inline(always)]
    fn output(&mut self, o: &'m str, by_next: bool) -> (u8, bool) {
        if o.is_empty() {
            return (0, false);
        }
        let h = hash(o);
        self.made.push(h);
        let named = if self.pending.is_empty() { None } else { self.pending.remove(h, o) };
        let read = match (named, by_next) {
            (Some((_, number)), _) => {
                // The nodes before this one, met next, may read another value by the same number: their inputs
                // are read before this output is made.
                self.numbers.makes.push(number);
                self.numbers.free.push(number);
                NAMED
            }
            (None, true) => 0,
            (None, false) => UNREAD,
        };
        let is_declared = self.declared_mask & bloom_bit(h) != 0 && self.declared.get(o).is_some();
        (read | if is_declared { DECLARED } else { 0 }, named.is_some_and(|(ranged, _)| ranged))
    }

    /// The flags of a node's `inputs` (`before`: the previous node's outputs, and the first one's name), and the
    /// slots of those that read an input or initializer, pushed onto `settled` from the last; which of `before`
    /// they read (bit by position).
    #[inline(always)]
    fn inputs(
        &mut self,
        inputs: &'m [CompactString],
        (before, before_first): (&[CompactString], &str),
        flags: &mut [u8],
        settled: &mut Vec<u32>,
    ) -> u64 {
        let mut by_next = 0u64;
        for (x, flag) in inputs.iter().zip(flags).rev() {
            let x = x.as_str();
            if x.is_empty() {
                continue;
            }
            let at = match same(before_first, x) {
                true => Some(0),
                false => before.iter().skip(1).position(|o| same(o, x)).map(|p| p + 1),
            };
            *flag = match at.filter(|&p| p < 32) {
                Some(p) => {
                    // Read twice by this node, it goes once.
                    let first = by_next >> p & 1 == 0;
                    by_next |= 1 << p;
                    let later = !self.pending.is_empty() && self.pending.contains(hash(x), x);
                    PREVIOUS | (p as u8) << POSITION | if first && !later { LAST } else { 0 }
                }
                None => {
                    let h = hash(x);
                    match self.settled.get(h, x) {
                        // An input or initializer stays.
                        Some(s) => {
                            settled.push(s);
                            SETTLED
                        }
                        None => self.read_by_number(h, x),
                    }
                }
            };
        }
        by_next
    }
}

impl<'m> Planner<'m, '_> {
    /// The flags of an input that reads `x` (of hash `h`), made by a node before the previous one or by none here:
    /// pending, numbered. Apart from [`Planner::inputs`], whose loop then keeps its registers for the inputs the
    /// previous node made and the settled ones (a chain's): inline, the plan of 100,000 nodes cost 1.4 M more.
    #[inline(never)]
    fn read_by_number(&mut self, h: u64, x: &'m str) -> u8 {
        let (new, number) = self.pending.insert(h, x, false, || self.numbers.take());
        self.numbers.reads.push(number);
        match new {
            true => LAST,
            false => 0,
        }
    }

    /// Of a node whose first output's range some reader reads (`ranged`), or which checks the inputs `indices` (bit
    /// by position) as indices: flags the first output [`RANGED`] and notes the values whose ranges the node reads
    /// among its `inputs`, flagged `in_flags` by [`Planner::inputs`] (a pending name, or the previous node's first
    /// output: then [`RANGE_NEXT`], returned). Apart from [`Planner::inputs`]: most nodes read no range, and asking
    /// at each input cost the plan ~40 instructions a node on a chain.
    #[cold]
    #[inline(never)]
    fn ranges_read(
        &mut self,
        node: &NodeProto,
        (inputs, in_flags, out_flags): (&'m [CompactString], &[u8], &mut [u8]),
        (ranged, indices): (bool, u64),
    ) -> u64 {
        if let Some(flag) = out_flags.first_mut() {
            *flag |= RANGED;
        }
        let reads = match ops::is_default_domain(node.domain()) {
            true => indices | if ranged { crate::infer::value_range::inputs_read(node.op_type()) } else { 0 },
            false => 0,
        };
        let mut by_next = 0;
        for (_, (x, &f)) in inputs.iter().zip(in_flags).enumerate().filter(|&(k, _)| reads >> k.min(63) & 1 == 1) {
            match f {
                _ if f & PREVIOUS != 0 && f >> POSITION == 0 => by_next = RANGE_NEXT,
                _ if f & (PREVIOUS | SETTLED) != 0 || x.is_empty() => {}
                // Pending already (`inputs` put it there): it keeps its number.
                _ => drop(self.pending.insert(hash(x), x, true, || self.numbers.take())),
            }
        }
        by_next
    }
}

impl<'m> Walker<'m, '_> {
    /// Walks `nodes` as `flow` planned, in file order, in `scope` (which holds the body's inputs and initializers);
    /// gives the slots of the body's outputs (`body_outputs`).
    #[inline(never)]
    pub(super) fn walk_flow(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        declared: &mut Declared<'m>,
        (nodes, body_outputs): (&'m [NodeProto], &[&'m str]),
        flow: Flow,
    ) -> Vec<u32> {
        let base = scope.slots.len() as u32;
        scope.base = base;
        declared.made_from(base);
        // Slots of dropped values, for the next values made: the slots follow the graph's width.
        let mut free: Vec<u32> = Vec::new();
        // The slots of the previous node's outputs start here (a node's outputs take slots one after the other).
        let mut previous = NONE;
        let mut slots: Vec<u32> = Vec::new();
        let (mut ins, mut outs) = (0, 0);
        // Declarations of node outputs are rare but for the body's outputs: most nodes then set no bit, and until
        // one is set (`bits_set`), none needs clearing for a slot used again.
        // (All the flags or-ed, without a test each: a loop the compiler runs sixteen flags at a time.)
        let any_declared = flow.outputs.iter().fold(0, |all, f| all | f) & DECLARED != 0;
        let mut bits_set = false;
        let mut finder = Finder::new(&flow);
        // Whether a pair may be written over an input (`pair_over`), asked once: not for a taker of records, nor in a call.
        let chains = self.pairs && !self.pair_records && env.call.is_none();
        let stop = crate::sys::interrupt::request();
        for (index, node) in nodes.iter().enumerate() {
            // A caller that asked the work to stop (Ctrl-C in Python) discards what it gets.
            if stop.stop_now() {
                break;
            }
            // A node's lists of inputs and outputs, inline or not, asked where they are once.
            let (inputs, outputs) = (node.input.as_slice(), node.output.as_slice());
            let in_flags = &flow.inputs[ins..ins + inputs.len()];
            let out_flags = &flow.outputs[outs..outs + outputs.len()];
            (ins, outs) = (ins + inputs.len(), outs + outputs.len());
            slots.clear();
            match (inputs, in_flags) {
                // Most nodes of a large chain are counted pairs over the value the node before made: walked in its
                // slot (and their two inputs' slots found without a list).
                ([a, b], &[f, g]) => {
                    let pair = [slot_of((f, a), previous, &mut finder), slot_of((g, b), previous, &mut finder)];
                    let over = if chains { over_input(pair, [f, g], out_flags) } else { None };
                    if let Some(k) = over.filter(|&k| self.pair_over(env, scope, (index, pair, k), node)) {
                        let bits = (any_declared && bits_set).then_some(&mut *declared);
                        previous = after_over(
                            scope,
                            (&mut free, bits, &mut finder),
                            (inputs, outputs),
                            ([f, g], out_flags),
                            (pair, k),
                        );
                        continue;
                    }
                    slots.extend(pair);
                }
                (xs, _) => slots.extend(xs.iter().zip(in_flags).map(|(x, &f)| slot_of((f, x), previous, &mut finder))),
            }
            let first = match outputs.len() {
                1 => free.pop().unwrap_or_else(|| scope.new_slots(1)),
                m => scope.new_slots(m),
            };
            if any_declared && (bits_set || out_flags.iter().any(|f| f & DECLARED != 0)) {
                bits_set = true;
                out_flags.iter().zip(first..).for_each(|(&f, s)| declared.set_made(s, f & DECLARED != 0));
            }
            // Most nodes of a large graph are counted numpy pairs, walked by their own step.
            let out_declared = out_flags.first().is_some_and(|f| f & DECLARED != 0);
            let ranged = out_flags.first().is_some_and(|f| f & RANGED != 0);
            if !self.pair_step(env, scope, declared, (index, &slots, first, ranged), out_declared, node) {
                self.node(env, scope, declared, (index, &slots, first, ranged), node);
            }
            for ((name, &f), &s) in inputs.iter().zip(in_flags).zip(&slots) {
                drop_last_read(scope, &mut free, (name, f), s);
            }
            previous = first;
            place_outputs(scope, (&mut free, &mut finder), outputs, out_flags, first);
        }
        finder.body_outputs(&flow.numbers, scope, body_outputs)
    }
}

/// Where the walk finds what a node input reads, but for the previous node's outputs: the slots of the inputs and
/// initializers in the order the inputs read them ([`Flow::settled`]), and the other values by their numbers
/// ([`Flow::numbers`]).
struct Finder<'f> {
    settled: std::slice::Iter<'f, u32>,
    reads: std::slice::Iter<'f, u32>,
    makes: std::slice::Iter<'f, u32>,
    /// The slot of the value each number stands for now.
    slots: Vec<u32>,
}

impl<'f> Finder<'f> {
    #[inline(always)]
    fn new(flow: &'f Flow) -> Finder<'f> {
        Finder {
            settled: flow.settled.iter(),
            reads: flow.numbers.reads.iter(),
            makes: flow.numbers.makes.iter(),
            slots: vec![NONE; flow.numbers.count as usize],
        }
    }

    /// The slots of the body's outputs (`body_outputs`, numbered by `numbers`) once the walk is over.
    fn body_outputs(self, numbers: &Numbers, scope: &Scope, body_outputs: &[&str]) -> Vec<u32> {
        let numbered = numbers.body_outputs.iter().zip(body_outputs);
        numbered.map(|(&n, name)| if n == NONE { scope.slot(name) } else { self.slots[n as usize] }).collect()
    }

    /// The slot of the value the next input read by number reads ([`NONE`]: a value no node here made).
    #[inline(always)]
    fn read(&mut self) -> u32 {
        self.reads.next().map_or(NONE, |&n| self.slots[n as usize])
    }

    /// Notes that the next [`NAMED`] output is in slot `s`.
    #[inline(always)]
    fn made(&mut self, s: u32) {
        if let Some(&n) = self.makes.next() {
            self.slots[n as usize] = s;
        }
    }
}

/// The slot a node input (flagged `f`, named `name`) reads, `previous` being the first slot of the node before's
/// outputs and `finder` where this input and the ones after it find the rest.
#[inline(always)]
fn slot_of((f, name): (u8, &CompactString), previous: u32, finder: &mut Finder) -> u32 {
    match f {
        _ if f & PREVIOUS != 0 => previous + (f >> POSITION) as u32,
        _ if f & SETTLED != 0 => finder.settled.next().copied().unwrap_or(NONE),
        _ if name.is_empty() => NONE,
        _ => finder.read(),
    }
}

/// Of a node of two inputs (in slots `slots`, flagged `in_flags`) and one output no declaration names: which input
/// reads a value the node just before made and no later node reads (the first such), over which the output may be
/// written ([`Walker::pair_over`]).
#[inline(always)]
fn over_input([a, b]: [u32; 2], [f, g]: [u8; 2], out_flags: &[u8]) -> Option<usize> {
    let &[o] = out_flags else { return None };
    let last_of_previous = |f: u8| f & (LAST | PREVIOUS) == LAST | PREVIOUS;
    // An input read twice by the node is read after the output is made.
    match (last_of_previous(f), last_of_previous(g)) {
        _ if o & DECLARED != 0 || a == b => None,
        (true, _) => Some(0),
        (false, true) => Some(1),
        (false, false) => None,
    }
}

/// What follows a pair written over its input `k` (in slots `pair`, flagged `in_flags`): the other input goes if no
/// later node reads it, and the output (in the slot written over) as its flags say. `declared`, where the walk has
/// set some bit, clears the output's. The output's slot.
#[inline(always)]
fn after_over<'m>(
    scope: &mut Scope<'m>,
    (free, declared, finder): (&mut Vec<u32>, Option<&mut Declared<'m>>, &mut Finder),
    (inputs, outputs): (&'m [CompactString], &'m [CompactString]),
    (in_flags, out_flags): ([u8; 2], &[u8]),
    (pair, k): ([u32; 2], usize),
) -> u32 {
    if let Some(declared) = declared {
        declared.set_made(pair[k], false);
    }
    drop_last_read(scope, free, (&inputs[1 - k], in_flags[1 - k]), pair[1 - k]);
    place_outputs(scope, (free, finder), outputs, out_flags, pair[k]);
    pair[k]
}

/// Drops the value a node input (named `name`, flagged `f`) reads from slot `s` if it is the value's last reader;
/// its slot goes to `free`.
#[inline(always)]
fn drop_last_read<'m>(scope: &mut Scope<'m>, free: &mut Vec<u32>, (name, f): (&'m CompactString, u8), s: u32) {
    if f & LAST != 0 && scope.made_here(s) {
        scope.drop_made(s, || name);
        free.push(s);
    }
}

/// What follows a node's `outputs` (in slots from `first`, flagged `out_flags`): dropped when no node reads them,
/// found by number when a node other than the next does.
#[inline(always)]
fn place_outputs<'m>(
    scope: &mut Scope<'m>,
    (free, finder): (&mut Vec<u32>, &mut Finder),
    outputs: &'m [CompactString],
    out_flags: &[u8],
    first: u32,
) {
    // An output flagged read or unread has a name (the plan flags no empty one): only an output without either
    // flag asks whether it has one.
    for ((name, &f), s) in outputs.iter().zip(out_flags).zip(first..) {
        if f & UNREAD != 0 {
            scope.drop_made(s, || name);
            free.push(s);
        } else if f & NAMED != 0 {
            finder.made(s);
        } else if name.is_empty() {
            free.push(s);
        }
    }
}

impl Scope<'_> {
    /// `m` new slots, empty, one after the other: the first.
    fn new_slots(&mut self, m: usize) -> u32 {
        let first = self.slots.len() as u32;
        self.slots.resize_with(self.slots.len() + m, || None);
        first
    }
}

/// One bit of 64 for a hash, for a set of few names that is asked of every output.
#[inline]
fn bloom_bit(h: u64) -> u64 {
    1 << (h >> 58)
}
