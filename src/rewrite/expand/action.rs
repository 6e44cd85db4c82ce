//! What one site became ([`Action`]), its place and steps held in one string laid out as the text summary shows
//! them, and how a plan puts that string together ([`ActionText`]).

use std::borrow::Cow;
use std::fmt;

use smallvec::SmallVec;

use crate::onnx::location::GRAPH_NODE;
use crate::sizes::shape::{Dim, Shape};
use crate::sys::escape::{has_marks, name as mark, plain, plain_ascii, NAME_CHARS};

/// What one site became: where it is, a step per input made explicit (`B [3] -> Expand to [2, 3]`), and the
/// conditions on symbols it still holds under.
///
/// Its place and steps are one string, `GRAPH › NODE (OP): STEP; STEP` (the op left out where the node's label is
/// an unnamed node's `#INDEX (OP)`, which ends with it; `GRAPH › ` left out for the main graph, [`MAIN`]): one
/// allocation a site where a large model's plan made five, and, where every part is shown as it is written, the
/// very text of the site's line in the summary, which then writes it without looking at its parts again.
///
/// Every site made explicit keeps one until the summary is written, after the model: 100,000 of them were 17 MB of
/// `expand`'s peak RSS (90.3 MB; 73.5 without them). Hence offsets of 32 bits, one step held inline, and the main
/// graph's path, where nearly every site is, not repeated: 72 bytes and a text 9 bytes shorter, where they were 112
/// (82.3 MB). The list of actions is what grows: the texts' blocks mostly reuse what planning frees. A step's text
/// after its name shared between sites (` [64] -> Expand to [8, 64]`, an `Arc` a step) took 0.2 MB less and 17 M
/// instructions more.
#[derive(Clone)]
pub struct Action {
    text: Box<str>,
    /// The lengths of the graph's path, the node's label and the op.
    graph: u32,
    node: u32,
    op: u32,
    steps: Steps,
    /// The graph is [`MAIN`], and `text` starts with the node.
    main: bool,
    /// The op is the end of the node's label (`#INDEX (OP)`), not written after it.
    op_in_node: bool,
    /// The steps' names are marked in `text` ([`crate::sys::escape::name`]), as [`Action::new`] takes them;
    /// otherwise each step is its name as written, then the rest.
    marked: bool,
    /// Every part is shown as it is written and no condition is left: `text`, after `MAIN › ` for the main graph,
    /// is the summary's line.
    shown: bool,
    /// The conditions on symbols the site still holds under (`N ∈ {1, 2}`): the rewrite makes the broadcast
    /// explicit, not valid for other sizes.
    pub conditions: Vec<String>,
}

/// Each step of an [`Action`]: its end in the text, and the length of the name it starts with. The first held
/// inline, its end 0 where there is none (a step ends after the `: ` before it); the others, which few sites have,
/// behind one pointer: 16 bytes, where a `SmallVec` of one inline took 24.
#[derive(Clone)]
struct Steps {
    first: (u32, u32),
    more: Option<Box<MoreSteps>>,
}

/// The steps of an [`Action`] after its first: a list behind a box of its own, so that [`Steps`] holds one pointer.
#[derive(Clone)]
struct MoreSteps(Vec<(u32, u32)>);

impl Steps {
    fn of(steps: &[(u32, u32)]) -> Steps {
        match steps {
            [] => Steps { first: (0, 0), more: None },
            [first] => Steps { first: *first, more: None },
            [first, more @ ..] => Steps { first: *first, more: Some(Box::new(MoreSteps(more.to_vec()))) },
        }
    }

    fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let first = (self.first.0 != 0).then_some(self.first);
        first.into_iter().chain(self.more.iter().flat_map(|more| more.0.iter().copied()))
    }
}

/// The main graph's path, as the analysis names it: the graph of nearly every site, which an [`Action`]'s text
/// leaves out.
const MAIN: &str = crate::onnx::location::MAIN_GRAPH;
/// [`MAIN`] is shown as it is written (printable ASCII, short): not checked again at each site.
const MAIN_SHOWN: bool = true;
/// [`MAIN`] and ` › `, before the node: put back in one piece.
const MAIN_AT: &str = "main › ";

/// A site whose text (its graph's path, node, op and steps) comes to 4 GiB or more: more than an [`Action`]'s
/// offsets of 32 bits reach. No name of a loaded model is that long ([`crate::onnx::long_fields`] refuses one), but
/// the parts of one site together may be, in a model of several GiB of names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a site's text (its graph's path, node, op and steps) comes to 4 GiB or more")]
pub struct TooLong;

