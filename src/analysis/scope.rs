//! What a walk carries: the values in scope, their remaining readers, the body being walked and where it is.

use std::cell::OnceCell;
use std::rc::Rc;

use alike::Alike;

use super::*;

/// The values visible in one graph body, each in a numbered slot. The inputs and initializers take the first slots, by
/// name; once the body's nodes are numbered ([`Producers::of`]), each value a node makes has the slot `base` plus
/// its number, and each node input is resolved to a slot once, so that the walk reads and defines values without
/// looking a name up. Names are kept for what reads by name: a subgraph reading this body's values, the body's
/// outputs, and the recorded facts.
///
/// A name stands, at any point of the walk, for its latest definition there: a node output named like an input or
/// an initializer shadows it from the node on (before that, a subgraph or a node caught in a cycle reads the input),
/// and a name some node makes is not the input's any more. When two nodes make one name, which of the two a reader
/// sees depends on the order the walk met them, not on the numbering: such a body is walked by name
/// ([`Follow::Names`]), as every body once was.
pub(super) struct Scope<'m> {
    /// Each node-made value's facts, boxed so that a slot is one pointer; `None` before the value is defined and
    /// after its last reader, and in the slots of the inputs and initializers, whose facts are `settled`'s.
    pub(super) slots: Vec<Option<Box<ValueFacts>>>,
    /// The inputs' and initializers' facts, by slot, never dropped while the body is walked. An initializer's are
    /// made from its tensor when first read ([`Scope::set_lazy`]): most bodies read few of their weights by name,
    /// and a graph of 10,000 small weights spent ~400 instructions on each to make, then drop, facts nothing read.
    /// Behind a pointer, so that a slot is one pointer and facts take room only once made (the slots of those 10,000
    /// weights took ~1 MB, and a huge page of the allocator's, with facts held in place); shared, so that
    /// initializers of one element type and dims have theirs made once ([`Alike`]).
    settled: Vec<OnceCell<Rc<ValueFacts>>>,
    /// The facts made from tensors so far, by element type and dims.
    alike: Alike<'m>,
    /// Each name's slot: the inputs' and initializers'; once the nodes are numbered, the value each node output
    /// name stands for too (the last made). Emptied in a body nothing reads by name while it is walked.
    pub(super) names: HashMap<&'m str, u32>,
    /// The first slot of the node-made values ([`NONE`] until the nodes are numbered).
    pub(super) base: u32,
    /// The input or initializer each node-made value shadows (its slot), by the value's slot.
    shadows: HashMap<u32, u32>,
    follow: Follow,
    /// The boxes of dropped values, for the next values defined: a value then costs no allocation. Boxes, not
    /// facts: what is kept is their allocation, moved into a slot as it is.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<ValueFacts>>,
    /// Names in the order they were defined: inputs, initializers, then node outputs in topological order.
    /// `None` when the body's facts are not recorded.
    pub(super) order: Option<Vec<&'m str>>,
    /// The value ranges of integer tensors, where known ([`crate::infer::value_range`]): a side table of the
    /// walk, dropped with the values.
    pub(super) ranges: HashMap<&'m str, crate::infer::value_range::ValueRange>,
    /// The initializers whose floating-point contents are not read yet, by slot (see [`Scope::set_lazy`]); those whose
    /// slot in `settled` is empty have no facts made yet either.
    unread: Vec<Option<&'m TensorProto>>,
}

/// How the walk finds the value a node input reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// By the slot the input was resolved to when the nodes were numbered: every name is made by one node at most.
    Numbers,
    /// By name, the names following each definition as it is walked: some name is made by two nodes.
    Names,
}

/// The facts of a node's outputs: inline for the one output of most nodes, which then costs no allocation.
pub(super) type Outputs = smallvec::SmallVec<[ValueFacts; 1]>;

/// No slot: a name this body does not define.
pub(super) const NONE: u32 = u32::MAX;

