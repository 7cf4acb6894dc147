//! Literals and integer constant expressions: the value and C type of integer, character and
//! string literals, evaluation of the constant expressions C requires (array sizes,
//! enumerators, `case` labels, bit-field widths), and enumerations with the types gcc gives
//! them and their constants.

use lang_c::ast::{BinaryOperator, Constant, EnumType, Expression, Integer, IntegerBase, IntegerSize, UnaryOperator};
use lang_c::span::Span as LSpan;

use super::types::CType;
use super::{BResult, ProgCx, Sym};
use crate::cfa::DataModel;
use crate::ir::{eval_binop, eval_unop, BinOp, IntTy, UnOp};

/// Value and type of an integer literal (C11 6.4.4.1); `None` if it does not fit 64 bits.
pub fn int_literal(lit: &Integer, model: DataModel) -> Option<(i128, IntTy)> {
    let radix = match lit.base {
        IntegerBase::Decimal => 10,
        IntegerBase::Octal => 8,
        IntegerBase::Hexadecimal => 16,
        IntegerBase::Binary => 2,
    };
    let v = u128::from_str_radix(&lit.number, radix).ok()?;
    if v > u64::MAX as u128 {
        return None;
    }
    let v = v as i128;
    let long = model.long_bits();
    let mut cands: Vec<IntTy> = Vec::new();
    let decimal = matches!(lit.base, IntegerBase::Decimal);
    let sizes: &[u8] = match lit.suffix.size {
        IntegerSize::Int => &[32, 0, 64],
        IntegerSize::Long => &[0, 64],
        IntegerSize::LongLong => &[64],
    };
    for &s in sizes {
        let bits = if s == 0 { long } else { s };
        if lit.suffix.unsigned {
            cands.push(IntTy::new(bits, false));
        } else {
            cands.push(IntTy::new(bits, true));
            if !decimal {
                cands.push(IntTy::new(bits, false));
            }
        }
    }
    let ty = cands.into_iter().find(|t| t.contains(v)).unwrap_or(IntTy::U64);
    Some((v, ty))
}

/// The type of a floating literal by its suffix (`f`, none, `l`, `fN`; `i` makes it complex).
pub fn float_literal_type(f: &lang_c::ast::Float) -> CType {
    use lang_c::ast::FloatFormat;
    let bytes = match &f.suffix.format {
        FloatFormat::Float => 4,
        FloatFormat::Double => 8,
        FloatFormat::LongDouble => 16,
        FloatFormat::TS18661Format(t) => (t.width / 8).clamp(1, 16) as u8,
    };
    if f.suffix.imaginary {
        CType::complex(bytes)
    } else {
        CType::Float(bytes)
    }
}

/// Decodes the body of a character or string literal (without quotes) into its code units:
/// bytes for a narrow literal (the source's UTF-8 and `\u` escapes encoded as UTF-8, as gcc
/// does), code points for a wide one.
pub fn unescape(body: &str, narrow: bool) -> Vec<u32> {
    let mut out = Vec::new();
    let push_char = |out: &mut Vec<u32>, c: char| {
        if narrow {
            let mut buf = [0u8; 4];
            out.extend(c.encode_utf8(&mut buf).bytes().map(u32::from));
        } else {
            out.push(c as u32);
        }
    };
    let mut it = body.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            push_char(&mut out, c);
            continue;
        }
        let Some(e) = it.next() else { break };
        let v = match e {
            'n' => 10,
            't' => 9,
            'r' => 13,
            'a' => 7,
            'b' => 8,
            'f' => 12,
            'v' => 11,
            'e' => 27,
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match it.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            it.next();
                        }
                        None => break,
                    }
                }
                v
            }
            'x' => {
                let mut v: u32 = 0;
                while let Some(d) = it.peek().and_then(|c| c.to_digit(16)) {
                    v = v.wrapping_mul(16).wrapping_add(d);
                    it.next();
                }
                v
            }
            'u' | 'U' => {
                // A universal character name: a code point, encoded like a source character.
                let mut v: u32 = 0;
                for _ in 0..if e == 'u' { 4 } else { 8 } {
                    match it.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            v = v.wrapping_mul(16).wrapping_add(d);
                            it.next();
                        }
                        None => break,
                    }
                }
                match char::from_u32(v) {
                    Some(ch) => {
                        push_char(&mut out, ch);
                        continue;
                    }
                    None => v,
                }
            }
            other => other as u32,
        };
        out.push(v);
    }
    out
}

