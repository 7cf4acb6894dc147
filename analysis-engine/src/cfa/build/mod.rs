//! Builds the program's CFAs from a lang-c translation unit: one automaton per function body,
//! plus a synthetic start function that initialises globals (zero by default) and calls the
//! entry function.
//!
//! The builder resolves C's types and makes every conversion explicit in the IR. It never
//! panics on user input: malformed programs give a [`BuildError`] with a position, constructs
//! it cannot model give `Unknown` values or `Unsupported` statements (see [`crate::ir`]).

mod blocks;
mod byref;
mod consts;
mod expr;
mod func;
mod indirect;
mod init;
mod memory;
pub use memory::{cell_arrays, ALLOCATIONS_SUCCEED, SIZES};
pub mod types;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use lang_c::ast::{
    ArraySize, DeclarationSpecifier, Declarator, DeclaratorKind, DerivedDeclarator, Ellipsis, ExternalDeclaration, FunctionDefinition,
    SpecifierQualifier, StorageClassSpecifier, StructDeclaration, StructKind, StructType, TypeName, TypeOf, TypeSpecifier,
};
use lang_c::span::{Node, Span as LSpan};

use crate::cfa::loops::finish_cfa;
use crate::cfa::{BuildNote, Cfa, DataModel, EdgeKind, Function, Program, PropertySet, SrcRange};
use crate::frontend::{Parsed, SrcPos};
use crate::ir::{FuncId, IntTy, VarId, VarInfo, VarKind};

use func::FnState;
use types::{CType, FuncSig, Obj, StructDef, StructId, TypeTable};

/// Why a translation unit has no CFA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    pub pos: SrcPos,
    pub message: String,
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: {}", self.pos.file, self.pos.line, self.pos.col, self.message)
    }
}

type BResult<T> = Result<T, BuildError>;

/// What an ordinary identifier denotes in a scope.
#[derive(Clone, Debug)]
enum Sym {
    Var(Rc<Obj>, CType),
    /// An object in memory (the memory model): its address and type.
    At(crate::ir::Expr, CType),
    /// A parameter `struct S *p` passed by reference ([`byref`]): the copy of the pointee it
    /// stands for, and the pointer type.
    Ref(Rc<Obj>, CType),
    Func(String, Rc<FuncSig>),
    /// An enumeration constant: its value and type (`int` or the enumeration's type).
    EnumConst(i128, IntTy),
    Typedef(CType),
}

#[derive(Default)]
struct Scope {
    ordinary: HashMap<String, Sym>,
    tags: HashMap<String, StructId>,
    /// The block's variables with a `cleanup` attribute, as the unsupported construct each
    /// is: its call happens wherever control leaves the block.
    cleanups: Vec<String>,
}

/// Where new variables are allocated.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Store {
    Global,
    Local,
}

/// How the variables of an object are allocated.
#[derive(Copy, Clone)]
struct Alloc {
    /// The function whose locals they are (if `store` is `Local`).
    func: FuncId,
    store: Store,
    /// Variables the builder introduces (not the user's).
    synthetic: bool,
}

/// A declarator applied to a base type: the declared name, its type, and the parameter names
/// if it declares a function.
type Declared = (Option<String>, CType, Option<Vec<Option<String>>>);

/// Translation-unit state shared by all function builders.
struct ProgCx<'p> {
    parsed: &'p Parsed,
    types: TypeTable,
    scopes: Vec<Scope>,
    globals: Vec<VarInfo>,
    /// Functions with a body, numbered in definition order.
    func_ids: HashMap<String, FuncId>,
    escaped: BTreeSet<VarId>,
    notes: Vec<BuildNote>,
    /// See [`Program::asynchronous`].
    asynchronous: Option<BuildNote>,
    /// Names of functions whose address is taken (calls through pointers may reach them).
    address_taken_funcs: BTreeSet<String>,
    /// The start function, while a function body is being built (static initialisers go there).
    start: Option<FnState>,
    /// Functions called but not defined in the translation unit.
    externals: BTreeSet<String>,
    /// Parameters passed by reference, as copy-in/copy-out ([`byref`]).
    byref: byref::ByRef,
    /// What calls through pointers, callbacks and `atexit` handlers may reach ([`indirect`]).
    indirect: indirect::Indirect,
    /// Which targets are properties (the others are not targets at all).
    props: PropertySet,
    /// Whether array subscripts are bounds-checked ([`BuildOptions::assume_in_bounds`]).
    bounds_checks: bool,
    /// Whether an allocation may return null ([`BuildOptions::assume_allocations_succeed`]).
    allocations_may_fail: bool,
    /// The memory model, when this build uses it ([`memory`]).
    mem: Option<memory::Memory>,
    /// The declaration of each user variable (to find the same declarations in a second build).
    decl_keys: HashMap<VarId, memory::DeclKey>,
    /// The declaration of each opaque object (a union, a float: no variables), by identity.
    opaque_decls: HashMap<*const Obj, memory::DeclKey>,
    /// Declarations of opaque objects whose address is taken.
    escaped_keys: HashSet<memory::DeclKey>,
    /// Temporaries holding the result of an allocation (memory model): converting it from
    /// `void *` to a typed pointer is not type punning.
    alloc_results: HashSet<VarId>,
    /// Whether the program reads or writes through pointers or allocates (a first build
    /// without the memory model notes it: the second build then uses the model).
    uses_memory: bool,
    /// The C library models linked into the unit ([`crate::frontend::models`]), with their own
    /// signatures (calls use them whatever the program declared).
    models: HashMap<String, Rc<FuncSig>>,
    /// The names of the project's other files linked into the unit ([`BuildOptions::linked_files`]).
    linked: Vec<String>,
}