impl<'m> Scope<'m> {
    /// Room for every value a body defines, so that no table grows while it is walked.
    pub(super) fn with_capacity(n: usize) -> Scope<'m> {
        Scope::new(n, Some(Vec::with_capacity(n)))
    }

    /// A scope whose values come and go (see [`Reads`]) and whose order is not kept.
    pub(super) fn unordered(n: usize) -> Scope<'m> {
        Scope::new(n, None)
    }

    fn new(n: usize, order: Option<Vec<&'m str>>) -> Scope<'m> {
        Scope {
            slots: Vec::with_capacity(n),
            settled: Vec::with_capacity(n),
            alike: Alike::default(),
            names: HashMap::with_capacity_and_hasher(n, Default::default()),
            base: NONE,
            shadows: HashMap::default(),
            follow: Follow::Numbers,
            spare: Vec::new(),
            order,
            ranges: HashMap::default(),
            unread: Vec::with_capacity(n),
        }
    }

    /// Defines (or defines again) an input or an initializer, before the nodes are numbered.
    pub(super) fn define(&mut self, name: &'m str, facts: ValueFacts) {
        let s = self.claim(name).unwrap_or_else(|s| s);
        self.set(s, facts);
    }

    /// The slot of an input or initializer named `name`: a new one (`Ok`, empty until [`Scope::set`]), or the one
    /// an earlier definition took (`Err`), found with one lookup of the name.
    pub(super) fn claim(&mut self, name: &'m str) -> Result<u32, u32> {
        debug_assert_eq!(self.base, NONE, "inputs and initializers are defined before the nodes");
        let s = match self.names.entry(name) {
            std::collections::hash_map::Entry::Occupied(e) => return Err(*e.get()),
            std::collections::hash_map::Entry::Vacant(e) => *e.insert(self.slots.len() as u32),
        };
        self.slots.push(None);
        self.settled.push(OnceCell::new());
        self.unread.push(None);
        if let Some(order) = &mut self.order {
            order.push(name);
        }
        Ok(s)
    }

    /// Sets the facts of the input or initializer in slot `s` (from [`Scope::claim`]).
    pub(super) fn set(&mut self, s: u32, facts: ValueFacts) {
        self.settled[s as usize] = OnceCell::from(Rc::new(facts));
        if let Some(unread) = self.unread.get_mut(s as usize) {
            *unread = None;
        }
    }

    /// Sets the facts of the initializer in slot `s` (from [`Scope::claim`]) to those of `tensor`
    /// ([`tensor::facts_from_tensor`]), made when first read, their floating-point contents only when asked: most
    /// initializers are weights that only broadcasting sites read, which look at their shapes and types and at
    /// integer contents only. [`Scope::read_floats`] reads them for a node that may ask for them,
    /// [`Scope::read_all_floats`] for whatever else reads the scope (a subgraph, the recorded facts).
    pub(super) fn set_lazy(&mut self, s: u32, tensor: &'m TensorProto) {
        debug_assert!(self.settled[s as usize].get().is_none(), "a slot just claimed");
        self.unread[s as usize] = Some(tensor);
    }

    /// Reads the floating-point contents of the initializer in slot `s`, if they are not read yet. (Inline: a walk
    /// asks it of many node inputs, most of which have none to read.)
    #[inline(always)]
    fn read_floats_at(&mut self, s: usize) {
        if let Some(&Some(t)) = self.unread.get(s) {
            self.read_floats_of(s, t);
        }
    }

    /// [`Scope::read_floats_at`] of the initializer in slot `s`, of tensor `t`, whose contents are not read yet.
    fn read_floats_of(&mut self, s: usize, t: &'m TensorProto) {
        match (tensor::float_values(t), self.settled[s].get_mut()) {
            // No contents to read: the facts are those made without them, which may be shared.
            (None, _) => drop(self.made_from_tensor(s)),
            // Facts of its own, not those it might share with tensors alike, which hold none.
            (Some(floats), None) => {
                let facts = ValueFacts { floats: Some(floats), ..tensor::facts_from_tensor_but_floats(t) };
                self.settled[s] = OnceCell::from(Rc::new(facts));
            }
            (Some(floats), Some(facts)) => Rc::make_mut(facts).floats = Some(floats),
        }
        self.unread[s] = None;
    }

    /// Reads the floating-point contents of whatever initializers a node input named `name`, resolved to slot
    /// `s`, reads (see [`Scope::read`]).
    pub(super) fn read_floats(&mut self, s: u32, name: &str) {
        if !self.unread.is_empty() {
            if let Some(s) = self.resolve(s, name) {
                self.read_floats_at(s);
            }
        }
    }

    /// Reads the floating-point contents of every initializer whose contents are not read yet.
    pub(super) fn read_all_floats(&mut self) {
        for s in 0..self.unread.len() {
            self.read_floats_at(s);
        }
        self.unread = Vec::new();
    }

    /// How many slots are taken: before the nodes are numbered, the inputs' and initializers' defined so far.
    pub(super) fn defined(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Whether `name` is defined here.
    pub(super) fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The facts `name` stands for here, at this point of the walk.
    pub(super) fn get(&self, name: &str) -> Option<&ValueFacts> {
        self.names.get(name).and_then(|&s| self.at(s))
    }

    /// The slot `name` resolves to now ([`NONE`] for a name not defined here).
    #[inline]
    pub(super) fn slot(&self, name: &str) -> u32 {
        self.names.get(name).copied().unwrap_or(NONE)
    }

    /// The facts in slot `s`, or, for a node-made value not defined yet, those of the input it shadows. (Inline
    /// always: the walk reads a value through it at every node input.)
    #[inline(always)]
    fn at(&self, s: u32) -> Option<&ValueFacts> {
        if let Some(settled) = self.settled.get(s as usize) {
            return settled.get().map(|facts| &**facts).or_else(|| self.made_from_tensor(s as usize));
        }
        match self.slots.get(s as usize)?.as_deref() {
            Some(facts) => Some(facts),
            None if self.follow == Follow::Numbers && s >= self.base => {
                let b = *self.shadows.get(&s)? as usize;
                self.settled[b].get().map(|facts| &**facts).or_else(|| self.made_from_tensor(b))
            }
            None => None,
        }
    }

    /// The facts of the initializer in slot `s` whose facts are not made yet, made from its tensor now (or those
    /// of a tensor alike, [`Alike`]); `None` for a slot set otherwise, or not set.
    #[cold]
    #[inline(never)]
    fn made_from_tensor(&self, s: usize) -> Option<&ValueFacts> {
        let tensor = (*self.unread.get(s)?)?;
        let settled = &self.settled[s];
        // Set here rather than by `get_or_init`, whose making is a call of its own.
        if settled.get().is_none() {
            let _ = settled.set(self.alike.facts(tensor));
        }
        settled.get().map(|facts| &**facts)
    }

    /// The facts in slot `s`, to change in place.
    fn facts_mut(&mut self, s: usize) -> Option<&mut ValueFacts> {
        if s >= self.settled.len() {
            return self.slots.get_mut(s)?.as_deref_mut();
        }
        self.made_from_tensor(s);
        self.settled[s].get_mut().map(Rc::make_mut)
    }

    /// Empties the input's or initializer's slot `s`: a node output of its name stands for the name from now on.
    fn unset(&mut self, s: usize) {
        self.settled[s] = OnceCell::new();
        if let Some(unread) = self.unread.get_mut(s) {
            *unread = None;
        }
    }

    /// The facts a node input named `name`, resolved to slot `s`, reads in this scope. (`name` is read only when
    /// the walk follows names: a node's name, held inline, costs a few instructions to read as text.)
    #[inline]
    pub(super) fn read(&self, s: u32, name: &(impl AsRef<str> + ?Sized)) -> Option<&ValueFacts> {
        match self.follow {
            Follow::Numbers => self.at(s),
            Follow::Names => self.get(name.as_ref()),
        }
    }

    /// [`Scope::read`], to change the facts in place.
    pub(super) fn read_mut(&mut self, s: u32, name: &str) -> Option<&mut ValueFacts> {
        let s = self.resolve(s, name)?;
        self.facts_mut(s)
    }

    /// The slot whose facts [`Scope::read`] reads.
    fn resolve(&self, s: u32, name: &str) -> Option<usize> {
        let s = match self.follow {
            Follow::Numbers if self.slots.get(s as usize).is_some_and(Option::is_none) && s >= self.base => {
                *self.shadows.get(&s)?
            }
            Follow::Numbers => s,
            Follow::Names => *self.names.get(name)?,
        };
        Some(s as usize)
    }

    /// Whether each name is made by one node at most, so that the walk follows values by number.
    pub(super) fn by_numbers(&self) -> bool {
        self.follow == Follow::Numbers
    }

    /// The slots of the node-made values: from the first to one past the last.
    pub(super) fn made_slots(&self) -> (u32, u32) {
        (self.base, self.slots.len() as u32)
    }

    /// Whether slot `s` holds a value some node of this body makes.
    pub(super) fn made_here(&self, s: u32) -> bool {
        s != NONE && s >= self.base
    }

    /// Defines the value a node makes, in slot `s`, named `name`.
    pub(super) fn define_made(&mut self, s: u32, name: &'m str, facts: ValueFacts) {
        let boxed = match self.spare.pop() {
            Some(mut spare) => {
                *spare = facts;
                spare
            }
            None => Box::new(facts),
        };
        self.define_boxed(s, name, boxed);
    }

    /// [`Scope::define_made`], with facts already in their box (one from [`Scope::spare_box`]). `name` is read as
    /// text only where it is kept (by a walk that follows names, or keeps their order).
    #[inline(always)]
    pub(super) fn define_boxed(&mut self, s: u32, name: &'m (impl AsRef<str> + ?Sized), boxed: Box<ValueFacts>) {
        // Most slots defined are empty (new, or emptied when their value was dropped): the drop is asked inline.
        if let Some(before) = self.slots[s as usize].replace(boxed) {
            drop(before);
        }
        let new = match self.follow {
            // Most bodies shadow no input: no lookup then.
            Follow::Numbers => self.shadows.is_empty() || !self.shadows.contains_key(&s),
            Follow::Names => match self.names.insert(name.as_ref(), s) {
                Some(before) => {
                    match (before as usize) < self.settled.len() {
                        true => self.unset(before as usize),
                        false => self.slots[before as usize] = None,
                    }
                    false
                }
                None => true,
            },
        };
        if let (true, Some(order)) = (new, &mut self.order) {
            order.push(name.as_ref());
        }
    }

    /// The box of the value dropped last (what it holds is not read again), or a new one: the next value defined
    /// can be built in it, then defined with [`Scope::define_boxed`] or given back with [`Scope::give_back`].
    pub(super) fn spare_box(&mut self) -> Box<ValueFacts> {
        self.spare.pop().unwrap_or_default()
    }

    /// Gives back a box from [`Scope::spare_box`] that no value was defined in.
    pub(super) fn give_back(&mut self, spare: Box<ValueFacts>) {
        self.spare.push(spare);
    }

    /// An empty list of dims with room for a few, from the last value dropped after its last reader (its box,
    /// spare, is not read again before it is reused): the next broadcasting site's output then allocates nothing.
    pub(super) fn spare_dims(&mut self) -> Vec<Dim> {
        let mut dims = self.spare.last_mut().and_then(|facts| facts.shape.0.take()).unwrap_or_default();
        dims.clear();
        dims
    }

    /// Drops the value a node made, in slot `s`, after its last reader; `name` names it.
    #[inline]
    pub(super) fn drop_made(&mut self, s: u32, name: impl Fn() -> &'m str) {
        match self.follow {
            Follow::Numbers => {
                self.spare(s);
                // Gone, the value no longer lets the input it shadowed through.
                if !self.shadows.is_empty() {
                    self.shadows.remove(&s);
                }
            }
            Follow::Names => {
                if let Some(now) = self.names.remove(name()) {
                    self.spare(now);
                }
            }
        }
        // Most bodies hold no integer ranges: no lookup of the name then.
        if !self.ranges.is_empty() {
            self.ranges.remove(name());
        }
    }

    /// Empties slot `s`, keeping its box: what the value held goes when the box is reused, and there are never
    /// more spare boxes than values alive at once, so memory still follows the graph's width.
    fn spare(&mut self, s: u32) {
        if let Some(facts) = self.slots[s as usize].take() {
            self.spare.push(facts);
        }
    }

    /// Once the walk is planned: a body walked by numbers whose values nothing reads by name (`by_name` false)
    /// forgets the names; one walked by name starts again from its inputs' and initializers' names.
    pub(super) fn settle(&mut self, producers: &Producers<'m>, by_name: bool) {
        match self.follow {
            Follow::Numbers if !by_name => self.names = HashMap::default(),
            Follow::Numbers => {}
            Follow::Names => {
                let base = self.base;
                self.names.retain(|_, s| *s < base);
                for (&v, &b) in &self.shadows {
                    self.names.insert(producers.name(v), b);
                }
            }
        }
    }

    /// The slots holding a value now.
    #[cfg(test)]
    pub(super) fn alive(&self) -> Vec<u32> {
        let held =
            |s: usize| if s < self.settled.len() { self.at(s as u32).is_some() } else { self.slots[s].is_some() };
        (0..self.slots.len() as u32).filter(|&s| held(s as usize)).collect()
    }

    /// Every value's facts in definition order, each name once with what it stands for at the end.
    pub(super) fn into_recorded(mut self) -> Vec<(String, ValueFacts)> {
        self.read_all_floats();
        let order = self.order.take().unwrap_or_default();
        let mut values = Vec::with_capacity(order.len());
        for name in order {
            let Some(&s) = self.names.get(name) else { continue };
            let s = match s >= self.base && self.slots[s as usize].is_none() && self.follow == Follow::Numbers {
                true => self.shadows.get(&s).copied().unwrap_or(s),
                false => s,
            };
            let facts = match self.settled.get_mut(s as usize) {
                Some(settled) => settled.take().map(Rc::unwrap_or_clone),
                None => self.slots[s as usize].take().map(|b| *b),
            };
            if let Some(facts) = facts {
                values.push((name.to_string(), facts));
            }
        }
        values
    }
}

/// Which node makes each value of a body, found by name once per node output and once per node input: the walk's
/// order, when each value has had its last reader, and which value each node input reads are then worked out with
/// no further lookup in a table as large as the graph (on a million nodes, every such lookup misses the caches).
/// Values are numbered node by node, output by output, from the scope's `base` slot.
pub(super) struct Producers<'m> {
    nodes: &'m [NodeProto],
    /// The slot of the first node-made value.
    pub(super) base: u32,
    /// The slot of each node's first value, and one past the last value.
    pub(super) first_output: Vec<u32>,
    /// The node making each value, by slot minus `base`.
    pub(super) value_node: Vec<u32>,
    /// The slot each node input reads, node by node: a node-made value, an input or initializer, or [`NONE`].
    reads: Vec<u32>,
    /// Where each node's inputs start in `reads`, and one past the last.
    first_read: Vec<u32>,
    /// Whether every node's inputs are made by nodes before it (or by none), as ONNX requires.
    pub(super) in_order: bool,
}