/// An offset or a length in an action's text, in 32 bits; `None` past them.
fn short(n: usize) -> Option<u32> {
    u32::try_from(n).ok()
}

/// Where the node's label starts in an action's text: after `GRAPH › `, or at once for the main graph.
fn node_start(main: bool, graph: u32) -> usize {
    if main {
        0
    } else {
        graph as usize + GRAPH_NODE.len()
    }
}

/// Where the steps start in an action's text: after `NODE (OP): `, or `NODE: ` where the node's label ends with
/// the op.
fn steps_start(node_end: usize, op_in_node: bool, op: u32) -> usize {
    node_end + if op_in_node { 0 } else { 3 + op as usize } + 2
}

impl Action {
    /// An action of these parts; each step with its names marked ([`crate::sys::escape::name`]). `Err` when they
    /// come to 4 GiB or more.
    pub fn new<S: AsRef<str>>(
        graph: &str,
        node: &str,
        op: &str,
        steps: &[S],
        conditions: Vec<String>,
    ) -> Result<Action, TooLong> {
        let mut text = ActionText::default();
        text.begin(graph, node, op);
        for step in steps {
            text.push_sep();
            text.text.push_str(step.as_ref());
            text.push_step(0);
        }
        let mut action = text.take(conditions)?;
        (action.marked, action.shown) = (true, false);
        Ok(action)
    }

    /// The graph's path (`main`, `main/If_0/then_branch`).
    pub fn graph(&self) -> &str {
        match self.main {
            true => MAIN,
            false => &self.text[..self.graph as usize],
        }
    }

    fn node_end(&self) -> usize {
        node_start(self.main, self.graph) + self.node as usize
    }

    /// The node's name, or `#INDEX (OP)` for an unnamed one.
    pub fn node(&self) -> &str {
        &self.text[node_start(self.main, self.graph)..self.node_end()]
    }

    pub fn op(&self) -> &str {
        let (node_end, op) = (self.node_end(), self.op as usize);
        match self.op_in_node {
            true => &self.text[node_end - 1 - op..node_end - 1],
            false => &self.text[node_end + 2..node_end + 2 + op],
        }
    }

    /// Each step's text in `text`, with the length of the name it starts with.
    fn step_texts(&self) -> impl Iterator<Item = (&str, usize)> + '_ {
        let mut start = steps_start(self.node_end(), self.op_in_node, self.op);
        self.steps.iter().map(move |(end, name)| {
            let step = &self.text[start..end as usize];
            start = end as usize + 2;
            (step, name as usize)
        })
    }

    /// The steps as a person reads them, names whole and unescaped: one line per input made explicit, e.g.
    /// `B [3] -> Expand to [2, 3]`.
    pub fn steps(&self) -> impl Iterator<Item = Cow<'_, str>> + '_ {
        let marked = self.marked;
        self.step_texts().map(move |(step, _)| match marked {
            true => plain(step),
            false => Cow::Borrowed(step),
        })
    }

    /// The steps with their names marked, for renderers that show each name escaped and shortened.
    pub(crate) fn marked_steps(&self) -> impl Iterator<Item = Cow<'_, str>> + '_ {
        let marked = self.marked;
        self.step_texts().map(move |(step, name)| match marked {
            true => Cow::Borrowed(step),
            false => {
                let mut out = String::with_capacity(step.len() + 6);
                mark(&step[..name]).push_to(&mut out);
                out.push_str(&step[name..]);
                Cow::Owned(out)
            }
        })
    }

    /// Appends the site's line as the text summary shows it after the input's path, `GRAPH › NODE (OP): STEPS`,
    /// when every part of it is shown as it is written; returns where the steps start in `line`. `None`, and `line`
    /// as it was, for any other action.
    #[inline]
    pub(crate) fn push_shown(&self, line: &mut String) -> Option<usize> {
        if !self.shown {
            return None;
        }
        if self.main {
            line.push_str(MAIN_AT);
        }
        let start = line.len() + steps_start(self.node_end(), self.op_in_node, self.op);
        line.push_str(&self.text);
        Some(start)
    }
}

impl PartialEq for Action {
    fn eq(&self, other: &Action) -> bool {
        (self.graph(), self.node(), self.op(), &self.conditions)
            == (other.graph(), other.node(), other.op(), &other.conditions)
            && self.marked_steps().eq(other.marked_steps())
    }
}

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Action")
            .field("graph", &self.graph())
            .field("node", &self.node())
            .field("op", &self.op())
            .field("steps", &self.marked_steps().collect::<Vec<_>>())
            .field("conditions", &self.conditions)
            .finish()
    }
}