/// What the automata are built for besides the data model.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Which targets are properties (`--property`; default all three kinds).
    pub properties: PropertySet,
    /// The only entry (`--function`, or the `init(…)` of a property file); `None`: `main` and
    /// every function nothing calls.
    pub entry: Option<String>,
    /// No out-of-bounds checks (`--assume-in-bounds`): every array subscript is assumed within
    /// its array, so proofs hold only for executions without such an access (the setting of
    /// the papers' examples, which check nothing else).
    pub assume_in_bounds: bool,
    /// Allocations never fail (`--assume-allocations-succeed`, SV-COMP's rule and CBMC's
    /// default): `malloc`, `calloc`, `realloc` and the others never return null, so proofs hold
    /// only for runs in which none does (a note says so at the first allocation).
    pub assume_allocations_succeed: bool,
    /// Build without the memory model (every access through a pointer over-approximated).
    pub no_memory_model: bool,
    /// The file's own preprocessor flags (`-I`, `-D`, `-U`, `-std=`, `-include`; from a
    /// `compile_commands.json`), given to `cc -E` after cpals's own.
    pub preprocessor_flags: Vec<String>,
    /// The project's other files with their flags (a compilation database): those defining
    /// functions the file calls are linked in ([`crate::frontend::parse_project`]); their
    /// functions are never entries.
    pub linked_files: Vec<(std::path::PathBuf, Vec<String>)>,
}

/// Builds the automata of a parsed translation unit (every property, the default entries).
pub fn build_program(parsed: &Parsed, model: DataModel) -> Result<Program, BuildError> {
    build_program_with(parsed, model, &BuildOptions::default())
}

/// Builds the automata of a parsed translation unit for the given properties and entry.
///
/// A first build finds the objects whose address is taken. When there are some, a second
/// build puts them in memory ([`memory`]); a program that may read memory with another type
/// than it wrote it is built a third time, with tagged memory ([`memory::Tags`]); if the memory
/// model cannot represent the program even so (an object too large, a recursive function
/// taking a local's address), the first build is the result.
pub fn build_program_with(parsed: &Parsed, model: DataModel, opts: &BuildOptions) -> Result<Program, BuildError> {
    let (first, keys, uses_memory) = build_entries(parsed, model, opts, None)?;
    if (keys.is_empty() && !uses_memory) || opts.no_memory_model {
        return Ok(first);
    }
    let second = match build_entries(parsed, model, opts, Some((keys.clone(), false))) {
        Err(e) if e.message.starts_with(memory::NEEDS_TAGS) => build_entries(parsed, model, opts, Some((keys, true))),
        r => r,
    };
    match second {
        Ok((second, _, _)) => Ok(second),
        Err(e) if e.message.starts_with(memory::GIVE_UP) => {
            // Said once, where it happened: reads through pointers are then any value.
            let mut first = first;
            let p = e.pos;
            let pos = SrcRange { file: p.file, line: p.line, col: p.col, end_line: p.line, end_col: p.col };
            first.notes.insert(0, BuildNote { pos, message: e.message });
            Ok(first)
        }
        Err(e) => Err(e),
    }
}

/// Said by a build whose entries include a function with function pointer parameters, in a
/// program where no pointer was known to come from outside the file: it is built again with
/// every call through a pointer open to a function outside the file.
const FOREIGN_ENTRY: &str = "an entry takes function pointers: ";

/// [`build_once`], again when an entry's function pointer parameters make pointers foreign.
fn build_entries(
    parsed: &Parsed,
    model: DataModel,
    opts: &BuildOptions,
    memory: Option<(HashSet<memory::DeclKey>, bool)>,
) -> Result<(Program, HashSet<memory::DeclKey>, bool), BuildError> {
    match build_once(parsed, model, opts, memory.clone(), None) {
        Err(e) if e.message.starts_with(FOREIGN_ENTRY) => {
            build_once(parsed, model, opts, memory, Some(e.message[FOREIGN_ENTRY.len()..].to_string()))
        }
        r => r,
    }
}

