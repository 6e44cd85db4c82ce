//! `check`: turns an analysis into findings and a summary. Text and JSON renderings both come from `Report`.

pub mod index_report;
pub mod range_report;
pub mod selection;
pub mod shape_report;
#[cfg(feature = "verify")]
pub mod verify;
pub mod witness;

use crate::analysis::{Analysis, Site};
use crate::diagnostic::{Code, Severity};
use crate::onnx::tensor::elem_type_name;
use crate::rules::ranges::Decision;
use crate::rules::site::NameForm;
use crate::rules::{Rule, Verdict, VerdictKind, ViolationKind};
use crate::sizes::shape::Shape;
use crate::sys::escape::{name, Message};

pub use crate::check::selection::{CheckOptions, Level, RuleSelection, Selector, UnknownCode};

/// One site as reported: the analysis record plus its finding, if any. It borrows what its site borrows (see
/// [`Site`]); a report that lists its sites keeps [`SiteReport::into_owned`]'s copy.
#[derive(Clone, Debug)]
pub struct SiteReport<'a> {
    pub site: Site<'a>,
    pub code: Option<Code>,
    pub conditions: Vec<String>,
    pub axis: Option<usize>,
    pub offending_input: Option<String>,
    /// What a conditional site's conditions come to over the ranges of sizes asked about (`--range`, a profile).
    pub over_ranges: Option<Decision>,
}

impl SiteReport<'_> {
    /// The report owning its site's names and shapes.
    pub fn into_owned(self) -> SiteReport<'static> {
        let SiteReport { site, code, conditions, axis, offending_input, over_ranges } = self;
        SiteReport { site: site.into_owned(), code, conditions, axis, offending_input, over_ranges }
    }

    /// The site in words: what its finding says, or how it broadcasts. Built on demand: most sites of a large model
    /// are never shown one by one.
    pub fn message(&self) -> Message {
        let mut text = String::new();
        self.write_message(&mut text, NameForm::Marked);
        Message::from(text)
    }

    /// Appends [`SiteReport::message`]'s text to `out`, its names in `form`: JSON output writes every site's
    /// message, plain, into one buffer it keeps.
    pub fn write_message(&self, out: &mut String, form: NameForm) {
        write_message(out, &self.site, (self.code, &self.conditions, self.over_ranges.as_ref()), form)
    }
}

/// A line of output: something wrong or worth knowing, at a node.
#[derive(Clone, Debug)]
pub struct Finding {
    pub code: Code,
    pub severity: Severity,
    pub graph: String,
    pub node: Option<String>,
    pub op: Option<String>,
    /// What is wrong, with the names it mentions marked: `message.plain()` is the text, `message.one_line()` how
    /// one-line formats show it (see [`crate::sys::escape`]).
    pub message: crate::sys::escape::Message,
    /// What a conditional finding of an op's shapes (conditional-shape) holds only under, typed; empty otherwise.
    pub conditions: Vec<crate::rules::Condition>,
    /// The finding's site: its index in [`Report::sites`] when the report lists its sites; `None` for a finding
    /// about the model rather than a site (an undefined value, a cycle), or when the sites were not kept.
    pub site: Option<usize>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub sites: usize,
    pub same: usize,
    pub broadcast: usize,
    pub violations: usize,
    pub conditional: usize,
    pub unknown: usize,
    pub errors: usize,
    pub warnings: usize,
}

impl Summary {
    /// Counts `n` sites of this verdict.
    fn count(&mut self, verdict: VerdictKind, n: usize) {
        self.sites += n;
        match verdict {
            VerdictKind::Same => self.same += n,
            VerdictKind::Broadcast => self.broadcast += n,
            VerdictKind::Violation => self.violations += n,
            VerdictKind::Conditional => self.conditional += n,
            VerdictKind::Unknown => self.unknown += n,
        }
    }
}

/// A site whose shapes are not known well enough to decide it, and what is unknown: not a finding unless
/// `--strict` (or `--warn`/`--deny undecided-broadcast`) asks for proof, but named in the text output so that the
/// summary's `unknown` count is never a mystery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecided {
    pub graph: String,
    pub node: String,
    pub op: String,
    /// What is unknown, in words: `x's rank`, `y's dims 0 and 2`.
    pub unknown: String,
}

