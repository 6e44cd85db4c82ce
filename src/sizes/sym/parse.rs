//! Reading symbolic sizes from text: what [`super::Poly`]'s `Display` prints, and what exporters write in
//! `dim_param` (PyTorch writes sympy's text: `floor(height/2 - 1/2) + 1`, `Min(128, seq)`, `2*s0`, `ceiling(x/2)`,
//! `Mod(s0, 2)`, `s0**2`). Sub-expressions may be fractions as long as the whole is an integer polynomial
//! (`height/2 - 1/2` only inside a floor); anything else is an error and the caller keeps the text as a name.

use super::display::is_plain_name;
use super::Poly;

/// Why a text is not a symbolic size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub &'static str);

/// The longest text read as an expression; longer `dim_param`s stay names.
const MAX_LEN: usize = 4096;
/// The deepest nesting of parentheses and calls.
const MAX_DEPTH: usize = 64;

/// The sizes a symbolic broadcast carries as texts, read once per thread: deciding a condition over a range reads
/// the same few texts thousands of times. `None` for a text that is not a size.
pub(crate) fn parse_size_text(text: &std::sync::Arc<str>) -> Option<Poly> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::sync::Arc;
    thread_local! {
        static READ: RefCell<HashMap<Arc<str>, Option<Poly>>> = RefCell::new(HashMap::new());
    }
    if let Some(known) = READ.with(|r| r.borrow().get(text).cloned()) {
        return known;
    }
    let value = parse(text).ok();
    READ.with(|r| {
        let mut read = r.borrow_mut();
        // A bound on what is kept: the texts of one model's broadcasts are few.
        if read.len() > 4096 {
            read.clear();
        }
        read.insert(text.clone(), value.clone());
    });
    value
}

/// Parses a symbolic size into its normal form.
pub fn parse(text: &str) -> Result<Poly, ParseError> {
    if text.len() > MAX_LEN {
        return Err(ParseError("too long"));
    }
    let tokens = tokenize(text)?;
    let mut p = Parser { tokens, pos: 0, depth: 0 };
    let value = p.expr()?;
    if p.pos != p.tokens.len() {
        return Err(ParseError("unexpected text after the expression"));
    }
    value.integral().ok_or(ParseError("not an integer"))
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Name(String),
    Op(&'static str),
}

fn tokenize(text: &str) -> Result<Vec<Tok>, ParseError> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            out.push(Tok::Int(digits.parse().map_err(|_| ParseError("number too large"))?));
        } else if c.is_alphabetic() || c == '_' || c == '?' {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            if !is_plain_name(&name) {
                return Err(ParseError("not a name"));
            }
            out.push(Tok::Name(name));
        } else {
            let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let op = match two.as_str() {
                "**" => "**",
                "//" => "//",
                _ => match c {
                    '+' => "+",
                    '-' => "-",
                    '*' => "*",
                    '/' => "/",
                    '^' => "**",
                    '(' => "(",
                    ')' => ")",
                    ',' => ",",
                    _ => return Err(ParseError("unexpected character")),
                },
            };
            i += if two == "**" || two == "//" { 2 } else { 1 };
            out.push(Tok::Op(op));
        }
    }
    Ok(out)
}

/// A polynomial over a positive denominator: `num / den`.
#[derive(Clone, Debug)]
struct Frac {
    num: Poly,
    den: i64,
}

impl Frac {
    fn whole(p: Poly) -> Frac {
        Frac { num: p, den: 1 }
    }

    fn integral(&self) -> Option<Poly> {
        (self.den == 1).then(|| self.num.clone())
    }

    fn add(&self, other: &Frac, sign: i64) -> Option<Frac> {
        let den = self.den.checked_mul(other.den)?;
        let a = self.num.scale(other.den)?;
        let b = other.num.scale(self.den.checked_mul(sign)?)?;
        Frac { num: a.add(&b)?, den }.reduced()
    }

    fn mul(&self, other: &Frac) -> Option<Frac> {
        Frac { num: self.num.mul(&other.num)?, den: self.den.checked_mul(other.den)? }.reduced()
    }

    /// Divided by a constant (a non-constant divisor is only read inside `floor`/`ceiling`).
    fn div(&self, other: &Frac) -> Option<Frac> {
        let k = other.num.as_constant()?;
        if k == 0 {
            return None;
        }
        let (num, den) = (self.num.scale(other.den.checked_mul(k.signum())?)?, self.den.checked_mul(k.abs())?);
        Frac { num, den }.reduced()
    }