/// One build; with `memory`, the declarations whose objects live in memory and whether memory
/// is tagged; with `foreign`, why a function pointer may hold a function outside the file
/// when the file itself does not say. Returns the program and the declarations whose address
/// was taken.
fn build_once(
    parsed: &Parsed,
    model: DataModel,
    opts: &BuildOptions,
    memory: Option<(HashSet<memory::DeclKey>, bool)>,
    foreign: Option<String>,
) -> Result<(Program, HashSet<memory::DeclKey>, bool), BuildError> {
    let file: Arc<str> = parsed.linemap.main_file().clone();
    let mut cx = ProgCx {
        parsed,
        types: TypeTable::new(model),
        scopes: vec![Scope::default()],
        globals: Vec::new(),
        func_ids: HashMap::new(),
        escaped: BTreeSet::new(),
        notes: Vec::new(),
        asynchronous: None,
        address_taken_funcs: BTreeSet::new(),
        start: None,
        externals: BTreeSet::new(),
        byref: byref::by_reference_params(&parsed.unit),
        indirect: {
            let mut ind = indirect::scan(parsed, model);
            if ind.foreign.is_none() {
                ind.foreign = foreign;
            }
            ind
        },
        props: opts.properties,
        bounds_checks: !opts.assume_in_bounds,
        allocations_may_fail: !opts.assume_allocations_succeed,
        mem: None,
        decl_keys: HashMap::new(),
        opaque_decls: HashMap::new(),
        escaped_keys: HashSet::new(),
        alloc_results: HashSet::new(),
        uses_memory: false,
        models: HashMap::new(),
        linked: opts.linked_files.iter().map(|(p, _)| p.display().to_string()).collect(),
    };
    // Function ids in definition order; the start function comes last.
    let mut names = Vec::new();
    for ext in &parsed.unit.0 {
        if let ExternalDeclaration::FunctionDefinition(fd) = &ext.node {
            if let Some(name) = declarator_name(&fd.node.declarator.node) {
                if cx.func_ids.contains_key(&name) {
                    return Err(cx.err(fd.span, format!("redefinition of function `{}`", name)));
                }
                cx.func_ids.insert(name.clone(), FuncId(names.len() as u32));
                names.push(name);
            }
        }
    }
    // The library models' signatures (builtin types only), known before any call of them.
    for ext in &parsed.unit.0 {
        if let ExternalDeclaration::FunctionDefinition(fd) = &ext.node {
            if crate::frontend::models::is_model_file(&cx.pos(fd.span).file) {
                let base = cx.decl_base_type(&fd.node.specifiers, fd.span)?;
                if let (Some(name), CType::Func(sig), _) = cx.declarator(base, &fd.node.declarator.node)? {
                    cx.models.insert(name, sig);
                }
            }
        }
    }
    if names.len() + 1 >= VarId::LIMIT {
        return Err(cx.err(LSpan::span(0, 0), "too many functions".into()));
    }
    let start_id = FuncId(names.len() as u32);
    cx.start = Some(FnState::new(start_id, "__cpals_start".into(), 1, CType::Void));
    if let Some((keys, tagged)) = memory {
        memory::set_up(&mut cx, keys, tagged)?;
    }
    let mut functions: Vec<Option<Function>> = vec![None; names.len()];

    for ext in &parsed.unit.0 {
        match &ext.node {
            ExternalDeclaration::Declaration(d) => {
                let mut start = cx.start.take().expect("start function");
                let r = func::FnBuilder { cx: &mut cx, st: &mut start }.declaration(d, Store::Global);
                cx.start = Some(start);
                r?;
            }
            ExternalDeclaration::StaticAssert(_) => {}
            ExternalDeclaration::FunctionDefinition(fd) => {
                let f = cx.function(fd, &file)?;
                let id = f.cfa.func;
                functions[id.0 as usize] = Some(f);
            }
        }
    }

    let entry = cx.func_ids.get("main").copied();
    let functions: Vec<Function> = functions.into_iter().map(|f| f.expect("every definition built")).collect();
    // The start function: global initialisers, then a nondeterministic choice among the
    // entries (DESIGN.md "Properties"): `main` and every function nothing calls, or the one
    // entry asked for.
    let roots: Vec<FuncId> = match &opts.entry {
        Some(name) => match cx.func_ids.get(name) {
            Some(&f) => vec![f],
            None => return Err(cx.err(LSpan::none(), format!("no function `{}` is defined", name))),
        },
        None => default_roots(parsed, &cx, &functions, entry),
    };
    // An entry's function pointer parameters may hold any function, of the file or not: every
    // call through a pointer then has a branch for a function outside the file (at the call,
    // where that function would run).
    if cx.indirect.foreign.is_none() {
        if let Some(r) = roots.iter().find(|r| {
            let name = &functions[r.0 as usize].name;
            name != "main" && cx.indirect.takes_fn_ptr.contains(name)
        }) {
            let why = format!("a function pointer parameter of the entry `{}`", functions[r.0 as usize].name);
            return Err(BuildError { pos: cx.pos(LSpan::none()), message: format!("{}{}", FOREIGN_ENTRY, why) });
        }
    }
    let mut start = cx.start.take().expect("start function");
    func::FnBuilder { cx: &mut cx, st: &mut start }.call_roots(&roots, &functions)?;
    let root_edges = start.root_edges.clone();
    let start_cfa = start.finish(&mut cx)?;
    let mut functions = functions;
    functions.push(Function { name: "__cpals_start".into(), cfa: Arc::new(start_cfa), file: file.clone(), first_line: 1 });
    let by_name = functions.iter().enumerate().map(|(i, f)| (f.name.clone(), FuncId(i as u32))).collect();
    if let Some((why, span)) = cx.mem.as_ref().and_then(|m| m.fallback.clone()) {
        let message = format!("{} ({}): reads through pointers are any value, writes havoc what they may reach", memory::GIVE_UP, why);
        return Err(BuildError { pos: cx.pos(span), message });
    }
    if let Some((why, span)) = cx.mem.as_ref().and_then(|m| m.punning.clone()) {
        return Err(BuildError { pos: cx.pos(span), message: format!("{} ({})", memory::NEEDS_TAGS, why) });
    }
    let mut addressed: HashSet<memory::DeclKey> = cx.escaped.iter().filter_map(|v| cx.decl_keys.get(v).cloned()).collect();
    addressed.extend(cx.escaped_keys.iter().cloned());
    let file_start = cx.pos(LSpan::none());
    let mut notes = cx.notes;
    notes.sort_by_key(|n| (n.pos.line, n.pos.col));
    notes.dedup();
    let objects = cx.mem.as_ref().map(|m| m.names.clone());
    let program = Program {
        file,
        source: Arc::from(""),
        data_model: model,
        globals: cx.globals,
        functions,
        by_name,
        start: start_id,
        entry,
        roots: root_edges,
        escaped: cx.escaped.into_iter().collect(),
        externals: cx.externals.into_iter().collect(),
        notes,
        properties: opts.properties,
        objects,
        asynchronous: cx.asynchronous,
    };
    if let Some(m) = &cx.mem {
        // Automatic objects in memory have fixed ids: a recursive function's activations would
        // share them.
        if let Some(f) = program.recursive_functions().into_iter().find(|f| m.frames.contains(f)) {
            let name = &program.functions[f.0 as usize].name;
            let message = format!(
                "{} (the recursive function `{}` takes the address of a local): reads through pointers are any value, writes havoc what they may reach",
                memory::GIVE_UP,
                name
            );
            return Err(BuildError { pos: file_start, message });
        }
    }
    Ok((program, addressed, cx.uses_memory))
}