impl<'m> Producers<'m> {
    /// Numbers the values `nodes` make in `scope`, calling `each_output` with every named output in order (node,
    /// name, whether the name was defined before: by an input, an initializer or another output); notes whether
    /// every node's inputs come before it. A model file
    /// holds fewer than 2^32 names: numbering them by `u32` halves the tables.
    pub(super) fn of(
        nodes: &'m [NodeProto],
        scope: &mut Scope<'m>,
        mut each_output: impl FnMut(usize, &'m str, bool),
    ) -> Producers<'m> {
        let values: usize = nodes.iter().map(|n| n.output.len()).sum();
        let base = scope.slots.len() as u32;
        scope.base = base;
        scope.names.reserve(values);
        let mut first_output = Vec::with_capacity(nodes.len() + 1);
        let mut value_node = Vec::with_capacity(values);
        let mut inputs = 0;
        for (i, node) in nodes.iter().enumerate() {
            first_output.push(base + value_node.len() as u32);
            inputs += node.input.len();
            for out in &node.output {
                let s = base + value_node.len() as u32;
                value_node.push(i as u32);
                if out.is_empty() {
                    continue;
                }
                let before = scope.names.insert(out.as_str(), s);
                match before {
                    Some(b) if b < base => drop(scope.shadows.insert(s, b)),
                    Some(_) => scope.follow = Follow::Names,
                    None => {}
                }
                each_output(i, out.as_str(), before.is_some());
            }
        }
        first_output.push(base + value_node.len() as u32);
        scope.slots.resize_with(base as usize + values, || None);
        let mut reads = Vec::with_capacity(inputs);
        let mut first_read = Vec::with_capacity(nodes.len() + 1);
        let mut in_order = true;
        // Where each name is made once at most, a name the node just before makes is that node's value: most
        // nodes read their predecessor's output, which is then found without a lookup.
        let by_numbers = scope.follow == Follow::Numbers;
        for (i, node) in nodes.iter().enumerate() {
            first_read.push(reads.len() as u32);
            let before = match (by_numbers, i.checked_sub(1)) {
                (true, Some(p)) => &nodes[p].output[..],
                _ => &[],
            };
            for name in &node.input {
                let k = before.iter().position(|o| o == name && !o.is_empty());
                let s = k.map_or_else(|| scope.slot(name), |k| first_output[i - 1] + k as u32);
                reads.push(s);
                if s != NONE && s >= base {
                    in_order &= (value_node[(s - base) as usize] as usize) < i;
                }
            }
        }
        first_read.push(reads.len() as u32);
        Producers { nodes, base, first_output, value_node, reads, first_read, in_order }
    }