#[derive(Clone, Debug)]
pub struct Report {
    /// Every site, in the order the analysis reached them; only the findings' sites with
    /// [`Judge::keeping_finding_sites`], none when the judge kept none.
    pub sites: Vec<SiteReport<'static>>,
    pub findings: Vec<Finding>,
    /// The undecided sites no finding names (without `--strict`).
    pub undecided: Vec<Undecided>,
    pub summary: Summary,
    /// Ops without an inference rule and how many nodes of each: what left shapes unknown.
    pub opaque: std::collections::BTreeMap<String, usize>,
    /// The ranges of sizes the model was checked over, and its safe ranges when asked for.
    pub ranges: Option<crate::check::range_report::RangeReport>,
}

impl Report {
    /// The run fails when any finding is an error.
    pub fn failed(&self) -> bool {
        self.summary.errors > 0
    }
}

/// Builds the report of an analysed model.
pub fn check(analysis: &Analysis, options: CheckOptions) -> Report {
    let mut judge = Judge::new(options, true);
    judge.sites.reserve(analysis.sites.len());
    analysis.sites.iter().for_each(|site| judge.judge(site.borrowed()));
    judge.finish(analysis)
}

/// Judges sites one at a time, as [`crate::analysis::analyze_model_each`] hands them over, and makes the report
/// once the analysis is complete. [`check`] goes through it too.
pub struct Judge {
    options: CheckOptions,
    keep_sites: bool,
    /// Whether the sites of findings are kept (when not every site is): see [`Judge::keeping_finding_sites`].
    finding_sites: bool,
    sites: Vec<SiteReport<'static>>,
    /// Findings of sites; the analysis's notes come before them in the report.
    findings: Vec<Finding>,
    undecided: Vec<Undecided>,
    summary: Summary,
    /// The ranges the conditional sites are decided over, when there are any.
    ranges: Option<crate::check::range_report::Ranged>,
}

impl Judge {
    /// `keep_sites`: whether the report lists every site, or only findings and the summary.
    pub fn new(options: CheckOptions, keep_sites: bool) -> Judge {
        Judge {
            options,
            keep_sites,
            finding_sites: false,
            sites: Vec::new(),
            findings: Vec::new(),
            undecided: Vec::new(),
            summary: Summary::default(),
            ranges: None,
        }
    }

    /// Decides every conditional site over the model's ranges ([`crate::analysis::prepare`] matches them to the
    /// model): a site that holds at every size is not a finding, one that fails somewhere is a
    /// `broadcast-violation` at its smallest failing sizes, one left undecided stays `conditional-broadcast`.
    pub fn with_ranges(mut self, ranges: Option<crate::rules::ranges::ModelRanges>) -> Judge {
        self.ranges = ranges.map(crate::check::range_report::Ranged::new);
        self
    }

    /// Keeps the report of each site that has a finding (each finding's `site` indexes [`Report::sites`], which
    /// holds only these) and of no other site: a caller that shows every finding with its site, but lists all the
    /// sites only on request, keeps what a judge that keeps no site keeps, plus one report per finding.
    pub fn keeping_finding_sites(mut self) -> Judge {
        self.finding_sites = true;
        self
    }

    pub fn judge(&mut self, site: Site<'_>) {
        // Most sites hold, and a report that lists no site keeps none of them: such a site is only counted, without
        // building its report (which moved the whole site once more, and dropped it with the report).
        if !self.keep_sites && self.ranges.is_none() && site.type_mismatch.is_none() {
            let kind = site.verdict.kind();
            if holds_quietly(site.rule, kind, &self.options) {
                debug_assert!(describe(&site, self.options, None).0.is_none(), "a quiet site has no finding");
                self.summary.count(kind, 1);
                return;
            }
        }
        self.judge_with(site, |_| {});
    }