/// The default entries: `main` (if there is one) and every function that nothing in the file
/// calls (other than itself) or takes the address of, among those that reach a property.
fn default_roots(parsed: &Parsed, cx: &ProgCx, functions: &[Function], main: Option<FuncId>) -> Vec<FuncId> {
    use lang_c::visit::Visit;
    /// Names called in a function body.
    struct Calls<'n> {
        names: &'n mut BTreeSet<String>,
    }
    impl<'ast> Visit<'ast> for Calls<'_> {
        fn visit_call_expression(&mut self, c: &'ast lang_c::ast::CallExpression, span: &'ast LSpan) {
            if let lang_c::ast::Expression::Identifier(id) = &c.callee.node {
                self.names.insert(id.node.name.clone());
            }
            lang_c::visit::visit_call_expression(self, c, span);
        }
    }
    let mut called: BTreeSet<String> = cx.address_taken_funcs.clone();
    // The library models are called by the program or not at all: never entries.
    called.extend(cx.models.keys().cloned());
    // Neither are the functions of the project's other files.
    let linked: HashSet<String> = cx.linked.iter().cloned().collect();
    called.extend(functions.iter().filter(|f| linked.contains(&*f.file)).map(|f| f.name.clone()));
    // Functions the program runs without a call in the file: constructors and destructors,
    // `atexit` handlers, functions used as values (called through pointers) and aliases.
    let ind = &cx.indirect;
    called.extend(ind.constructors.iter().chain(&ind.destructors).chain(&ind.atexit).chain(&ind.values).cloned());
    called.extend(ind.aliases.values().cloned());
    for ext in &parsed.unit.0 {
        let mut names = BTreeSet::new();
        let own = match &ext.node {
            ExternalDeclaration::FunctionDefinition(fd) => declarator_name(&fd.node.declarator.node),
            _ => None,
        };
        Calls { names: &mut names }.visit_external_declaration(&ext.node, &ext.span);
        if let Some(own) = own {
            names.remove(&own);
        }
        called.extend(names);
    }
    // A function from which no property is reachable has nothing to verify. Those from which
    // one is: the functions with a target and, transitively, their callers (one backward
    // search over the call graph, not a forward one per candidate).
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); functions.len()];
    for (f, func) in functions.iter().enumerate() {
        for g in func.cfa.callees() {
            callers[g.0 as usize].push(f);
        }
    }
    let mut reaches_target: Vec<bool> = functions.iter().map(|f| !f.cfa.targets.is_empty()).collect();
    let mut stack: Vec<usize> = (0..functions.len()).filter(|&f| reaches_target[f]).collect();
    while let Some(g) = stack.pop() {
        for &f in &callers[g] {
            if !std::mem::replace(&mut reaches_target[f], true) {
                stack.push(f);
            }
        }
    }
    (0..functions.len() as u32)
        .map(FuncId)
        .filter(|&f| Some(f) == main || (!called.contains(&functions[f.0 as usize].name) && reaches_target[f.0 as usize]))
        .collect()
}