    /// The slots node `i`'s inputs read, in input order.
    pub(super) fn inputs(&self, i: usize) -> &[u32] {
        &self.reads[self.first_read[i] as usize..self.first_read[i + 1] as usize]
    }

    /// The slot of node `i`'s first output.
    pub(super) fn first_output(&self, i: usize) -> u32 {
        self.first_output[i]
    }

    /// The values node `i` reads that nodes of the body make, in input order.
    pub(super) fn reads(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        self.inputs(i).iter().copied().filter(|&s| s != NONE && s >= self.base)
    }

    /// The nodes making node `i`'s inputs, in input order (inputs no node of the body makes left out).
    pub(super) fn input_nodes(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.reads(i).map(|s| self.value_node[(s - self.base) as usize] as usize)
    }

    /// The name of the node-made value in slot `s`.
    pub(super) fn name(&self, s: u32) -> &'m str {
        let node = self.value_node[(s - self.base) as usize] as usize;
        &self.nodes[node].output[(s - self.first_output[node]) as usize]
    }
}

/// A graph or function body, as far as the walk needs it.
pub(super) struct Body<'m> {
    pub(super) nodes: &'m [NodeProto],
    /// Inputs with the facts they start with.
    pub(super) inputs: Vec<(&'m str, ValueFacts)>,
    pub(super) initializers: &'m [TensorProto],
    pub(super) sparse_initializers: &'m [SparseTensorProto],
    pub(super) declared: Vec<&'m ValueInfoProto>,
    /// How many of `declared`, from the front, declare graph inputs.
    pub(super) declared_inputs: usize,
    pub(super) outputs: Vec<&'m str>,
    /// Graphs record their facts; a function body, whose facts depend on the call site, only when asked.
    pub(super) record: bool,
}