/// Where a plan puts each [`Action`]'s text together, one buffer reused from site to site, with the text after the
/// name of the last few steps between shapes of known sizes: consecutive sites mostly share it
/// (` [64] -> Expand to [8, 64]`), which is then copied rather than written and checked again.
#[derive(Default)]
pub(crate) struct ActionText {
    text: String,
    graph: u32,
    node: u32,
    op: u32,
    /// The graph is [`MAIN`], left out of `text`.
    main: bool,
    op_in_node: bool,
    steps: SmallVec<[(u32, u32); 2]>,
    /// An offset or a length did not fit in 32 bits since [`ActionText::begin`] ([`TooLong`]): what is held of it
    /// is wrong, and [`ActionText::finish`] gives no action.
    too_long: bool,
    shown: bool,
    /// A step's text after its name holds a mark of its own (a `dim_param` may): the steps are kept marked.
    marks_in_steps: bool,
    /// The last graph's path other than [`MAIN`], and whether it is shown as it is written: the sites of a graph
    /// follow one another. `text` starts with it and ` › ` unless `main`.
    last_graph: Option<(String, bool)>,
    rests: Vec<Rest>,
    /// The entry of `rests` the next new one replaces, once there are [`RESTS`].
    next_rest: usize,
}

/// The text after a step's name, ` FROM -> HOW TO`, between shapes of known sizes.
struct Rest {
    from: SmallVec<[u64; 6]>,
    how: &'static str,
    to: SmallVec<[u64; 6]>,
    after: &'static str,
    text: String,
    /// Shown as it is written ([`plain_ascii`]).
    plain: bool,
}

/// How many [`Rest`]s are kept: a model's sites go to a few shapes from a few others.
const RESTS: usize = 4;

/// The sizes of a shape of known sizes.
fn known_sizes(shape: &Shape) -> Option<SmallVec<[u64; 6]>> {
    shape.dims()?.iter().map(Dim::known).collect()
}

/// Whether `shape` is of known sizes, `sizes`.
fn of_sizes(shape: &Shape, sizes: &[u64]) -> bool {
    shape.dims().is_some_and(|d| d.len() == sizes.len() && d.iter().zip(sizes).all(|(d, s)| d.known() == Some(*s)))
}

/// Whether two of the plan's texts (`Expand to`, ...) are the same one, told by where they are held: each is a
/// literal, asked for at every step, and comparing their bytes cost more than the rest of the lookup. (Two
/// copies of one literal told apart only miss the kept text, which is then written again.)
fn same_text(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b)
}

impl ActionText {
    /// Starts the action of the node `node` (its label) of op `op` in the graph at `graph`.
    pub fn begin(&mut self, graph: &str, node: &str, op: &str) {
        self.steps.clear();
        (self.marks_in_steps, self.too_long) = (false, false);
        use crate::onnx::location::{part_shown_as_written, shown_as_written};
        // The text starts with the path and ` › `, kept from the last site when its graph is the same; the main
        // graph's is left out.
        let graph_shown = match &self.last_graph {
            _ if graph == MAIN => {
                self.text.clear();
                MAIN_SHOWN
            }
            Some((last, shown)) if !self.main && last == graph => {
                self.text.truncate(graph.len() + GRAPH_NODE.len());
                *shown
            }
            _ => {
                let shown = shown_as_written(graph, None, None);
                self.last_graph = Some((graph.to_string(), shown));
                self.text.clear();
                self.text.push_str(graph);
                self.text.push_str(GRAPH_NODE);
                shown
            }
        };
        self.main = graph == MAIN;
        self.shown = graph_shown && part_shown_as_written(node) && part_shown_as_written(op);
        (self.graph, self.node, self.op) = (self.short(graph.len()), self.short(node.len()), self.short(op.len()));
        self.text.push_str(node);
        // As `crate::onnx::location::at` leaves it out.
        self.op_in_node = crate::onnx::location::labelled_with(node, op);
        if !self.op_in_node {
            self.text.push_str(" (");
            self.text.push_str(op);
            self.text.push(')');
        }
        self.text.push_str(": ");
    }

    /// `n` in 32 bits, noting the action too long when it does not fit.
    fn short(&mut self, n: usize) -> u32 {
        short(n).unwrap_or_else(|| {
            self.too_long = true;
            0
        })
    }