fn declarator_name(d: &Declarator) -> Option<String> {
    match &d.kind.node {
        DeclaratorKind::Identifier(id) => Some(id.node.name.clone()),
        DeclaratorKind::Declarator(inner) => declarator_name(&inner.node),
        DeclaratorKind::Abstract => None,
    }
}

impl<'p> ProgCx<'p> {
    fn pos(&self, span: LSpan) -> SrcPos {
        if span.is_none() {
            return SrcPos { file: self.parsed.linemap.main_file().clone(), line: 1, col: 1 };
        }
        self.parsed.linemap.pos(span.start)
    }

    fn err(&self, span: LSpan, message: String) -> BuildError {
        BuildError { pos: self.pos(span), message }
    }

    fn range(&self, span: LSpan) -> SrcRange {
        let s = self.pos(span);
        let e = if span.is_none() { s.clone() } else { self.parsed.linemap.pos(span.end) };
        let (end_line, end_col) = if e.file == s.file { (e.line, e.col) } else { (s.line, s.col) };
        SrcRange { file: s.file, line: s.line, col: s.col, end_line, end_col }
    }

    fn note(&mut self, span: LSpan, message: impl Into<String>) {
        let pos = self.range(span);
        self.notes.push(BuildNote { pos, message: message.into() });
    }

    fn lookup(&self, name: &str) -> Option<&Sym> {
        self.scopes.iter().rev().find_map(|s| s.ordinary.get(name))
    }

    fn lookup_tag(&self, name: &str) -> Option<StructId> {
        self.scopes.iter().rev().find_map(|s| s.tags.get(name).copied())
    }

    fn declare(&mut self, name: String, sym: Sym) {
        self.scopes.last_mut().expect("file scope").ordinary.insert(name, sym);
    }

    fn is_typedef_decl(specs: &[Node<DeclarationSpecifier>]) -> bool {
        specs.iter().any(|s| matches!(&s.node, DeclarationSpecifier::StorageClass(c) if c.node == StorageClassSpecifier::Typedef))
    }

    fn storage(specs: &[Node<DeclarationSpecifier>]) -> Option<StorageClassSpecifier> {
        specs.iter().find_map(|s| match &s.node {
            DeclarationSpecifier::StorageClass(c) if c.node != StorageClassSpecifier::Typedef => Some(c.node.clone()),
            _ => None,
        })
    }

    /// The type named by a list of declaration specifiers.
    fn decl_base_type(&mut self, specs: &[Node<DeclarationSpecifier>], span: LSpan) -> BResult<CType> {
        let ts: Vec<&Node<TypeSpecifier>> = specs
            .iter()
            .filter_map(|s| match &s.node {
                DeclarationSpecifier::TypeSpecifier(t) => Some(t),
                _ => None,
            })
            .collect();
        self.base_type(&ts, span)
    }

    fn sq_base_type(&mut self, specs: &[Node<SpecifierQualifier>], span: LSpan) -> BResult<CType> {
        let ts: Vec<&Node<TypeSpecifier>> = specs
            .iter()
            .filter_map(|s| match &s.node {
                SpecifierQualifier::TypeSpecifier(t) => Some(t),
                _ => None,
            })
            .collect();
        self.base_type(&ts, span)
    }

