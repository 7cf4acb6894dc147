//! C types as the CFA builder sees them: resolution of lang-c declaration specifiers and
//! declarators, struct layouts, `sizeof`, and the storage objects variables are flattened into.

use std::rc::Rc;

use crate::cfa::DataModel;
use crate::ir::{IntTy, VarId};

pub type StructId = usize;

/// A C type. Enumerations are integers; `long double` and friends are `Float`.
#[derive(Clone, Debug, PartialEq)]
pub enum CType {
    Void,
    Int(IntTy),
    /// A floating type by its size on LP64 (4 `float`, 8 `double`, 16 `long double`), with
    /// [`FLOAT_COMPLEX`] set for `_Complex` types (then the size of one part).
    Float(u8),
    Ptr(Box<CType>),
    Array(Box<CType>, Option<u64>),
    Struct(StructId),
    Func(Rc<FuncSig>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FuncSig {
    pub ret: CType,
    pub params: Vec<CType>,
    pub variadic: bool,
    /// Declared without a prototype (`int f();`): arguments get default promotions.
    pub unprototyped: bool,
}

#[derive(Clone, Debug)]
pub struct StructDef {
    pub name: String,
    pub union: bool,
    /// `None` while the struct is only declared (incomplete).
    pub fields: Option<Vec<(String, CType)>>,
    /// The bit-fields, in declaration order, for the layout (`sizeof`, `_Alignof`).
    pub bit_fields: Vec<BitField>,
    /// A member is a variable-length array (GNU C, in a function): the layout depends on
    /// values at run time and is not known statically (a VLA is not a flexible array member).
    pub variable: bool,
}

/// A bit-field as declared. A named one is the member `fields[index]` (whose type is an
/// integer of `width` bits); an unnamed one is padding only and comes before `fields[index]`.
#[derive(Clone, Debug)]
pub struct BitField {
    pub index: usize,
    pub named: bool,
    /// The declared type (`int`, `unsigned char`, an enumeration's type…).
    pub declared: IntTy,
    pub width: u32,
}

/// Size, alignment and member offsets of a struct or union (offsets in bytes, per member of
/// `fields`; `None` for bit-fields).
#[derive(Clone, Debug)]
pub struct Layout {
    pub size: u64,
    pub align: u64,
    pub offsets: Vec<Option<u64>>,
}

/// The flag of [`CType::Float`] that marks a complex type.
pub const FLOAT_COMPLEX: u8 = 0x80;

impl CType {
    /// `_Complex` of the real floating type of `bytes` bytes (on LP64).
    pub fn complex(bytes: u8) -> CType {
        CType::Float(bytes | FLOAT_COMPLEX)
    }

    pub fn is_scalar(&self) -> bool {
        matches!(self, CType::Int(_) | CType::Ptr(_) | CType::Float(_))
    }

    pub fn is_integer_like(&self) -> bool {
        matches!(self, CType::Int(_) | CType::Ptr(_))
    }

    pub fn is_pointer(&self) -> bool {
        matches!(self, CType::Ptr(_))
    }

    pub fn pointee(&self) -> Option<&CType> {
        match self {
            CType::Ptr(t) => Some(t),
            CType::Array(t, _) => Some(t),
            _ => None,
        }
    }

    /// The type a value of this type has after array and function decay.
    pub fn decay(&self) -> CType {
        match self {
            CType::Array(t, _) => CType::Ptr(t.clone()),
            CType::Func(_) => CType::Ptr(Box::new(self.clone())),
            t => t.clone(),
        }
    }
}

/// Type tables shared by the whole translation unit.
pub struct TypeTable {
    pub model: DataModel,
    pub structs: Vec<StructDef>,
    /// Pointers are encoded `(object, offset)` pairs of 64 bits (the memory model) in every
    /// data model; `sizeof` still follows the data model.
    pub encoded_pointers: bool,
}

impl TypeTable {
    pub fn new(model: DataModel) -> TypeTable {
        TypeTable { model, structs: Vec::new(), encoded_pointers: false }
    }

    /// gcc's `__builtin_va_list`: on x86-64 an array of one 24-byte `__va_list_tag`, on i386 a
    /// `char *`. Only its size matters: `va_arg` yields any value.
    pub fn va_list(&self) -> CType {
        match self.model {
            DataModel::Lp64 => CType::Array(Box::new(CType::Int(IntTy::U8)), Some(24)),
            DataModel::Ilp32 => CType::Ptr(Box::new(CType::Int(IntTy::I8))),
        }
    }

    /// The integer type pointers are represented by.
    pub fn ptr_int(&self) -> IntTy {
        if self.encoded_pointers {
            return IntTy::U64;
        }
        IntTy::new(self.model.long_bits(), false)
    }

    pub fn long(&self, signed: bool) -> IntTy {
        IntTy::new(self.model.long_bits(), signed)
    }

    /// The integer type that represents a scalar value of `t` in the IR.
    pub fn int_of(&self, t: &CType) -> Option<IntTy> {
        match t {
            CType::Int(i) => Some(*i),
            CType::Ptr(_) | CType::Array(..) | CType::Func(_) => Some(self.ptr_int()),
            _ => None,
        }
    }

    /// `sizeof` in bytes (gcc's, for the data model); `None` for incomplete types.
    pub fn size_of(&self, t: &CType) -> Option<u64> {
        Some(match t {
            CType::Void => 1,
            // A bit-field wider than `int` (`long long x : 40`) keeps its declared type's size.
            CType::Int(i) => ((i.bits as u64).next_power_of_two() / 8).max(1),
            CType::Float(b) => {
                let part = self.float_part(*b).0;
                if b & FLOAT_COMPLEX != 0 {
                    2 * part
                } else {
                    part
                }
            }
            CType::Ptr(_) | CType::Func(_) => (self.model.long_bits() / 8) as u64,
            CType::Array(e, n) => self.size_of(e)?.checked_mul((*n)?)?,
            CType::Struct(id) => self.struct_layout(*id)?.size,
        })
    }

    /// `_Alignof` in bytes (gcc's, for the data model); `None` for incomplete types.
    pub fn align_of(&self, t: &CType) -> Option<u64> {
        Some(match t {
            CType::Array(e, _) => self.align_of(e)?,
            CType::Struct(id) => self.struct_layout(*id)?.align,
            CType::Int(i) if i.bits > 32 && self.model == DataModel::Ilp32 => 4,
            CType::Float(b) => self.float_part(*b).1,
            t => self.size_of(t)?,
        })
    }

    /// Size and alignment of one part of a floating type: on ILP32 (i386) `double` is aligned
    /// to 4 and `long double` is 12 bytes aligned to 4; on LP64 `long double` is 16 bytes.
    fn float_part(&self, code: u8) -> (u64, u64) {
        let bytes = (code & !FLOAT_COMPLEX) as u64;
        match (bytes, self.model) {
            (16, DataModel::Ilp32) => (12, 4),
            (8, DataModel::Ilp32) => (8, 4),
            (b, _) => (b, b.max(1)),
        }
    }

    /// Size and alignment of a struct or union as gcc lays it out on x86 (the System V ABI):
    /// each member at the next multiple of its alignment; a bit-field in the storage unit of
    /// its declared type unless it would span more units of that type's alignment than the
    /// type itself has (then at the next such boundary); a zero-width bit-field moves to the
    /// next boundary of its type's alignment; unnamed bit-fields do not align the struct.
    /// Whether a type's layout depends on run-time values (a struct with a VLA member, in
    /// arrays or nested structs).
    pub fn is_variable(&self, t: &CType) -> bool {
        match t {
            CType::Struct(id) => self.structs[*id].variable,
            CType::Array(e, _) => self.is_variable(e),
            _ => false,
        }
    }

    pub fn struct_layout(&self, id: StructId) -> Option<Layout> {
        let def = &self.structs[id];
        if def.variable {
            return None;
        }
        let fields = def.fields.as_ref()?;
        let mut bits = 0u64; // the next free bit (structs) or the largest member (unions)
        let mut align = 1u64;
        let mut offsets = Vec::with_capacity(fields.len());
        let mut pending = def.bit_fields.iter().peekable();
        let place_bit_field = |bf: &BitField, bits: &mut u64, align: &mut u64| -> Option<()> {
            let ty = CType::Int(bf.declared);
            let (size, talign) = (self.size_of(&ty)? * 8, self.align_of(&ty)? * 8);
            let width = bf.width as u64;
            if bf.named {
                *align = (*align).max(talign / 8);
            }
            if def.union {
                *bits = (*bits).max(width);
            } else if width == 0 {
                *bits = bits.div_ceil(talign) * talign;
            } else {
                if (*bits % talign + width).div_ceil(talign) > size / talign {
                    *bits = bits.div_ceil(talign) * talign;
                }
                *bits += width;
            }
            Some(())
        };
        for (i, (_, ft)) in fields.iter().enumerate() {
            while let Some(bf) = pending.next_if(|bf| bf.index == i && !bf.named) {
                place_bit_field(bf, &mut bits, &mut align)?;
            }
            if let Some(bf) = pending.next_if(|bf| bf.index == i && bf.named) {
                place_bit_field(bf, &mut bits, &mut align)?;
                offsets.push(None);
                continue;
            }
            let (fs, fa) = match ft {
                // A flexible array member (the last one) adds no size, only its alignment.
                CType::Array(e, None) => (0, self.align_of(e)?),
                ft => (self.size_of(ft)? * 8, self.align_of(ft)?),
            };
            align = align.max(fa);
            if def.union {
                offsets.push(Some(0));
                bits = bits.max(fs);
            } else {
                let at = bits.div_ceil(fa * 8) * fa * 8;
                offsets.push(Some(at / 8));
                bits = at + fs;
            }
        }
        for bf in pending {
            place_bit_field(bf, &mut bits, &mut align)?;
        }
        Some(Layout { size: bits.div_ceil(8).div_ceil(align) * align, align, offsets })
    }

    /// `offsetof`: the byte offset of member `name` of a struct or union, looked up through
    /// anonymous members too; `None` for a bit-field or an unknown member.
    pub fn member_offset(&self, id: StructId, name: &str) -> Option<(u64, CType)> {
        let layout = self.struct_layout(id)?;
        let fields = self.structs[id].fields.as_ref()?;
        if let Some(i) = fields.iter().position(|(n, _)| n == name) {
            return Some((layout.offsets[i]?, fields[i].1.clone()));
        }
        fields.iter().zip(&layout.offsets).find_map(|((n, t), off)| match t {
            CType::Struct(inner) if n.is_empty() => self.member_offset(*inner, name).and_then(|(o, t)| Some((o + (*off)?, t))),
            _ => None,
        })
    }

    pub fn field(&self, id: StructId, name: &str) -> Option<(usize, &CType)> {
        let fields = self.structs[id].fields.as_ref()?;
        fields.iter().enumerate().find(|(_, (n, _))| n == name).map(|(i, (_, t))| (i, t))
    }

    /// The pointee of a parameter type that can be passed by reference as copy-in/copy-out: a
    /// pointer to a complete struct whose leaves are scalars (arrays would need whole-array
    /// copies; unions and floats are opaque anyway).
    pub fn by_reference_pointee(&self, t: &CType) -> Option<CType> {
        fn copyable(tt: &TypeTable, t: &CType, depth: u32) -> bool {
            match t {
                CType::Int(_) | CType::Ptr(_) | CType::Float(_) => true,
                CType::Struct(id) if depth < 16 => {
                    let def = &tt.structs[*id];
                    def.union || def.fields.as_ref().is_some_and(|fs| fs.iter().all(|(_, f)| copyable(tt, f, depth + 1)))
                }
                _ => false,
            }
        }
        match t {
            CType::Ptr(p) => match &**p {
                CType::Struct(id) if !self.structs[*id].union && self.structs[*id].fields.is_some() && copyable(self, p, 0) => {
                    Some((**p).clone())
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// A readable name for messages.
    pub fn display(&self, t: &CType) -> String {
        match t {
            CType::Void => "void".into(),
            CType::Int(i) => i.c_name().into(),
            CType::Float(4) => "float".into(),
            CType::Float(8) => "double".into(),
            CType::Float(b) if b & FLOAT_COMPLEX != 0 => format!("{} _Complex", self.display(&CType::Float(b & !FLOAT_COMPLEX))),
            CType::Float(_) => "long double".into(),
            CType::Ptr(p) => format!("{} *", self.display(p)),
            CType::Array(e, Some(n)) => format!("{}[{}]", self.display(e), n),
            CType::Array(e, None) => format!("{}[]", self.display(e)),
            CType::Struct(id) => {
                let d = &self.structs[*id];
                format!("{} {}", if d.union { "union" } else { "struct" }, d.name)
            }
            CType::Func(_) => "function".into(),
        }
    }
}

/// The storage a C object is flattened into: integer scalars and one-dimensional integer arrays
/// are IR variables; structs are trees of fields; unions and floats are opaque.
#[derive(Clone, Debug)]
pub enum Obj {
    Scalar(VarId),
    /// An integer array (or a field of an array of structs); `dims` are the C dimensions,
    /// outermost first, the first possibly unknown (0).
    Array(VarId, Vec<u64>),
    Struct(Vec<(String, Rc<Obj>)>),
    Opaque,
}

impl Obj {
    /// Every IR variable of the object.
    pub fn vars(&self, out: &mut Vec<VarId>) {
        match self {
            Obj::Scalar(v) | Obj::Array(v, _) => out.push(*v),
            Obj::Struct(fields) => fields.iter().for_each(|(_, f)| f.vars(out)),
            Obj::Opaque => {}
        }
    }

    pub fn field(&self, name: &str) -> Option<Rc<Obj>> {
        match self {
            Obj::Struct(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, o)| o.clone()),
            _ => None,
        }
    }
}