    /// Judges one site and hands its report to `each` before keeping (or dropping) it: output that lists every
    /// site writes it there, so that memory does not grow with the number of sites.
    pub fn judge_with(&mut self, site: Site<'_>, each: impl FnOnce(&SiteReport<'_>)) {
        let options = self.options;
        let (code, axis, conditions, over_ranges) = describe(&site, options, self.ranges.as_mut());
        let offending_input = site.offending_input().map(|i| site.inputs[i].name.to_string());
        let report = SiteReport { site, code, conditions, axis, offending_input, over_ranges };
        if let Some(ranges) = self.ranges.as_mut() {
            match (&report.over_ranges, reported_verdict(&report)) {
                (Some(Decision::Fails { witness, .. }), _) => ranges.failed(&report.site, witness),
                (None, VerdictKind::Violation) => ranges.violated(),
                _ => {}
            }
        }
        let site = &report.site;
        self.summary.count(reported_verdict(&report), 1);
        let mut found = false;
        if let Some(code) = report.code {
            let severity = match code {
                // Strict means proof: a site that holds only for some sizes fails it, an explicit Expand included.
                Code::ConditionalBroadcast if options.strict => Severity::Error,
                other => other.default_severity(),
            };
            // The rule selection (--deny/--warn/--allow, the config file) has the last word.
            if let Some(severity) = options.rules.severity(code, severity) {
                found = true;
                self.findings.push(Finding {
                    code,
                    severity,
                    graph: site.graph.to_string(),
                    node: Some(site.node.to_string()),
                    op: Some(site.op.to_string()),
                    message: report.message(),
                    conditions: Vec::new(),
                    site: (self.keep_sites || self.finding_sites).then_some(self.sites.len()),
                });
            }
        } else if reported_verdict(&report) == VerdictKind::Unknown {
            let (graph, node, op) = (site.graph.to_string(), site.node.to_string(), site.op.to_string());
            self.undecided.push(Undecided { graph, node, op, unknown: site.unknown_parts() });
        }
        each(&report);
        if self.keep_sites || (found && self.finding_sites) {
            self.sites.push(report.into_owned());
        }
    }

    /// The report: the analysis's notes as findings, then its contradictions (ops whose inputs break their
    /// specification), then the sites' findings, and the totals.
    pub fn finish(mut self, analysis: &Analysis) -> Report {
        let mut summary = self.summary;
        let mut findings = Vec::with_capacity(analysis.notes.len() + self.findings.len());
        for note in &analysis.notes {
            // A note only --strict reports (an opaque node) needs --strict, or its code named with --warn/--deny.
            let strict_only = note.code.doc().reported == crate::diagnostic::Reported::OnlyUnderStrict;
            if strict_only && !self.options.strict && !self.options.rules.enables(note.code) {
                continue;
            }
            let Some(severity) = self.options.rules.severity(note.code, note.code.default_severity()) else {
                continue;
            };
            findings.push(Finding {
                code: note.code,
                severity,
                graph: note.graph.clone(),
                node: note.node.clone(),
                op: note.op.clone(),
                message: note.message.clone(),
                conditions: Vec::new(),
                site: None,
            });
        }
        // --strict is about broadcasts: a condition on an op's shapes stays a warning unless denied.
        for r in crate::check::shape_report::findings(analysis, self.ranges.as_mut()) {
            let Some(severity) = self.options.rules.severity(r.code, r.code.default_severity()) else { continue };
            let c = r.finding;
            findings.push(Finding {
                code: r.code,
                severity,
                graph: c.graph.clone(),
                node: Some(c.node.clone()),
                op: Some(c.op.clone()),
                message: r.message,
                conditions: r.conditions,
                site: None,
            });
        }
        for (default, b, message) in crate::check::index_report::findings(analysis, self.ranges.as_mut()) {
            let Some(severity) = self.options.rules.severity(Code::IndexBound, default) else { continue };
            let (graph, node, op) = (b.graph.clone(), Some(b.node.clone()), Some(b.op.clone()));
            let message = message.into();
            let conditions = Vec::new();
            findings.push(Finding {
                code: Code::IndexBound,
                severity,
                graph,
                node,
                op,
                message,
                conditions,
                site: None,
            });
        }
        findings.extend(self.findings);
        summary.errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
        summary.warnings = findings.iter().filter(|f| f.severity == Severity::Warning).count();
        let ranges = self.ranges.map(crate::check::range_report::Ranged::finish);
        Report {
            sites: self.sites,
            findings,
            undecided: self.undecided,
            summary,
            opaque: analysis.opaque.clone(),
            ranges,
        }
    }
}