/// The encoding prefix of a literal piece (`L`, `u`, `U`, `u8` or none).
fn literal_prefix(piece: &str, quote: char) -> &str {
    &piece[..piece.find(quote).unwrap_or(0)]
}

/// Strips an encoding prefix and the quotes of a literal piece.
fn literal_body(piece: &str, quote: char) -> &str {
    let start = piece.find(quote).map(|i| i + 1).unwrap_or(0);
    let end = piece.rfind(quote).unwrap_or(piece.len());
    if end >= start {
        &piece[start..end]
    } else {
        ""
    }
}

/// Value of a character constant (type `int`): a plain one is a `char`, signed on x86; gcc
/// gives a multi-character one (`'ab'`, or a character of several UTF-8 bytes) the bytes
/// shifted in one after the other, as an `int`; a wide one is its (last) code point.
pub fn char_literal(text: &str) -> i128 {
    let narrow = matches!(literal_prefix(text, '\''), "" | "u8");
    let units = unescape(literal_body(text, '\''), narrow);
    if !narrow {
        return units.last().copied().unwrap_or(0) as i128;
    }
    match units.as_slice() {
        [] => 0,
        [one] => IntTy::I8.wrap(*one as i128),
        many => IntTy::I32.wrap(many.iter().fold(0i128, |v, &u| ((v << 8) | (u & 0xff) as i128) & 0xffff_ffff)),
    }
}

/// The code units of a (concatenated) string literal, without the terminating NUL: bytes for
/// a narrow literal, code points for a wide one (any piece with `L`, `u` or `U`).
pub fn string_literal(pieces: &[String]) -> Vec<u32> {
    let narrow = pieces.iter().all(|p| matches!(literal_prefix(p, '"'), "" | "u8"));
    pieces.iter().flat_map(|p| unescape(literal_body(p, '"'), narrow)).collect()
}

/// The array type of a string literal: `char` units, or `wchar_t` (`int` on x86 Linux),
/// `char16_t`, `char32_t` for the prefixes `L`, `u`, `U`.
pub fn string_literal_type(pieces: &[String]) -> CType {
    let elem = pieces.iter().find_map(|p| match literal_prefix(p, '"') {
        "L" => Some(IntTy::I32),
        "u" => Some(IntTy::U16),
        "U" => Some(IntTy::U32),
        _ => None,
    });
    let n = string_literal(pieces).len() as u64 + 1;
    CType::Array(Box::new(CType::Int(elem.unwrap_or(IntTy::I8))), Some(n))
}

/// Evaluates an integer constant expression; `None` if it is not one.
pub fn eval(cx: &mut ProgCx, e: &Expression) -> Option<i128> {
    eval_typed(cx, e).map(|(v, _)| v)
}