impl<'m> Body<'m> {
    pub(super) fn graph(g: &'m GraphProto) -> Body<'m> {
        Body {
            nodes: &g.node,
            inputs: g.input.iter().map(|vi| (vi.name(), ValueFacts::unknown())).collect(),
            initializers: &g.initializer,
            sparse_initializers: &g.sparse_initializer,
            declared: g.input.iter().chain(&g.value_info).chain(&g.output).collect(),
            declared_inputs: g.input.len(),
            outputs: g.output.iter().map(|vi| vi.name()).collect(),
            record: true,
        }
    }
}

/// Where a walk is: graph path, enclosing scopes, opset, and the function call it is inside, if any.
pub(super) struct Env<'m, 'a> {
    pub(super) path: String,
    pub(super) loc: Vec<GraphStep>,
    pub(super) outer: &'a [&'a Scope<'m>],
    pub(super) opset: i64,
    pub(super) call: Option<&'a CallContext<'m>>,
    pub(super) depth: usize,
}

/// The call of a model-local function: where its sites are reported and how its attributes resolve.
pub(super) struct CallContext<'m> {
    pub(super) attrs: CallSite<'m>,
    pub(super) graph: String,
    pub(super) node: String,
    pub(super) node_index: usize,
    /// Frames of the enclosing calls, outermost first; the innermost frame's node is filled per site.
    pub(super) frames: Vec<String>,
    pub(super) inner_nodes: Vec<String>,
}

#[path = "scope_alike.rs"]
mod alike;

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