/// The verdict as reported: a type mismatch makes an otherwise sound site a violation, and over ranges of sizes a
/// conditional site is what its decision says (holds: broadcast; fails: violation; unproven: conditional).
pub fn reported_verdict(report: &SiteReport) -> VerdictKind {
    match (&report.over_ranges, &report.site.verdict) {
        _ if report.site.type_mismatch.is_some() => VerdictKind::Violation,
        (Some(Decision::Holds(_)), Verdict::Conditional(_)) => VerdictKind::Broadcast,
        (Some(Decision::Fails { .. }), Verdict::Conditional(_)) => VerdictKind::Violation,
        (_, verdict) => verdict.kind(),
    }
}

/// [`reported_verdict`]'s name, as JSON and dot output write it.
pub fn report_verdict(report: &SiteReport) -> &'static str {
    reported_verdict(report).as_str()
}

/// Whether a site of verdict `kind` (no type mismatch, no ranges) is no finding: a site that is the same, or that
/// broadcasts where implicit broadcasting is allowed (or explicit, as Expand's) — [`describe`]'s rule for these two
/// verdicts, without building its judgement.
fn holds_quietly(rule: Rule, kind: VerdictKind, options: &CheckOptions) -> bool {
    match kind {
        VerdictKind::Same => true,
        VerdictKind::Broadcast => {
            !(options.strict || options.rules.enables(Code::ImplicitBroadcast)) || rule == Rule::Bidirectional
        }
        _ => false,
    }
}

/// A judge takes a walk's sites as [`Judge::judge`] does, and lets the walk count the sites its fast path only
/// counts without making their records (`check`'s text output, whose report lists no site).
impl crate::analysis::Sites for Judge {
    fn site(&mut self, site: Site<'_>) {
        self.judge(site)
    }

    fn counted_only(&self) -> crate::analysis::CountedOnly {
        match self.keep_sites || self.ranges.is_some() {
            true => crate::analysis::CountedOnly::NONE,
            false => crate::analysis::CountedOnly::of(|kind, rule| holds_quietly(rule, kind, &self.options)),
        }
    }

    fn count(&mut self, kind: VerdictKind) {
        self.summary.count(kind, 1);
    }

    fn count_many(&mut self, kind: VerdictKind, n: usize) {
        self.summary.count(kind, n);
    }

    fn agrees(&self, site: &Site<'_>) -> bool {
        describe(site, self.options, None).0.is_none()
    }
}

/// What judging a site found: its finding's code, the offending axis, the conditions in words and their decision
/// over the ranges. Kept apart from the site so that judging reads the site in place.
type Judgement = (Option<Code>, Option<usize>, Vec<String>, Option<Decision>);