    /// Notes a step ending where the text does now, starting with a name of `name` bytes.
    fn push_step(&mut self, name: usize) {
        let step = (self.short(self.text.len()), self.short(name));
        self.steps.push(step);
    }

    fn push_sep(&mut self) {
        if !self.steps.is_empty() {
            self.text.push_str("; ");
        }
    }

    /// A step: what the input `name` of shape `from` became, `NAME FROM -> HOW TO` followed by `after`, put together
    /// without a formatter.
    pub fn step(&mut self, name: &str, from: &Shape, how: &'static str, to: &Shape, after: &'static str) {
        self.push_sep();
        self.text.push_str(name);
        // Shown as written: the name whole, and the rest, which starts the text between this name and the next.
        let name_shown = name.len() <= NAME_CHARS && plain_ascii(name);
        let cached = self.rests.iter().find(|r| {
            same_text(r.how, how) && same_text(r.after, after) && of_sizes(from, &r.from) && of_sizes(to, &r.to)
        });
        let plain_rest = match cached {
            Some(rest) => {
                self.text.push_str(&rest.text);
                rest.plain
            }
            None => self.push_rest(from, how, to, after),
        };
        self.push_step(name.len());
        self.shown &= plain_rest && name_shown;
    }

    /// ` FROM -> HOW TO` followed by `after`, kept for the next steps when both shapes are of known sizes; whether it
    /// is shown as it is written.
    fn push_rest(&mut self, from: &Shape, how: &'static str, to: &Shape, after: &'static str) -> bool {
        let start = self.text.len();
        self.text.push(' ');
        from.push_to(&mut self.text);
        self.text.push_str(" -> ");
        self.text.push_str(how);
        self.text.push(' ');
        to.push_to(&mut self.text);
        self.text.push_str(after);
        let rest = &self.text[start..];
        let plain = plain_ascii(rest);
        self.marks_in_steps |= !plain && has_marks(rest);
        if let (Some(from), Some(to)) = (known_sizes(from), known_sizes(to)) {
            let rest = Rest { from, how, to, after, text: rest.to_string(), plain };
            match self.rests.len() < RESTS {
                true => self.rests.push(rest),
                false => self.rests[self.next_rest] = rest,
            }
            self.next_rest = (self.next_rest + 1) % RESTS;
        }
        plain
    }

    /// The action put together since [`ActionText::begin`], with `conditions`; `Err` when its text comes to 4 GiB
    /// or more.
    pub fn finish(&mut self, conditions: Vec<String>) -> Result<Action, TooLong> {
        // (A text too long holds no offsets to mark its steps' names by.)
        if !self.marks_in_steps || self.too_long {
            return self.take(conditions);
        }
        // A step whose text after its name holds a mark is kept as its text with the name marked was, so that
        // its plain text is what it always was: the names are marked now.
        let start = self.steps_start();
        let (text, steps) = (std::mem::take(&mut self.text), std::mem::take(&mut self.steps));
        self.text.push_str(&text[..start]);
        let mut from = start;
        for (end, name) in steps {
            let (end, name) = (end as usize, name as usize);
            self.push_sep();
            mark(&text[from..from + name]).push_to(&mut self.text);
            self.text.push_str(&text[from + name..end]);
            self.push_step(0);
            from = end + 2;
        }
        let mut action = self.take(conditions)?;
        action.marked = true;
        Ok(action)
    }

    fn steps_start(&self) -> usize {
        steps_start(node_start(self.main, self.graph) + self.node as usize, self.op_in_node, self.op)
    }

