//! The typed signature of a LeetCode (functional) problem, parsed from its Python starter
//! (`class Solution: def name(self, nums: List[int], k: int) -> int:`), and what each
//! language makes of it: the skeleton a model implements ([`Signature::skeleton`]) and the
//! names the judge's driver calls ([`Signature::callable`]).
//!
//! Supported types: `int`, `float`, `bool`, `str` and `List[T]` of those, nested to any
//! depth (`list[T]` too). Anything else (`TreeNode`, `ListNode`, `Optional[…]`, `Dict[…]`,
//! a missing annotation, `-> None`) is a [`SignatureError`]: `filter` rejects such a
//! problem, naming the type, since no driver could feed or read it.
//!
//! Python's `int` becomes a 64-bit integer everywhere (C++ `long long`, Java `long`, Go
//! `int`): Python integers are unbounded, so a 32-bit skeleton would make a correct algorithm
//! overflow on tests whose Python reference answer is right, and the judge would invent wrong
//! answers. Values past 64 bits stay out of reach of these languages, as on LeetCode.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use coreb_data::solution::Language;

/// A parameter or return type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Type {
    /// `int`.
    Int,
    /// `float`.
    Float,
    /// `bool`.
    Bool,
    /// `str`.
    Str,
    /// `List[T]`.
    List(Box<Type>),
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Int => f.write_str("int"),
            Type::Float => f.write_str("float"),
            Type::Bool => f.write_str("bool"),
            Type::Str => f.write_str("str"),
            Type::List(t) => write!(f, "List[{t}]"),
        }
    }
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// Its name in the starter.
    pub name: String,
    /// Its type.
    pub ty: Type,
}

/// A method's signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// The method's name in the starter (`maxValue`).
    pub method: String,
    /// Its parameters, `self` excluded.
    pub params: Vec<Param>,
    /// Its return type.
    pub returns: Type,
}

/// Why a starter gives no usable signature.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum SignatureError {
    /// No `def name(…)` in the starter.
    #[error("the starter code has no `def name(...)`")]
    NoMethod,
    /// A parameter without a type annotation.
    #[error("parameter `{param}` of `{method}` has no type annotation")]
    Unannotated {
        /// The method.
        method: String,
        /// The parameter.
        param: String,
    },
    /// The method declares no return type (or `-> None`).
    #[error(
        "`{method}` returns nothing (`-> None` or no annotation): there is no result to compare"
    )]
    NoReturn {
        /// The method.
        method: String,
    },
    /// A type the drivers cannot read or write.
    #[error(
        "unsupported type `{ty}` ({place} of `{method}`): only int, float, bool, str and List[...] of them have drivers"
    )]
    Unsupported {
        /// The method.
        method: String,
        /// `parameter `x`` or `return type`.
        place: String,
        /// The type as written.
        ty: String,
    },
}