/// Judges one site: its finding's code, if any, with the offending axis and the conditions it holds under; a
/// conditional site decided over `ranges` when there are some.
fn describe(
    site: &Site<'_>,
    options: CheckOptions,
    ranges: Option<&mut crate::check::range_report::Ranged>,
) -> Judgement {
    let explicit = site.rule == Rule::Bidirectional;
    let over_ranges = match (&site.verdict, ranges) {
        (Verdict::Conditional(conds), Some(ranges)) if site.type_mismatch.is_none() => Some(ranges.decide(conds)),
        _ => None,
    };
    let (code, axis, conditions) = match &site.verdict {
        Verdict::Violation(v) => (Some(Code::BroadcastViolation), v.axis, Vec::new()),
        _ if site.type_mismatch.is_some() => (Some(Code::TypeMismatch), None, Vec::new()),
        Verdict::Conditional(conds) => {
            // The same condition from two axes (`seq ≤ 64` on both axes of a causal mask) is said once.
            let mut texts: Vec<String> = Vec::with_capacity(conds.len());
            for text in conds.iter().map(|c| condition_text(site, c)) {
                if !texts.contains(&text) {
                    texts.push(text);
                }
            }
            let code = match &over_ranges {
                Some(Decision::Fails { witness, .. }) => {
                    let axis = crate::rules::ranges::failing_axis(conds, witness);
                    return (Some(Code::BroadcastViolation), axis, texts, over_ranges);
                }
                Some(Decision::Holds(_))
                    if (options.strict || options.rules.enables(Code::ImplicitBroadcast)) && !explicit =>
                {
                    Some(Code::ImplicitBroadcast)
                }
                Some(Decision::Holds(_)) => None,
                _ => Some(Code::ConditionalBroadcast),
            };
            (code, None, texts)
        }
        Verdict::Broadcast if (options.strict || options.rules.enables(Code::ImplicitBroadcast)) && !explicit => {
            (Some(Code::ImplicitBroadcast), None, Vec::new())
        }
        // An Expand whose shapes are not known is as unproven as any other site.
        Verdict::Unknown if options.strict || options.rules.enables(Code::UndecidedBroadcast) => {
            (Some(Code::UndecidedBroadcast), None, Vec::new())
        }
        _ => (None, None, Vec::new()),
    };
    (code, axis, conditions, over_ranges)
}

/// A condition in words; an unknown dim is named by its input (or the target: Expand's shape value, Gemm's
/// (M, N)) and that input's own axis.
fn condition_text(site: &Site, c: &crate::rules::Condition) -> String {
    let crate::rules::ConditionKind::UnknownOneOf { input, options } = &c.kind else { return c.to_string() };
    let (owner, axis) = site.unknown_dim_owner(*input, c.axis);
    let owner = owner.map_or_else(|| "the target shape".to_string(), |n| name(&n).to_string());
    let opts: Vec<String> = options.iter().map(ToString::to_string).collect();
    format!("the unknown dim {axis} of {owner} ∈ {{{}}}", opts.join(", "))
}

/// Appends the message of a site judged by [`describe`] to `out`, its names in `form`. The words of the sites a
/// large model has by the thousand (a broadcast, one shape throughout) are written straight into the caller's buffer
/// (JSON output makes a message for every site); any other message is made with its names marked, then written in
/// `form`.
fn write_message(
    out: &mut String,
    site: &Site,
    (code, conditions, over_ranges): (Option<Code>, &[String], Option<&Decision>),
    form: NameForm,
) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    for f in &site.functions {
        let _ = out.write_str("in function ").and_then(|()| form.write(out, &f.function));
        let _ = out.write_str(" (node ").and_then(|()| form.write(out, &f.node)).and_then(|()| out.write_str("): "));
    }
    let marked = match (&site.verdict, code) {
        (Verdict::Violation(v), _) => violation_message(site, v.input, &v.kind, v.axis),
        (_, Some(Code::TypeMismatch)) => {
            let m = site.type_mismatch.as_ref().expect("a type mismatch has its record");
            format!(
                "{} is {} where {} is {}: {} requires one element type for them",
                name(&site.inputs[m.input].name),
                elem_type_name(m.found),
                name(&site.inputs[m.against].name),
                elem_type_name(m.expected),
                site.op
            )
        }
        (Verdict::Conditional(_), _) => conditional_message(site, code, &crate::rules::all_of(conditions), over_ranges),
        (Verdict::Broadcast, Some(Code::ImplicitBroadcast)) => {
            format!("implicit broadcast of {} to {}", broadcast_inputs(site), site.output_shape)
        }
        (Verdict::Broadcast, _) => {
            let _ = site.write_inputs(out, form);
            out.push_str(" broadcast to ");
            site.output_shape.push_to(out);
            return;
        }
        (Verdict::Same, _) => {
            let _ = site.write_inputs(out, form);
            out.push_str(": no broadcast, output ");
            site.output_shape.push_to(out);
            return;
        }
        (Verdict::Unknown, Some(Code::UndecidedBroadcast)) => format!(
            "cannot prove the inputs share one shape ({} unknown): {}",
            site.unknown_parts(),
            site.list_inputs()
        ),
        (Verdict::Unknown, _) => format!("undecided, {} unknown: {}", site.unknown_parts(), site.list_inputs()),
    };
    match form {
        NameForm::Marked => out.push_str(&marked),
        NameForm::Plain => crate::sys::escape::push_plain(out, &marked),
    }
}

