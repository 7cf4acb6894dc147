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
}

impl CType {
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
}

impl TypeTable {
    pub fn new(model: DataModel) -> TypeTable {
        TypeTable { model, structs: Vec::new() }
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

    /// `sizeof` in bytes; `None` for incomplete types.
    pub fn size_of(&self, t: &CType) -> Option<u64> {
        Some(match t {
            CType::Void => 1,
            CType::Int(i) => (i.bits / 8).max(1) as u64,
            CType::Float(b) => *b as u64,
            CType::Ptr(_) | CType::Func(_) => (self.model.long_bits() / 8) as u64,
            CType::Array(e, n) => self.size_of(e)?.checked_mul((*n)?)?,
            CType::Struct(id) => {
                let def = &self.structs[*id];
                let fields = def.fields.as_ref()?;
                let mut size = 0u64;
                let mut align = 1u64;
                for (_, ft) in fields {
                    let (fs, fa) = (self.size_of(ft)?, self.align_of(ft)?);
                    align = align.max(fa);
                    if def.union {
                        size = size.max(fs);
                    } else {
                        size = size.div_ceil(fa) * fa + fs;
                    }
                }
                size.div_ceil(align) * align
            }
        })
    }

    pub fn align_of(&self, t: &CType) -> Option<u64> {
        Some(match t {
            CType::Array(e, _) => self.align_of(e)?,
            CType::Struct(id) => {
                let fields = self.structs[*id].fields.as_ref()?;
                fields.iter().map(|(_, f)| self.align_of(f)).try_fold(1u64, |a, b| Some(a.max(b?)))?
            }
            CType::Int(i) if i.bits == 64 && self.model == DataModel::Ilp32 => 4,
            CType::Float(8) if self.model == DataModel::Ilp32 => 4,
            CType::Float(b) if *b > 8 => 16,
            t => self.size_of(t)?,
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