    fn reduced(self) -> Option<Frac> {
        let g = self.num.terms.coefficients().fold(self.den, super::gcd);
        if g <= 1 {
            return Some(self);
        }
        let num = Poly { terms: self.num.terms.map_coefficients(|c| c / g) };
        Some(Frac { num, den: self.den / g })
    }
}

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos)
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), ParseError> {
        self.eat(op).then_some(()).ok_or(ParseError("unbalanced expression"))
    }

    fn expr(&mut self) -> Result<Frac, ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ParseError("nested too deeply"));
        }
        let mut acc = self.term()?;
        loop {
            let sign = if self.eat("+") {
                1
            } else if self.eat("-") {
                -1
            } else {
                break;
            };
            let rhs = self.term()?;
            acc = acc.add(&rhs, sign).ok_or(ParseError("overflow"))?;
        }
        self.depth -= 1;
        Ok(acc)
    }

    fn term(&mut self) -> Result<Frac, ParseError> {
        let mut acc = self.unary()?;
        loop {
            if self.eat("*") {
                acc = acc.mul(&self.unary()?).ok_or(ParseError("overflow"))?;
            } else if self.eat("//") {
                let d = self.unary()?;
                acc = floor_of(&acc, &d)?;
            } else if self.eat("/") {
                acc = acc.div(&self.unary()?).ok_or(ParseError("division by a non-constant outside floor"))?;
            } else {
                return Ok(acc);
            }
        }
    }

    fn unary(&mut self) -> Result<Frac, ParseError> {
        if self.eat("-") {
            let v = self.unary()?;
            return v.mul(&Frac::whole(Poly::constant(-1))).ok_or(ParseError("overflow"));
        }
        if self.eat("+") {
            return self.unary();
        }
        let base = self.primary()?;
        if self.eat("**") {
            let Some(Tok::Int(k)) = self.peek().cloned() else { return Err(ParseError("power of a non-integer")) };
            self.pos += 1;
            if !(0..=16).contains(&k) {
                return Err(ParseError("power out of range"));
            }
            let mut acc = Frac::whole(Poly::constant(1));
            for _ in 0..k {
                acc = acc.mul(&base).ok_or(ParseError("overflow"))?;
            }
            return Ok(acc);
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Frac, ParseError> {
        match self.peek().cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Frac::whole(Poly::constant(v)))
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let v = self.expr()?;
                self.expect(")")?;
                Ok(v)
            }
            Some(Tok::Name(name)) => {
                self.pos += 1;
                if self.eat("(") {
                    self.call(&name)
                } else {
                    Ok(Frac::whole(Poly::atom(&name)))
                }
            }
            _ => Err(ParseError("expected a number, a name or '('")),
        }
    }

    /// `floor`, `ceil`/`ceiling`, `min`/`Min`, `max`/`Max`, `Mod`/`mod`, `broadcast`.
    fn call(&mut self, name: &str) -> Result<Frac, ParseError> {
        let mut args = vec![self.call_arg()?];
        while self.eat(",") {
            args.push(self.call_arg()?);
        }
        self.expect(")")?;
        let whole = |f: &Arg| f.value.integral().ok_or(ParseError("fractional argument"));
        let out = match (name, args.as_slice()) {
            ("floor", [a]) => a.floor()?,
            ("ceil" | "ceiling", [a]) => a.ceil()?,
            ("min" | "Min", [first, rest @ ..]) if !rest.is_empty() => {
                rest.iter().try_fold(whole(first)?, |acc, a| Ok::<_, ParseError>(acc.min_of(&whole(a)?)))?
            }
            ("max" | "Max", [first, rest @ ..]) if !rest.is_empty() => {
                rest.iter().try_fold(whole(first)?, |acc, a| Ok::<_, ParseError>(acc.max_of(&whole(a)?)))?
            }
            ("Mod" | "mod", [a, d]) => whole(a)?.modulo(&whole(d)?).ok_or(ParseError("bad modulus"))?,
            // What `Display` prints for a symbolic broadcast (and `infer` writes as a dim_param).
            ("broadcast", [_, _, ..]) => {
                super::broadcast_of_sizes(args.iter().map(whole).collect::<Result<Vec<_>, _>>()?.into_iter())
            }
            _ => return Err(ParseError("unknown function")),
        };
        Ok(Frac::whole(out))
    }

    /// One argument of a call, with a top-level division by a non-constant kept apart for floor and ceiling.
    fn call_arg(&mut self) -> Result<Arg, ParseError> {
        let (start, depth) = (self.pos, self.depth);
        if let Ok(value) = self.expr() {
            return Ok(Arg { value, over: None });
        }
        // `floor(a / (b + 1))`, `floor(2*s0/(s1 + 1))`: the product before the slash and the divisor apart.
        (self.pos, self.depth) = (start, depth);
        let mut num = self.unary()?;
        while self.eat("*") {
            num = num.mul(&self.unary()?).ok_or(ParseError("overflow"))?;
        }
        if !self.eat("/") {
            return Err(ParseError("bad argument"));
        }
        let den = self.unary()?;
        Ok(Arg { value: num, over: Some(den) })
    }
}

struct Arg {
    value: Frac,
    over: Option<Frac>,
}

impl Arg {
    fn floor(&self) -> Result<Poly, ParseError> {
        match &self.over {
            None => self.value.num.div_floor(self.value.den).ok_or(ParseError("bad floor")),
            Some(d) => floor_of(&self.value, d)?.integral().ok_or(ParseError("bad floor")),
        }
    }

    fn ceil(&self) -> Result<Poly, ParseError> {
        match &self.over {
            None => self.value.num.div_ceil(self.value.den).ok_or(ParseError("bad ceiling")),
            Some(d) => {
                let (n, d) = (whole_of(&self.value)?, whole_of(d)?);
                n.div_ceil_poly(&d).ok_or(ParseError("bad ceiling"))
            }
        }
    }
}

fn whole_of(f: &Frac) -> Result<Poly, ParseError> {
    f.integral().ok_or(ParseError("fractional operand"))
}

/// `floor(a / b)` for integer polynomials.
fn floor_of(a: &Frac, b: &Frac) -> Result<Frac, ParseError> {
    let (a, b) = (whole_of(a)?, whole_of(b)?);
    a.div_poly(&b).map(Frac::whole).ok_or(ParseError("bad division"))
}