    fn base_type(&mut self, ts: &[&Node<TypeSpecifier>], span: LSpan) -> BResult<CType> {
        let (mut char_, mut short, mut int, mut long, mut signed, mut unsigned) = (0, 0, 0, 0, 0, 0);
        let (mut float, mut double, mut bool_, mut void, mut complex) = (0, 0, 0, 0, 0);
        let mut other: Option<CType> = None;
        for t in ts {
            match &t.node {
                TypeSpecifier::Void => void += 1,
                TypeSpecifier::Char => char_ += 1,
                TypeSpecifier::Short => short += 1,
                TypeSpecifier::Int => int += 1,
                TypeSpecifier::Long => long += 1,
                TypeSpecifier::Float => float += 1,
                TypeSpecifier::Double => double += 1,
                TypeSpecifier::Signed => signed += 1,
                TypeSpecifier::Unsigned => unsigned += 1,
                TypeSpecifier::Bool => bool_ += 1,
                TypeSpecifier::Complex => complex += 1,
                TypeSpecifier::Atomic(tn) => other = Some(self.type_name(&tn.node, tn.span)?),
                TypeSpecifier::Struct(st) => other = Some(self.struct_type(&st.node, st.span)?),
                TypeSpecifier::Enum(et) => other = Some(self.enum_type(&et.node, et.span)?),
                TypeSpecifier::TypedefName(id) if id.node.name == "__builtin_va_list" => other = Some(self.types.va_list()),
                TypeSpecifier::TypedefName(id) => match self.lookup(&id.node.name) {
                    Some(Sym::Typedef(t)) => other = Some(t.clone()),
                    _ => return Err(self.err(id.span, format!("unknown type name `{}`", id.node.name))),
                },
                TypeSpecifier::TypeOf(to) => match &to.node {
                    TypeOf::Type(tn) => other = Some(self.type_name(&tn.node, tn.span)?),
                    TypeOf::Expression(e) => {
                        other = Some(match consts::expr_type_hint(self, &e.node) {
                            Some(t) => t,
                            None => return Err(self.err(to.span, "`typeof` of an expression is not supported here".into())),
                        })
                    }
                },
                TypeSpecifier::TS18661Float(f) => other = Some(CType::Float((f.width / 8).max(1) as u8)),
            }
        }
        if let Some(t) = other {
            return Ok(t);
        }
        if complex > 0 || float > 0 || double > 0 {
            let bytes = if float > 0 {
                4
            } else if long > 0 {
                16
            } else {
                8
            };
            return Ok(if complex > 0 { CType::complex(bytes) } else { CType::Float(bytes) });
        }
        if void > 0 {
            return Ok(CType::Void);
        }
        if bool_ > 0 {
            return Ok(CType::Int(IntTy::BOOL));
        }
        let is_signed = unsigned == 0;
        let ty = if char_ > 0 {
            IntTy::new(8, is_signed)
        } else if short > 0 {
            IntTy::new(16, is_signed)
        } else if long >= 2 {
            IntTy::new(64, is_signed)
        } else if long == 1 {
            self.types.long(is_signed)
        } else if int > 0 || signed > 0 || unsigned > 0 {
            IntTy::new(32, is_signed)
        } else {
            // Implicit int (old C) or no specifier at all.
            let _ = span;
            IntTy::INT
        };
        Ok(CType::Int(ty))
    }

    /// Whether a declarator declares a variable-length array (a size that is not constant).
    fn has_vla(&mut self, d: &Declarator) -> bool {
        d.derived.iter().any(|dd| match &dd.node {
            DerivedDeclarator::Array(a) => match &a.node.size {
                ArraySize::VariableUnknown => true,
                ArraySize::VariableExpression(e) | ArraySize::StaticExpression(e) => consts::eval(self, &e.node).is_none(),
                ArraySize::Unknown => false,
            },
            _ => false,
        })
    }

    fn struct_type(&mut self, st: &StructType, span: LSpan) -> BResult<CType> {
        let union = st.kind.node == StructKind::Union;
        let name = st.identifier.as_ref().map(|i| i.node.name.clone());
        let id = match (&name, &st.declarations) {
            (Some(n), None) => match self.lookup_tag(n) {
                Some(id) => id,
                None => self.new_struct(n.clone(), union),
            },
            (Some(n), Some(_)) => {
                let current = self.scopes.last().and_then(|s| s.tags.get(n).copied());
                match current {
                    Some(id) if self.types.structs[id].fields.is_none() => id,
                    _ => self.new_struct(n.clone(), union),
                }
            }
            (None, _) => {
                self.types.structs.push(StructDef {
                    name: "<anonymous>".into(),
                    union,
                    fields: None,
                    bit_fields: Vec::new(),
                    variable: false,
                });
                self.types.structs.len() - 1
            }
        };
        if let Some(decls) = &st.declarations {
            let mut fields: Vec<(String, CType)> = Vec::new();
            let mut bit_fields = Vec::new();
            let mut variable = false;
            for d in decls {
                let StructDeclaration::Field(f) = &d.node else { continue };
                let base = self.sq_base_type(&f.node.specifiers, f.span)?;
                if f.node.declarators.is_empty() {
                    // C11 anonymous struct or union member.
                    fields.push((String::new(), base));
                    continue;
                }
                for sd in &f.node.declarators {
                    let (fname, mut ft) = match &sd.node.declarator {
                        Some(dcl) => {
                            variable |= self.has_vla(&dcl.node);
                            let (n, t, _) = self.declarator(base.clone(), &dcl.node)?;
                            (n.unwrap_or_default(), t)
                        }
                        None => (String::new(), base.clone()),
                    };
                    if let Some(w) = &sd.node.bit_width {
                        let width = consts::eval(self, &w.node).unwrap_or(32);
                        if let CType::Int(it) = ft {
                            let named = !fname.is_empty();
                            bit_fields.push(types::BitField {
                                index: fields.len(),
                                named,
                                declared: it,
                                width: width.clamp(0, 128) as u32,
                            });
                            if width > 0 && width < it.bits as i128 && !it.boolean {
                                ft = CType::Int(IntTy::new(width as u8, it.signed));
                            }
                            // Unnamed bit-fields are padding: no value, and initialisers skip them.
                            if !named {
                                continue;
                            }
                        }
                        if width == 0 {
                            continue;
                        }
                    }
                    fields.push((fname, ft));
                }
            }
            variable |= fields.iter().any(|(_, t)| self.types.is_variable(t));
            self.types.structs[id].fields = Some(fields);
            self.types.structs[id].bit_fields = bit_fields;
            self.types.structs[id].variable = variable;
        }
        let _ = span;
        Ok(CType::Struct(id))
    }