fn eval_typed(cx: &mut ProgCx, e: &Expression) -> Option<(i128, IntTy)> {
    match e {
        Expression::Constant(c) => match &c.node {
            Constant::Integer(i) => int_literal(i, cx.types.model),
            Constant::Character(s) => Some((char_literal(s), IntTy::INT)),
            Constant::Float(_) => None,
        },
        Expression::Identifier(id) => match cx.lookup(&id.node.name) {
            Some(Sym::EnumConst(v, t)) => Some((*v, *t)),
            _ => None,
        },
        Expression::UnaryOperator(u) => {
            let (a, t) = eval_typed(cx, &u.node.operand.node)?;
            let pt = t.promote();
            let a = pt.wrap(a);
            match u.node.operator.node {
                UnaryOperator::Minus => Some((eval_unop(UnOp::Neg, a, pt), pt)),
                UnaryOperator::Plus => Some((a, pt)),
                UnaryOperator::Complement => Some((eval_unop(UnOp::BitNot, a, pt), pt)),
                UnaryOperator::Negate => Some((eval_unop(UnOp::LNot, a, pt), IntTy::INT)),
                _ => None,
            }
        }
        Expression::BinaryOperator(b) => {
            let op = b.node.operator.node.clone();
            if matches!(op, BinaryOperator::LogicalAnd | BinaryOperator::LogicalOr) {
                let (l, _) = eval_typed(cx, &b.node.lhs.node)?;
                let short = (op == BinaryOperator::LogicalAnd && l == 0) || (op == BinaryOperator::LogicalOr && l != 0);
                if short {
                    return Some(((l != 0) as i128, IntTy::INT));
                }
                let (r, _) = eval_typed(cx, &b.node.rhs.node)?;
                return Some(((r != 0) as i128, IntTy::INT));
            }
            let (l, lt) = eval_typed(cx, &b.node.lhs.node)?;
            let (r, rt) = eval_typed(cx, &b.node.rhs.node)?;
            let bop = match op {
                BinaryOperator::Multiply => BinOp::Mul,
                BinaryOperator::Divide => BinOp::Div,
                BinaryOperator::Modulo => BinOp::Rem,
                BinaryOperator::Plus => BinOp::Add,
                BinaryOperator::Minus => BinOp::Sub,
                BinaryOperator::ShiftLeft => BinOp::Shl,
                BinaryOperator::ShiftRight => BinOp::Shr,
                BinaryOperator::Less => BinOp::Lt,
                BinaryOperator::Greater => BinOp::Gt,
                BinaryOperator::LessOrEqual => BinOp::Le,
                BinaryOperator::GreaterOrEqual => BinOp::Ge,
                BinaryOperator::Equals => BinOp::Eq,
                BinaryOperator::NotEquals => BinOp::Ne,
                BinaryOperator::BitwiseAnd => BinOp::BitAnd,
                BinaryOperator::BitwiseXor => BinOp::BitXor,
                BinaryOperator::BitwiseOr => BinOp::BitOr,
                _ => return None,
            };
            if matches!(bop, BinOp::Shl | BinOp::Shr) {
                let t = lt.promote();
                return eval_binop(bop, t.wrap(l), r, t).map(|v| (v, t));
            }
            let ct = IntTy::common(lt, rt);
            let (l, r) = (ct.wrap(l), ct.wrap(r));
            let rty = if bop.is_comparison() { IntTy::INT } else { ct };
            eval_binop(bop, l, r, rty).map(|v| (v, rty))
        }
        Expression::Cast(c) => {
            let t = cx.type_name(&c.node.type_name.node, c.node.type_name.span).ok()?;
            let (v, _) = eval_typed(cx, &c.node.expression.node)?;
            let it = cx.types.int_of(&t)?;
            Some((it.wrap(v), it))
        }
        Expression::Conditional(c) => {
            let (cond, _) = eval_typed(cx, &c.node.condition.node)?;
            let then = eval_typed(cx, &c.node.then_expression.node);
            let other = eval_typed(cx, &c.node.else_expression.node);
            let (chosen, rest) = if cond != 0 { (then?, other) } else { (other?, then) };
            // The result has the type the usual arithmetic conversions give both operands.
            let t = rest.map_or(chosen.1, |(_, t)| IntTy::common(chosen.1, t));
            Some((t.wrap(chosen.0), t))
        }
        Expression::SizeOfTy(s) => {
            let t = cx.type_name(&s.node.0.node, s.node.0.span).ok()?;
            let n = cx.types.size_of(&t)?;
            Some((n as i128, cx.types.long(false)))
        }
        Expression::SizeOfVal(s) => {
            let t = expr_type_hint(cx, &s.node.0.node)?;
            let n = cx.types.size_of(&t)?;
            Some((n as i128, cx.types.long(false)))
        }
        Expression::AlignOf(a) => {
            let t = cx.type_name(&a.node.0.node, a.node.0.span).ok()?;
            Some((cx.types.align_of(&t)? as i128, cx.types.long(false)))
        }
        Expression::Comma(items) => items.last().and_then(|l| eval_typed(cx, &l.node)),
        Expression::OffsetOf(o) => Some((offset_of(cx, &o.node)? as i128, cx.types.long(false))),
        _ => None,
    }
}

/// `offsetof(type, designator)` in bytes: members (through anonymous ones) and constant
/// indices; `None` for a bit-field or what is not a constant.
pub fn offset_of(cx: &mut ProgCx, o: &lang_c::ast::OffsetOfExpression) -> Option<u64> {
    use lang_c::ast::OffsetMember;
    let mut ty = cx.type_name(&o.type_name.node, o.type_name.span).ok()?;
    let member = |cx: &ProgCx, ty: &CType, name: &str| match ty {
        CType::Struct(id) => cx.types.member_offset(*id, name),
        _ => None,
    };
    let (mut off, t) = member(cx, &ty, &o.designator.node.base.node.name)?;
    ty = t;
    for m in &o.designator.node.members {
        match &m.node {
            OffsetMember::Member(id) => {
                let (o2, t) = member(cx, &ty, &id.node.name)?;
                off += o2;
                ty = t;
            }
            OffsetMember::Index(e) => {
                let i = u64::try_from(eval(cx, &e.node)?).ok()?;
                let CType::Array(elem, _) = ty else { return None };
                off += cx.types.size_of(&elem)?.checked_mul(i)?;
                ty = *elem;
            }
            OffsetMember::IndirectMember(_) => return None,
        }
    }
    Some(off)
}