/// A conditional site's message, with what its conditions come to over the ranges when it was decided there:
/// `fails at seq = 65 (it holds only if seq ≤ 64): ...`, `holds at every size of the ranges (it needs seq ≤ 64):
/// ...`, `holds only if seq ≤ 64; over the ranges, unproven for ...: ...`.
fn conditional_message(site: &Site, code: Option<Code>, conditions: &str, over_ranges: Option<&Decision>) -> String {
    let broadcast = match code {
        Some(Code::ImplicitBroadcast) => {
            format!("implicit broadcast of {} to {}", broadcast_inputs(site), site.output_shape)
        }
        _ => format!("{} broadcast to {}", site.list_inputs(), site.output_shape),
    };
    match over_ranges {
        None => format!("holds only if {conditions}: {broadcast}"),
        Some(d @ Decision::Unproven(_)) => {
            format!("holds only if {conditions}; over the ranges, {}: {broadcast}", d.text())
        }
        Some(d) => format!("{} (it needs {conditions}): {broadcast}", d.text()),
    }
}

/// The inputs whose shape differs from the output's: the ones being broadcast.
fn broadcast_inputs(site: &Site) -> String {
    let names: Vec<String> = site
        .rule_inputs
        .iter()
        .flatten()
        .map(|&i| &site.inputs[i])
        .filter(|i| !i.shape.provably_eq(&site.output_shape))
        .map(|i| format!("{} {}", name(&i.name), i.shape))
        .collect();
    if names.is_empty() {
        site.list_inputs()
    } else {
        names.join(" and ")
    }
}

fn violation_message(site: &Site, input: usize, kind: &ViolationKind, axis: Option<usize>) -> String {
    let offender = || site.offender(input);
    let lead = site.rule.violation_lead(site, input);
    let detail = match kind {
        ViolationKind::Mismatch { found, expected, against } => {
            let (name, shape) = offender();
            let local =
                match (axis, shape.rank(), site.output_shape.rank().or(site.target.as_ref().and_then(Shape::rank))) {
                    (Some(a), Some(r), Some(out)) if r < out && a + r >= out => format!(" (its axis {})", a + r - out),
                    _ => String::new(),
                };
            let where_ = if site.rule == Rule::LegacyAxis {
                format!("axis {} of the target", axis.unwrap_or(0))
            } else {
                format!("axis {}", axis.unwrap_or(0))
            };
            format!("on {where_}, {name} has {found}{local} where {} has {expected}", site.rule_input_shown(*against))
        }
        ViolationKind::RankTooLarge { rank, target_rank } => {
            let (name, _) = offender();
            format!("{name} has rank {rank}, more than the target's {target_rank}; a one-way broadcast never adds dims to its target")
        }
        ViolationKind::RankDiffers { rank, expected } => {
            let (name, _) = offender();
            format!("{name} has rank {rank} where {} has rank {expected}", site.rule_input_shown(0))
        }
        ViolationKind::AxisOutOfRange { axis, len, target_rank } => {
            let dims = if *len == 1 { "1 dim".to_string() } else { format!("{len} dims") };
            format!("{dims} from axis {axis} do not fit in a target of rank {target_rank}")
        }
        ViolationKind::Unsatisfiable { symbol, first, second } => {
            let set = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
            format!(
                "no value of {symbol} fits every axis: one needs {symbol} ∈ {{{}}}, axis {} needs {symbol} ∈ {{{}}}",
                set(first),
                axis.unwrap_or(0),
                set(second)
            )
        }
    };
    format!("{lead}: {detail}")
}