    fn new_struct(&mut self, name: String, union: bool) -> StructId {
        self.types.structs.push(StructDef { name: name.clone(), union, fields: None, bit_fields: Vec::new(), variable: false });
        let id = self.types.structs.len() - 1;
        self.scopes.last_mut().expect("scope").tags.insert(name, id);
        id
    }

    fn type_name(&mut self, tn: &TypeName, span: LSpan) -> BResult<CType> {
        let base = self.sq_base_type(&tn.specifiers, span)?;
        match &tn.declarator {
            Some(d) => Ok(self.declarator(base, &d.node)?.1),
            None => Ok(base),
        }
    }

    /// Applies a declarator to a base type: `(name, type, parameter names if a function)`.
    fn declarator(&mut self, base: CType, d: &Declarator) -> BResult<Declared> {
        let mut t = base;
        for dd in &d.derived {
            if let DerivedDeclarator::Pointer(_) | DerivedDeclarator::Block(_) = dd.node {
                t = CType::Ptr(Box::new(t));
            }
        }
        let mut params_names = None;
        for dd in d.derived.iter().rev() {
            match &dd.node {
                DerivedDeclarator::Pointer(_) | DerivedDeclarator::Block(_) => {}
                DerivedDeclarator::Array(a) => {
                    let len = match &a.node.size {
                        ArraySize::Unknown | ArraySize::VariableUnknown => None,
                        ArraySize::VariableExpression(e) | ArraySize::StaticExpression(e) => {
                            consts::eval(self, &e.node).and_then(|v| u64::try_from(v).ok())
                        }
                    };
                    t = CType::Array(Box::new(t), len);
                }
                DerivedDeclarator::Function(fdecl) => {
                    self.scopes.push(Scope::default());
                    let mut params = Vec::new();
                    let mut names = Vec::new();
                    for p in &fdecl.node.parameters {
                        let pbase = self.decl_base_type(&p.node.specifiers, p.span);
                        let pbase = match pbase {
                            Ok(b) => b,
                            Err(e) => {
                                self.scopes.pop();
                                return Err(e);
                            }
                        };
                        let (pname, pty) = match &p.node.declarator {
                            Some(pd) => match self.declarator(pbase, &pd.node) {
                                Ok((n, t, _)) => (n, t),
                                Err(e) => {
                                    self.scopes.pop();
                                    return Err(e);
                                }
                            },
                            None => (None, pbase),
                        };
                        if pty == CType::Void && pname.is_none() {
                            continue;
                        }
                        params.push(pty.decay());
                        names.push(pname);
                    }
                    self.scopes.pop();
                    let unprototyped = fdecl.node.parameters.is_empty();
                    t = CType::Func(Rc::new(FuncSig { ret: t, params, variadic: fdecl.node.ellipsis == Ellipsis::Some, unprototyped }));
                    params_names = Some(names);
                }
                DerivedDeclarator::KRFunction(ids) => {
                    let names: Vec<Option<String>> = ids.iter().map(|i| Some(i.node.name.clone())).collect();
                    t = CType::Func(Rc::new(FuncSig {
                        ret: t,
                        params: vec![CType::Int(IntTy::INT); names.len()],
                        variadic: false,
                        unprototyped: true,
                    }));
                    params_names = Some(names);
                }
            }
        }
        match &d.kind.node {
            DeclaratorKind::Identifier(id) => Ok((Some(id.node.name.clone()), t, params_names)),
            DeclaratorKind::Abstract => Ok((None, t, params_names)),
            DeclaratorKind::Declarator(inner) => {
                let (n, t2, inner_params) = self.declarator(t, &inner.node)?;
                Ok((n, t2, inner_params.or(params_names)))
            }
        }
    }