/// The scope key an enumeration's tag is declared under (tags and ordinary identifiers are
/// different name spaces; no identifier contains a space).
fn enum_tag_key(tag: &str) -> String {
    format!("enum {}", tag)
}

/// The fewest bits that represent `v` in a two's-complement (`signed`) or unsigned type.
fn min_precision(v: i128, signed: bool) -> u32 {
    let magnitude = if v < 0 { !v } else { v };
    (128 - magnitude.leading_zeros()).max(1) + signed as u32
}

/// The integer type of an enumeration whose constants span `min..=max`, as gcc chooses it
/// without `-fshort-enums`: `unsigned int` when no constant is negative and all fit 32 bits,
/// `int` when some is negative and all fit `int`, else the 64-bit type of that signedness.
pub fn enum_underlying(min: i128, max: i128) -> IntTy {
    let signed = min < 0;
    let precision = min_precision(min, signed).max(min_precision(max, signed));
    if precision <= 32 {
        IntTy::new(32, signed)
    } else {
        // Wider than 64 bits would need `__int128` (gcc warns); 64 bits is the widest here.
        IntTy::new(64, signed)
    }
}

impl ProgCx<'_> {
    /// The type an enumeration specifier denotes; a definition also declares its constants.
    ///
    /// gcc's rules (C11 6.7.2.2 with its extension to values beyond `int`): while the list is
    /// read, a constant that fits `int` has type `int`, another keeps the type of its value, and
    /// a constant without initialiser is the previous one plus 1 in the previous one's type.
    /// When the list is complete, the enumeration's type is [`enum_underlying`] of its values,
    /// and each constant has type `int` if its value fits, else the enumeration's type.
    pub(super) fn enum_type(&mut self, et: &EnumType, span: LSpan) -> BResult<CType> {
        let tag = et.identifier.as_ref().map(|i| i.node.name.clone());
        if et.enumerators.is_empty() {
            // A reference to an enumeration defined before (or a forward declaration, a gcc
            // extension whose type is `unsigned int` until completed).
            let known = tag.as_ref().and_then(|t| match self.lookup(&enum_tag_key(t)) {
                Some(Sym::Typedef(t)) => Some(t.clone()),
                _ => None,
            });
            return Ok(known.unwrap_or(CType::Int(IntTy::U32)));
        }
        let mut consts: Vec<(String, i128)> = Vec::new();
        // The previous constant's value and type, for one without initialiser.
        let mut prev: Option<(i128, IntTy)> = None;
        for e in &et.enumerators {
            let (v, t) = match &e.node.expression {
                Some(x) => {
                    eval_typed(self, &x.node).ok_or_else(|| self.err(x.span, "enumerator value is not an integer constant".into()))?
                }
                None => match prev {
                    None => (0, IntTy::INT),
                    Some((pv, pt)) => {
                        let next = pv + 1;
                        if !pt.contains(next) {
                            // gcc before C23 rejects this (`overflow in enumeration values`);
                            // C23 and later gcc give the next constant a wider type.
                            if next > IntTy::U64.max() {
                                return Err(self.err(e.span, "overflow in enumeration values".into()));
                            }
                            (next, if IntTy::I64.contains(next) { IntTy::I64 } else { IntTy::U64 })
                        } else {
                            (next, pt)
                        }
                    }
                },
            };
            let t = if IntTy::INT.contains(v) { IntTy::INT } else { t.promote() };
            let v = t.wrap(v);
            self.declare(e.node.identifier.node.name.clone(), Sym::EnumConst(v, t));
            consts.push((e.node.identifier.node.name.clone(), v));
            prev = Some((v, t));
        }
        let min = consts.iter().map(|c| c.1).min().unwrap_or(0);
        let max = consts.iter().map(|c| c.1).max().unwrap_or(0);
        let ty = enum_underlying(min, max);
        for (name, v) in consts {
            let t = if IntTy::INT.contains(v) { IntTy::INT } else { ty };
            self.declare(name, Sym::EnumConst(t.wrap(v), t));
        }
        if let Some(tag) = tag {
            self.declare(enum_tag_key(&tag), Sym::Typedef(CType::Int(ty)));
        }
        let _ = span;
        Ok(CType::Int(ty))
    }
}