/// Parse the first method (or function) of a Python starter.
pub fn parse(starter: &str) -> Result<Signature, SignatureError> {
    let def = starter
        .find("def ")
        .filter(|&i| i == 0 || !is_ident(starter.as_bytes()[i - 1]))
        .ok_or(SignatureError::NoMethod)?;
    let rest = &starter[def + 4..];
    let open = rest.find('(').ok_or(SignatureError::NoMethod)?;
    let method = rest[..open].trim().to_owned();
    if method.is_empty() || !method.bytes().all(is_ident) {
        return Err(SignatureError::NoMethod);
    }
    // The parameter list ends at the `)` that closes the `(` (types hold brackets only).
    let close = open + rest[open..].find(')').ok_or(SignatureError::NoMethod)?;
    let after = &rest[close + 1..];
    let colon = after.find(':').ok_or(SignatureError::NoMethod)?;
    let annotation = after[..colon].trim();
    let mut params = Vec::new();
    for (i, part) in split_top(&rest[open + 1..close]).into_iter().enumerate() {
        let part = part.trim();
        if part.is_empty() || (i == 0 && part == "self") {
            continue;
        }
        let (name, ty) = match part.split_once(':') {
            Some((n, t)) => (n.trim(), t.split('=').next().unwrap_or("").trim()),
            None => {
                return Err(SignatureError::Unannotated {
                    method,
                    param: part.split('=').next().unwrap_or(part).trim().to_owned(),
                });
            }
        };
        let ty = parse_type(ty).ok_or_else(|| SignatureError::Unsupported {
            method: method.clone(),
            place: format!("parameter `{name}`"),
            ty: ty.to_owned(),
        })?;
        params.push(Param { name: name.to_owned(), ty });
    }
    let returns = match annotation.strip_prefix("->").map(str::trim) {
        None | Some("None") => return Err(SignatureError::NoReturn { method }),
        Some(t) => parse_type(t).ok_or_else(|| SignatureError::Unsupported {
            method: method.clone(),
            place: "return type".into(),
            ty: t.to_owned(),
        })?,
    };
    Ok(Signature { method, params, returns })
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Split on commas outside brackets.
fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_type(t: &str) -> Option<Type> {
    let t = t.trim();
    Some(match t {
        "int" => Type::Int,
        "float" => Type::Float,
        "bool" => Type::Bool,
        "str" => Type::Str,
        _ => {
            let inner =
                t.strip_prefix("List[").or_else(|| t.strip_prefix("list["))?.strip_suffix(']')?;
            Type::List(Box::new(parse_type(inner)?))
        }
    })
}

/// `camelCase` → `snake_case` (Ruby's names, as LeetCode's Ruby skeletons write them).
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Words a parameter cannot be named in a language: such a name gets a trailing `_`.
fn reserved(language: Language, name: &str) -> bool {
    const CPP: &[&str] = &[
        "auto",
        "bool",
        "break",
        "case",
        "char",
        "class",
        "const",
        "continue",
        "default",
        "delete",
        "do",
        "double",
        "else",
        "enum",
        "explicit",
        "extern",
        "float",
        "for",
        "friend",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "namespace",
        "new",
        "operator",
        "private",
        "protected",
        "public",
        "register",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "template",
        "this",
        "throw",
        "try",
        "typedef",
        "union",
        "unsigned",
        "using",
        "virtual",
        "void",
        "volatile",
        "while",
        "and",
        "or",
        "not",
        "xor",
    ];
    const JAVA: &[&str] = &[
        "abstract",
        "boolean",
        "break",
        "byte",
        "case",
        "catch",
        "char",
        "class",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extends",
        "final",
        "finally",
        "float",
        "for",
        "goto",
        "if",
        "implements",
        "import",
        "instanceof",
        "int",
        "interface",
        "long",
        "native",
        "new",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "short",
        "static",
        "super",
        "switch",
        "synchronized",
        "this",
        "throw",
        "throws",
        "transient",
        "try",
        "void",
        "volatile",
        "while",
        "var",
        "record",
    ];
    const GO: &[&str] = &[
        "break",
        "case",
        "chan",
        "const",
        "continue",
        "default",
        "defer",
        "else",
        "fallthrough",
        "for",
        "func",
        "go",
        "goto",
        "if",
        "import",
        "interface",
        "map",
        "package",
        "range",
        "return",
        "select",
        "struct",
        "switch",
        "type",
        "var",
    ];
    const RUBY: &[&str] = &[
        "alias", "and", "begin", "break", "case", "class", "def", "defined?", "do", "else",
        "elsif", "end", "ensure", "false", "for", "if", "in", "module", "next", "nil", "not", "or",
        "redo", "rescue", "retry", "return", "self", "super", "then", "true", "undef", "unless",
        "until", "when", "while", "yield",
    ];
    match language {
        Language::Python => false,
        Language::Cpp => CPP.contains(&name),
        Language::Java => JAVA.contains(&name),
        Language::Go => GO.contains(&name),
        Language::Ruby => RUBY.contains(&name),
    }
}

impl Type {
    /// The type in `language` (64-bit integers, see the module's note).
    pub fn in_language(&self, language: Language) -> String {
        match (language, self) {
            (Language::Cpp, Type::Int) => "long long".into(),
            (Language::Cpp, Type::Float) => "double".into(),
            (Language::Cpp, Type::Bool) => "bool".into(),
            (Language::Cpp, Type::Str) => "string".into(),
            (Language::Cpp, Type::List(t)) => format!("vector<{}>", t.in_language(language)),
            (Language::Java, Type::Int) => "long".into(),
            (Language::Java, Type::Float) => "double".into(),
            (Language::Java, Type::Bool) => "boolean".into(),
            (Language::Java, Type::Str) => "String".into(),
            (Language::Java, Type::List(t)) => format!("{}[]", t.in_language(language)),
            (Language::Go, Type::Int) => "int".into(),
            (Language::Go, Type::Float) => "float64".into(),
            (Language::Go, Type::Bool) => "bool".into(),
            (Language::Go, Type::Str) => "string".into(),
            (Language::Go, Type::List(t)) => format!("[]{}", t.in_language(language)),
            (Language::Ruby, Type::Int) => "Integer".into(),
            (Language::Ruby, Type::Float) => "Float".into(),
            (Language::Ruby, Type::Bool) => "Boolean".into(),
            (Language::Ruby, Type::Str) => "String".into(),
            (Language::Ruby, Type::List(t)) => format!("{}[]", t.in_language(language)),
            (Language::Python, t) => t.to_string(),
        }
    }

    /// The drivers' descriptor of the type: `int`, `float`, `bool`, `str`, `list:<inner>`.
    pub fn descriptor(&self) -> String {
        match self {
            Type::List(t) => format!("list:{}", t.descriptor()),
            t => t.to_string(),
        }
    }
}

impl Signature {
    /// The name of the method (or function) in `language`: Ruby's is snake_case.
    pub fn callable(&self, language: Language) -> String {
        if language == Language::Ruby { snake_case(&self.method) } else { self.method.clone() }
    }

    /// A parameter's name in `language` (snake_case in Ruby; a reserved word gets `_`).
    pub fn param_name(&self, index: usize, language: Language) -> String {
        let name = &self.params[index].name;
        let name = if language == Language::Ruby { snake_case(name) } else { name.clone() };
        if reserved(language, &name) { format!("{name}_") } else { name }
    }

    /// The skeleton a solution in `language` implements (the driver calls exactly this).
    /// Python's is the starter itself, which the caller keeps.
    pub fn skeleton(&self, language: Language) -> String {
        let names: Vec<String> =
            (0..self.params.len()).map(|i| self.param_name(i, language)).collect();
        let typed = |sep: &str, by_ref: bool| -> String {
            self.params
                .iter()
                .zip(&names)
                .map(|(p, n)| {
                    let t = p.ty.in_language(language);
                    let amp = if by_ref && matches!(p.ty, Type::List(_)) { "&" } else { "" };
                    if sep.is_empty() { format!("{t}{amp} {n}") } else { format!("{n}{sep}{t}") }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let ret = self.returns.in_language(language);
        let m = self.callable(language);
        match language {
            Language::Python => {
                let params: Vec<String> =
                    self.params.iter().map(|p| format!(", {}: {}", p.name, p.ty)).collect();
                format!(
                    "class Solution:\n    def {m}(self{}) -> {}:\n        ",
                    params.concat(),
                    self.returns
                )
            }
            Language::Cpp => format!(
                "class Solution {{\npublic:\n    {ret} {m}({}) {{\n        \n    }}\n}};\n",
                typed("", true)
            ),
            Language::Java => format!(
                "class Solution {{\n    public {ret} {m}({}) {{\n        \n    }}\n}}\n",
                typed("", false)
            ),
            Language::Go => {
                format!("package main\n\nfunc {m}({}) {ret} {{\n\t\n}}\n", typed(" ", false))
            }
            Language::Ruby => {
                let mut doc = String::new();
                for (p, n) in self.params.iter().zip(&names) {
                    doc.push_str(&format!("# @param {{{}}} {n}\n", p.ty.in_language(language)));
                }
                doc.push_str(&format!("# @return {{{ret}}}\n"));
                format!("{doc}def {m}({})\n  \nend\n", names.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }

    #[test]
    fn parses_leetcode_starters() {
        let s = parse("class Solution:\n    def maxHaul(self, shelves: List[List[int]], caps: List[int], k: int) -> int:\n        ").unwrap();
        assert_eq!(s.method, "maxHaul");
        assert_eq!(
            s.params.iter().map(|p| (p.name.as_str(), p.ty.clone())).collect::<Vec<_>>(),
            vec![("shelves", list(list(Type::Int))), ("caps", list(Type::Int)), ("k", Type::Int)]
        );
        assert_eq!(s.returns, Type::Int);
        // Spread over lines, lower-case `list`, every scalar type.
        let s = parse("class Solution:\n    def f(\n        self,\n        a: list[str],\n        b: float,\n        c: bool,\n    ) -> List[List[float]]:\n").unwrap();
        assert_eq!(s.params.len(), 3);
        assert_eq!(s.params[0].ty, list(Type::Str));
        assert_eq!(s.returns, list(list(Type::Float)));
        assert_eq!(s.returns.descriptor(), "list:list:float");
        // A bare function, no parameters.
        assert_eq!(parse("def g() -> bool:\n    pass").unwrap().params, vec![]);
    }

    #[test]
    fn errors_name_the_type_and_the_place() {
        let e = parse("class Solution:\n    def invertTree(self, root: Optional[TreeNode]) -> Optional[TreeNode]:\n").unwrap_err();
        assert_eq!(
            e,
            SignatureError::Unsupported {
                method: "invertTree".into(),
                place: "parameter `root`".into(),
                ty: "Optional[TreeNode]".into()
            }
        );
        assert!(e.to_string().contains("`Optional[TreeNode]`"), "{e}");
        let e = parse("class Solution:\n    def f(self, head: ListNode) -> int:\n").unwrap_err();
        assert!(
            e.to_string().contains("unsupported type `ListNode` (parameter `head` of `f`)"),
            "{e}"
        );
        let e = parse("class Solution:\n    def f(self, a: List[int]) -> Dict[int, int]:\n")
            .unwrap_err();
        assert_eq!(
            e,
            SignatureError::Unsupported {
                method: "f".into(),
                place: "return type".into(),
                ty: "Dict[int, int]".into()
            }
        );
        assert_eq!(
            parse("class Solution:\n    def f(self, a: List[int]) -> None:\n").unwrap_err(),
            SignatureError::NoReturn { method: "f".into() }
        );
        assert_eq!(
            parse("class Solution:\n    def f(self, a: List[int]):\n").unwrap_err(),
            SignatureError::NoReturn { method: "f".into() }
        );
        assert_eq!(
            parse("class Solution:\n    def f(self, a, b: int) -> int:\n").unwrap_err(),
            SignatureError::Unannotated { method: "f".into(), param: "a".into() }
        );
        assert_eq!(parse("").unwrap_err(), SignatureError::NoMethod);
        assert_eq!(parse("class Solution:\n    pass\n").unwrap_err(), SignatureError::NoMethod);
        // `undef ` is not `def `.
        assert_eq!(parse("undef x(").unwrap_err(), SignatureError::NoMethod);
        assert!(matches!(
            parse("class Solution:\n    def f(self, a: List[int) -> int:\n").unwrap_err(),
            SignatureError::Unsupported { .. }
        ));
    }

    #[test]
    fn skeletons_use_64_bit_integers() {
        let s = parse("class Solution:\n    def maxHaul(self, shelves: List[List[int]], new: List[str], k: int) -> List[bool]:\n").unwrap();
        assert_eq!(
            s.skeleton(Language::Cpp),
            "class Solution {\npublic:\n    vector<bool> maxHaul(vector<vector<long long>>& shelves, vector<string>& new_, long long k) {\n        \n    }\n};\n"
        );
        assert_eq!(
            s.skeleton(Language::Java),
            "class Solution {\n    public boolean[] maxHaul(long[][] shelves, String[] new_, long k) {\n        \n    }\n}\n"
        );
        assert_eq!(
            s.skeleton(Language::Go),
            "package main\n\nfunc maxHaul(shelves [][]int, new []string, k int) []bool {\n\t\n}\n"
        );
        assert_eq!(
            s.skeleton(Language::Ruby),
            "# @param {Integer[][]} shelves\n# @param {String[]} new\n# @param {Integer} k\n# @return {Boolean[]}\ndef max_haul(shelves, new, k)\n  \nend\n"
        );
        assert!(s.skeleton(Language::Python).contains(
            "def maxHaul(self, shelves: List[List[int]], new: List[str], k: int) -> List[bool]:"
        ));
        assert_eq!(snake_case("nearestTwinStops"), "nearest_twin_stops");
        assert_eq!(snake_case("already_snake"), "already_snake");
    }
}