    /// Creates the storage of a variable of type `ty`.
    fn alloc_obj(&mut self, locals: &mut Vec<VarInfo>, how: Alloc, name: &str, ty: &CType, dims: &[u64]) -> BResult<Obj> {
        let Alloc { func, store, synthetic } = how;
        let mk = |cx: &mut Self, locals: &mut Vec<VarInfo>, info: VarInfo| -> BResult<VarId> {
            match store {
                Store::Global => {
                    if cx.globals.len() >= VarId::LIMIT {
                        return Err(cx.err(LSpan::none(), "too many global variables".into()));
                    }
                    cx.globals.push(info);
                    Ok(VarId::global(cx.globals.len() - 1))
                }
                Store::Local => {
                    if locals.len() >= VarId::LIMIT {
                        return Err(cx.err(LSpan::none(), "too many local variables in one function".into()));
                    }
                    locals.push(info);
                    Ok(VarId::local(func, locals.len() - 1))
                }
            }
        };
        Ok(match ty {
            CType::Int(_) | CType::Ptr(_) => {
                let it = self.types.int_of(ty).expect("integer-like");
                let pointer = ty.is_pointer();
                if dims.is_empty() {
                    Obj::Scalar(mk(self, locals, VarInfo { name: name.into(), kind: VarKind::Int(it), synthetic, pointer })?)
                } else {
                    let len = if dims.contains(&0) { None } else { dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) };
                    let v = mk(self, locals, VarInfo { name: name.into(), kind: VarKind::Array { elem: it, len }, synthetic, pointer })?;
                    Obj::Array(v, dims.to_vec())
                }
            }
            CType::Array(elem, n) => {
                let mut d = dims.to_vec();
                d.push(n.unwrap_or(0));
                self.alloc_obj(locals, how, name, elem, &d)?
            }
            CType::Struct(id) => {
                let def = &self.types.structs[*id];
                if def.union {
                    return Ok(Obj::Opaque);
                }
                let Some(fields) = def.fields.clone() else { return Ok(Obj::Opaque) };
                let mut out = Vec::new();
                for (fname, ft) in fields {
                    let full = if fname.is_empty() { name.to_string() } else { format!("{}.{}", name, fname) };
                    let o = self.alloc_obj(locals, how, &full, &ft, dims)?;
                    out.push((fname, Rc::new(o)));
                }
                Obj::Struct(out)
            }
            CType::Float(_) | CType::Void | CType::Func(_) => Obj::Opaque,
        })
    }

    /// Builds one function definition into its automaton.
    fn function(&mut self, fd: &Node<FunctionDefinition>, file: &Arc<str>) -> BResult<Function> {
        let def = &fd.node;
        let base = self.decl_base_type(&def.specifiers, fd.span)?;
        let (name, ty, pnames) = self.declarator(base, &def.declarator.node)?;
        let name = name.ok_or_else(|| self.err(fd.span, "function definition without a name".into()))?;
        let CType::Func(sig) = ty else {
            return Err(self.err(fd.span, format!("`{}` is defined like a function but its type is not one", name)));
        };
        let id = self.func_ids[&name];
        self.declare(name.clone(), Sym::Func(name.clone(), sig.clone()));
        let start_pos = self.pos(fd.span);
        let fn_file: Arc<str> = if *start_pos.file == **file { file.clone() } else { start_pos.file.clone() };
        let mut st = FnState::new(id, name.clone(), start_pos.line, sig.ret.clone());
        {
            let mut b = func::FnBuilder { cx: self, st: &mut st };
            b.body(def, &sig, pnames.unwrap_or_default())?;
        }
        let mut cfa = st.finish(self)?;
        // A library model's properties (its accesses) are shown at each call, as a helper's.
        cfa.assert_helper |= self.models.contains_key(&name);
        Ok(Function { name, cfa: Arc::new(cfa), file: fn_file, first_line: start_pos.line })
    }
}

impl FnState {
    /// Freezes the automaton: checks gotos, numbers nodes, marks loop heads.
    fn finish(self, cx: &mut ProgCx) -> BResult<Cfa> {
        if let Some((label, span)) = self.gotos.iter().find(|(l, _)| !self.labels_defined.contains(l)) {
            return Err(cx.err(*span, format!("label `{}` used but not defined", label)));
        }
        let assert_helper = self.is_assert_helper();
        let mut ret = self.ret_vars;
        ret.extend(self.byref_out);
        let cfa = Cfa {
            name: self.name,
            func: self.func,
            params: self.params,
            ret,
            locals: self.locals,
            nodes: self.nodes,
            edges: self.edges,
            entry: self.entry,
            exit: self.exit,
            targets: self.targets,
            assert_helper,
        };
        Ok(finish_cfa(cfa))
    }

    /// `__VERIFIER_assert`-style: returns nothing, has parameters and a target, no loops,
    /// calls nothing but targets, writes nothing, and branches only on its parameters.
    fn is_assert_helper(&self) -> bool {
        if self.params.is_empty() || self.targets.is_empty() || !self.ret_vars.is_empty() {
            return false;
        }
        let on_params = |e: &crate::ir::Expr| {
            let mut vars = Vec::new();
            e.vars(&mut vars);
            vars.iter().all(|v| self.params.contains(v))
        };
        self.edges.iter().all(|e| match &e.kind {
            EdgeKind::Blank | EdgeKind::Return(_) => true,
            EdgeKind::Assume { cond, .. } => on_params(cond),
            _ => false,
        }) && !crate::cfa::loops::has_cycle(&self.nodes, &self.edges, self.entry)
    }
}