/// The type of simple expressions outside any function (for `typeof` and `sizeof` at file
/// scope): identifiers, literals, dereferences and members of named objects.
pub fn expr_type_hint(cx: &mut ProgCx, e: &Expression) -> Option<CType> {
    match e {
        Expression::Identifier(id) => match cx.lookup(&id.node.name) {
            Some(Sym::Var(_, t)) | Some(Sym::Ref(_, t)) | Some(Sym::At(_, t)) => Some(t.clone()),
            Some(Sym::EnumConst(_, t)) => Some(CType::Int(*t)),
            Some(Sym::Func(_, sig)) => Some(CType::Func(sig.clone())),
            _ => None,
        },
        Expression::StringLiteral(s) => Some(string_literal_type(&s.node)),
        Expression::Constant(c) => match &c.node {
            Constant::Float(f) => Some(float_literal_type(f)),
            _ => eval_typed(cx, e).map(|(_, t)| CType::Int(t)),
        },
        Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Indirection => {
            expr_type_hint(cx, &u.node.operand.node)?.pointee().cloned()
        }
        Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Index => {
            expr_type_hint(cx, &b.node.lhs.node)?.pointee().cloned()
        }
        Expression::Member(m) => {
            let base = expr_type_hint(cx, &m.node.expression.node)?;
            let st = match (&m.node.operator.node, base) {
                (lang_c::ast::MemberOperator::Direct, CType::Struct(id)) => id,
                (lang_c::ast::MemberOperator::Indirect, CType::Ptr(p)) => match *p {
                    CType::Struct(id) => id,
                    _ => return None,
                },
                _ => return None,
            };
            cx.types.field(st, &m.node.identifier.node.name).map(|(_, t)| t.clone())
        }
        Expression::Cast(c) => cx.type_name(&c.node.type_name.node, c.node.type_name.span).ok(),
        _ => eval_typed(cx, e).map(|(_, t)| CType::Int(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang_c::ast::IntegerSuffix;

    fn lit(base: IntegerBase, n: &str, size: IntegerSize, unsigned: bool) -> Integer {
        Integer { base, number: n.into(), suffix: IntegerSuffix { size, unsigned, imaginary: false } }
    }

    #[test]
    fn integer_literal_types() {
        let m = DataModel::Lp64;
        assert_eq!(int_literal(&lit(IntegerBase::Decimal, "10", IntegerSize::Int, false), m), Some((10, IntTy::I32)));
        assert_eq!(int_literal(&lit(IntegerBase::Hexadecimal, "FFFFFFFF", IntegerSize::Int, false), m), Some((0xFFFF_FFFF, IntTy::U32)));
        assert_eq!(int_literal(&lit(IntegerBase::Decimal, "4294967295", IntegerSize::Int, false), m), Some((4294967295, IntTy::I64)));
        assert_eq!(
            int_literal(&lit(IntegerBase::Decimal, "4294967295", IntegerSize::Int, false), DataModel::Ilp32),
            Some((4294967295, IntTy::I64))
        );
        assert_eq!(int_literal(&lit(IntegerBase::Decimal, "1", IntegerSize::Int, true), m), Some((1, IntTy::U32)));
    }

    #[test]
    fn character_literals() {
        assert_eq!(char_literal("'a'"), 97);
        assert_eq!(char_literal("'\\n'"), 10);
        assert_eq!(char_literal("'\\xff'"), -1);
        assert_eq!(char_literal("'\\0'"), 0);
        assert_eq!(string_literal(&["\"ab\"".into(), "\"c\\n\"".into()]), vec![97, 98, 99, 10]);
        // gcc: multi-character constants are `int`s of their bytes; source text is UTF-8.
        assert_eq!(char_literal("'ab'"), 0x6162);
        assert_eq!(char_literal("'\\u00e9'"), 0xc3a9);
        assert_eq!(char_literal("L'\\u00e9'"), 0xe9);
        assert_eq!(string_literal(&["\"\\u00e9\"".into()]), vec![0xc3, 0xa9]);
        assert_eq!(string_literal(&["\"é\"".into()]), vec![0xc3, 0xa9]);
        assert_eq!(string_literal(&["L\"é\"".into()]), vec![0xe9]);
        assert_eq!(string_literal_type(&["L\"ab\"".into()]), CType::Array(Box::new(CType::Int(IntTy::I32)), Some(3)));
    }
}