    /// The action as the text stands, its steps' names not marked; `Err` when an offset or a length of it did not
    /// fit in 32 bits. (Every one is checked, [`ActionText::short`]: none is held that does not fit.)
    fn take(&mut self, conditions: Vec<String>) -> Result<Action, TooLong> {
        if self.too_long {
            return Err(TooLong);
        }
        Ok(Action {
            text: self.text.as_str().into(),
            graph: self.graph,
            node: self.node,
            op: self.op,
            main: self.main,
            op_in_node: self.op_in_node,
            steps: Steps::of(&self.steps),
            marked: false,
            shown: self.shown && conditions.is_empty(),
            conditions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizes::shape::parse_shape;

    /// Sites' parts (graph, node, op, [(input, its shape, the target)], conditions), as a plan meets them.
    type Parts<'a> = (&'a str, &'a str, &'a str, Vec<(&'a str, &'a str, &'a str)>, Vec<String>);

    fn parts() -> Vec<Parts<'static>> {
        vec![
            ("main", "node_0", "Sub", vec![("small_0", "64", "8,64")], vec![]),
            ("main", "#3 (Add)", "Add", vec![("a", "1,64", "8,64"), ("b", "8,1", "8,64")], vec![]),
            ("main", "#3 (Add)", "Mul", vec![("a", "64", "8,64")], vec![]),
            ("main/If_0/then_branch", "n", "Add", vec![("x", "", "N,64")], vec!["N ∈ {1, 8}".into()]),
            ("main", "bad\nname", "Add", vec![("x", "64", "8,64")], vec![]),
            ("main", "n", "Add", vec![("x\u{FDD0}y", "64", "8,64")], vec![]),
            ("main", "n", "Add", vec![("x", "N\u{FDD0}M", "?,64"), ("y", "*", "8,64")], vec![]),
            ("main", "n", "Add", vec![(":x", "64", "8,64")], vec![]),
            ("main", "n", "Add", vec![("x", ":a", "8,64")], vec![]),
            ("main", "n", "Sum", vec![("a", "1", "8,64"), ("b", "64", "8,64"), ("c", "8,1", "8,64")], vec![]),
            ("main", "n", "Add", vec![], vec![]),
        ]
    }

    /// The action a plan builds of these parts, each step's target reached by `Expand to` and followed by
    /// `suffix`, and each step's text with its input's name marked, as it should read.
    fn built(parts: &Parts<'_>, suffix: &'static str) -> (Action, Vec<String>) {
        let (graph, node, op, steps, conditions) = parts;
        let mut text = ActionText::default();
        text.begin(graph, node, op);
        let mut written = Vec::new();
        for (input, from, to) in steps {
            let (from, to) = (parse_shape(from), parse_shape(to));
            text.step(input, &from, "Expand to", &to, suffix);
            written.push(format!("{} {from} -> Expand to {to}{suffix}", mark(input)));
        }
        (text.finish(conditions.clone()).expect("a short text"), written)
    }

    #[test]
    fn an_action_keeps_its_parts_and_each_steps_text_with_and_without_marks() {
        for parts in parts() {
            let (action, written) = built(&parts, " (computed in the graph)");
            let (graph, node, op, _, conditions) = parts;
            assert_eq!((action.graph(), action.node(), action.op()), (graph, node, op));
            assert_eq!(action.marked_steps().collect::<Vec<_>>(), written, "{node}");
            let plain_steps: Vec<_> = written.iter().map(|s| plain(s)).collect();
            assert_eq!(action.steps().collect::<Vec<_>>(), plain_steps, "{node}");
            assert_eq!(action.conditions, conditions);
            assert_eq!(Ok(action), Action::new(graph, node, op, &written, conditions.clone()));
        }
    }

    #[test]
    fn an_action_is_no_larger_than_the_72_bytes_a_large_models_sites_were_measured_with() {
        assert!(std::mem::size_of::<Action>() <= 72, "{}", std::mem::size_of::<Action>());
    }

    #[test]
    fn the_main_graphs_path_left_out_of_the_text_is_put_back_as_the_summary_shows_it() {
        assert_eq!(MAIN_AT, format!("{MAIN}{GRAPH_NODE}"));
        assert_eq!(MAIN_SHOWN, crate::onnx::location::shown_as_written(MAIN, None, None));
    }

    #[test]
    fn an_action_is_its_summary_line_exactly_where_every_part_is_shown_as_written() {
        let mut shown = 0;
        for parts in parts() {
            let (action, written) = built(&parts, "");
            let (graph, node, op, steps, conditions) = parts;
            // What the summary's general way makes of the parts when they are shown as they are written.
            let mut expected = "lead: ".to_string();
            let as_written = conditions.is_empty()
                && crate::onnx::location::push_plain_at(&mut expected, graph, Some(node), Some(op))
                && {
                    expected.push_str(": ");
                    crate::sys::escape::push_shown_as_written(&mut expected, &written.join("; "))
                };
            let mut line = "lead: ".to_string();
            let start = action.push_shown(&mut line);
            assert_eq!(start.is_some(), as_written, "{node} {steps:?}");
            if let Some(start) = start {
                shown += 1;
                assert_eq!(line, expected);
                assert_eq!(
                    &line[..start],
                    format!("lead: {}: ", crate::onnx::location::at(graph, Some(node), Some(op)))
                );
            }
        }
        assert_eq!(shown, 6, "the first three sites, the one whose shape starts with a colon and the last two");
    }
}
