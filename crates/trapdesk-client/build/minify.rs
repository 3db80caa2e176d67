//! The Lua client's minifier, run by `build.rs` on every file under `lua/`.
//!
//! It parses a file with full_moon (Lua 5.2, the dialect CC: Tweaked's Cobalt runs), renames
//! every local variable to a short name, drops comments and indentation, and writes the tokens
//! back with only the spaces Lua needs between them. It keeps a line break wherever the source
//! had one between two tokens, so that each output line holds the code of exactly one source
//! line (a long string that spans lines continues its own lines): the position map is then
//! one source line per output line, which the host reads back to translate a client error
//! position (`src/lua_map.rs`).
//!
//! Renaming is by scope depth: a local gets the name of its slot, the number of locals visible
//! where it is declared. Two locals visible at the same point therefore never share a name, a
//! local never captures a reference meant for an outer one, and no generated name is one of the
//! file's globals (every name the file uses without declaring it), a keyword, `self` or `_ENV`.
//! A local named `_ENV` (which changes what globals mean) keeps its name.

use std::collections::{HashMap, HashSet};

use full_moon::LuaVersion;
use full_moon::ast::{
    self, Block, Call, Expression, Field, FunctionArgs, FunctionBody, Index, LastStmt, Parameter,
    Prefix, Stmt, Suffix, Var,
};
use full_moon::tokenizer::{Lexer, LexerResult, Token, TokenReference, TokenType};

/// One minified file: its text and, for each of its lines (the first at index 0), the source
/// line (1-based) it came from.
pub struct Minified {
    pub text: String,
    pub lines: Vec<u32>,
    /// How many of the first lines are the kept header's comments.
    pub header_lines: usize,
}

const KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
    "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

/// Minifies `src`. `keep_header` leading comment paragraphs (each ended by a bare `--` line)
/// are kept as they are: the startup wrapper's first lines are read by players and matched by
/// the installer.
pub fn minify(src: &str, keep_header: usize) -> Result<Minified, String> {
    let ast = full_moon::parse_fallible(src, LuaVersion::lua52())
        .into_result()
        .map_err(|errs| {
            errs.iter()
                .map(|e| {
                    let (start, _) = e.range();
                    format!(
                        "{}:{}: {}",
                        start.line(),
                        start.character(),
                        e.error_message()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        })?;
    let mut scopes = Scopes::default();
    scopes.block(ast.nodes());
    scopes.close_all();
    let renames = scopes.assign_names()?;
    let tokens = match Lexer::new(src, LuaVersion::lua52()).collect() {
        LexerResult::Ok(tokens) => tokens,
        other => return Err(format!("{other:?}")),
    };
    Ok(emit(src, &tokens, &renames, keep_header))
}

/// A local's declaration: its slot (the number of locals visible where it was declared) and
/// every token (by byte offset) that names it.
struct Local {
    name: String,
    slot: usize,
    uses: Vec<usize>,
}

#[derive(Default)]
struct Scopes {
    locals: Vec<Local>,
    /// The visible locals, innermost last, as indexes into `locals`.
    visible: Vec<usize>,
    /// Where each open block's locals start in `visible`.
    blocks: Vec<usize>,
    /// Names used without a visible declaration: no generated name may be one, so names are
    /// chosen after the walk, once every global is known.
    globals: HashSet<String>,
}

fn ident(token: &TokenReference) -> Option<(&str, usize)> {
    match token.token().token_type() {
        TokenType::Identifier { identifier } => {
            Some((identifier.as_str(), token.token().start_position().bytes()))
        }
        _ => None,
    }
}

impl Scopes {
    fn open(&mut self) {
        self.blocks.push(self.visible.len());
    }

    fn close(&mut self) {
        if let Some(at) = self.blocks.pop() {
            self.visible.truncate(at);
        }
    }

    fn close_all(&mut self) {
        while !self.blocks.is_empty() {
            self.close();
        }
    }

    /// Declares a local named by `token`; it is visible from the next `activate` on.
    fn declare(&mut self, token: &TokenReference) -> usize {
        // A declaration is always a name; anything else would have no token to rename.
        let (name, uses) = ident(token).map_or((String::new(), Vec::new()), |(n, at)| {
            (n.to_owned(), vec![at])
        });
        self.locals.push(Local {
            name,
            slot: 0,
            uses,
        });
        self.locals.len() - 1
    }

    /// Makes declared locals visible (after a `local` statement's expressions).
    fn activate(&mut self, ids: &[usize]) {
        for &id in ids {
            self.locals[id].slot = self.visible.len();
            self.visible.push(id);
        }
    }

    fn declare_now(&mut self, token: &TokenReference) {
        let id = self.declare(token);
        self.activate(&[id]);
    }

    /// A name used as a variable: the innermost visible local of that name, else a global.
    fn reference(&mut self, token: &TokenReference) {
        let Some((name, at)) = ident(token) else {
            return;
        };
        match self
            .visible
            .iter()
            .rev()
            .find(|&&id| self.locals[id].name == name)
        {
            Some(&id) => self.locals[id].uses.push(at),
            None => {
                self.globals.insert(name.to_owned());
            }
        }
    }

    /// Chooses every local's new name: slot `n` is the `n`th short name that is no keyword,
    /// no global of this file, not `self` and not `_ENV`.
    fn assign_names(&self) -> Result<HashMap<usize, String>, String> {
        let mut names: Vec<String> = Vec::new();
        let mut candidates = (0usize..).map(short_name);
        let mut out = HashMap::new();
        for local in &self.locals {
            // `_ENV` and an implicit `self` keep their names (see the module notes).
            if local.name == "_ENV" || local.name == "self" {
                continue;
            }
            while names.len() <= local.slot {
                let next = candidates
                    .by_ref()
                    .find(|n| {
                        !KEYWORDS.contains(&n.as_str())
                            && !self.globals.contains(n)
                            && n != "self"
                            && n != "_ENV"
                    })
                    .ok_or("ran out of names")?;
                names.push(next);
            }
            for &at in &local.uses {
                out.insert(at, names[local.slot].clone());
            }
        }
        Ok(out)
    }

    fn block(&mut self, block: &Block) {
        self.open();
        self.block_body(block);
        self.close();
    }

    /// A block's statements in the current scope (a `repeat` body shares its scope with the
    /// `until` condition, so the caller opens and closes it).
    fn block_body(&mut self, block: &Block) {
        for stmt in block.stmts() {
            self.stmt(stmt);
        }
        // `break` names no variable; `return` may.
        if let Some(LastStmt::Return(r)) = block.last_stmt() {
            for e in r.returns().iter() {
                self.expr(e);
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Assignment(a) => {
                for v in a.variables().iter() {
                    self.var(v);
                }
                for e in a.expressions().iter() {
                    self.expr(e);
                }
            }
            Stmt::Do(d) => self.block(d.block()),
            Stmt::FunctionCall(c) => self.prefix_suffixes(c.prefix(), c.suffixes()),
            Stmt::FunctionDeclaration(f) => {
                let name = f.name();
                let mut names = name.names().iter();
                if let Some(first) = names.next() {
                    self.reference(first);
                }
                self.function(f.body(), name.method_name().is_some());
            }
            Stmt::GenericFor(f) => {
                for e in f.expressions().iter() {
                    self.expr(e);
                }
                self.open();
                for n in f.names().iter() {
                    self.declare_now(n);
                }
                self.block(f.block());
                self.close();
            }
            Stmt::If(i) => {
                self.expr(i.condition());
                self.block(i.block());
                for elif in i.else_if().into_iter().flatten() {
                    self.expr(elif.condition());
                    self.block(elif.block());
                }
                if let Some(b) = i.else_block() {
                    self.block(b);
                }
            }
            Stmt::LocalAssignment(l) => {
                for e in l.expressions().iter() {
                    self.expr(e);
                }
                let ids: Vec<usize> = l.names().iter().map(|n| self.declare(n)).collect();
                self.activate(&ids);
            }
            Stmt::LocalFunction(f) => {
                // Visible inside its own body (recursion).
                self.declare_now(f.name());
                self.function(f.body(), false);
            }
            Stmt::NumericFor(f) => {
                self.expr(f.start());
                self.expr(f.end());
                if let Some(step) = f.step() {
                    self.expr(step);
                }
                self.open();
                self.declare_now(f.index_variable());
                self.block(f.block());
                self.close();
            }
            Stmt::Repeat(r) => {
                self.open();
                self.block_body(r.block());
                self.expr(r.until());
                self.close();
            }
            Stmt::While(w) => {
                self.expr(w.condition());
                self.block(w.block());
            }
            // Labels and gotos name no variable.
            _ => {}
        }
    }

    fn function(&mut self, body: &FunctionBody, method: bool) {
        self.open();
        if method {
            // The implicit `self`: visible, never renamed.
            self.locals.push(Local {
                name: "self".to_owned(),
                slot: 0,
                uses: Vec::new(),
            });
            let id = self.locals.len() - 1;
            self.activate(&[id]);
        }
        for p in body.parameters().iter() {
            if let Parameter::Name(n) = p {
                self.declare_now(n);
            }
        }
        self.block(body.block());
        self.close();
    }

    fn var(&mut self, var: &Var) {
        match var {
            Var::Name(n) => self.reference(n),
            Var::Expression(e) => self.prefix_suffixes(e.prefix(), e.suffixes()),
            _ => {}
        }
    }

    fn prefix_suffixes<'a>(&mut self, prefix: &Prefix, suffixes: impl Iterator<Item = &'a Suffix>) {
        match prefix {
            Prefix::Name(n) => self.reference(n),
            Prefix::Expression(e) => self.expr(e),
            _ => {}
        }
        for s in suffixes {
            match s {
                Suffix::Call(Call::AnonymousCall(args)) => self.args(args),
                Suffix::Call(Call::MethodCall(m)) => self.args(m.args()),
                Suffix::Index(Index::Brackets { expression, .. }) => self.expr(expression),
                _ => {}
            }
        }
    }

    fn args(&mut self, args: &FunctionArgs) {
        match args {
            FunctionArgs::Parentheses { arguments, .. } => {
                for e in arguments.iter() {
                    self.expr(e);
                }
            }
            FunctionArgs::TableConstructor(t) => self.table(t),
            _ => {}
        }
    }

    fn table(&mut self, t: &ast::TableConstructor) {
        for f in t.fields().iter() {
            match f {
                Field::ExpressionKey { key, value, .. } => {
                    self.expr(key);
                    self.expr(value);
                }
                Field::NameKey { value, .. } => self.expr(value),
                Field::NoKey(e) => self.expr(e),
                _ => {}
            }
        }
    }

    fn expr(&mut self, e: &Expression) {
        match e {
            Expression::BinaryOperator { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            Expression::Parentheses { expression, .. } => self.expr(expression),
            Expression::UnaryOperator { expression, .. } => self.expr(expression),
            Expression::Function(f) => self.function(f.body(), false),
            Expression::FunctionCall(c) => self.prefix_suffixes(c.prefix(), c.suffixes()),
            Expression::TableConstructor(t) => self.table(t),
            Expression::Var(v) => self.var(v),
            _ => {}
        }
    }
}

/// The `n`th short name: `a`..`z`, `A`..`Z`, then two characters and so on.
fn short_name(mut n: usize) -> String {
    const FIRST: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const REST: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
    let mut s = vec![FIRST[n % FIRST.len()]];
    n /= FIRST.len();
    while n > 0 {
        n -= 1;
        s.push(REST[n % REST.len()]);
        n /= REST.len();
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// Whether two tokens written side by side would read as something else without a space.
fn needs_space(prev: &str, next: &str) -> bool {
    let (Some(a), Some(b)) = (prev.chars().last(), next.chars().next()) else {
        return false;
    };
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let prev_number = prev.chars().next().is_some_and(|c| c.is_ascii_digit())
        || (prev.starts_with('.')
            && prev.len() > 1
            && prev[1..].starts_with(|c: char| c.is_ascii_digit()));
    (word(a) && word(b))
        // `1 ..x`, `1 .5`: a number swallows a following dot or digit.
        || (prev_number && (b == '.' || word(b) || b == '-' || b == '+'))
        // `a - -b` would start a comment.
        || (a == '-' && b == '-')
        // `t[ [[s]] ]` would start a long string, `.. ...` another operator.
        || (a == '[' && (b == '[' || b == '='))
        || (a == '.' && (b == '.' || b.is_ascii_digit()))
        || (matches!(a, '<' | '>' | '=' | '~') && b == '=')
        || (a == ':' && b == ':')
        || (a == '/' && b == '/')
}

fn emit(
    src: &str,
    tokens: &[Token],
    renames: &HashMap<usize, String>,
    keep_header: usize,
) -> Minified {
    let mut text = String::new();
    let mut lines: Vec<u32> = Vec::new();
    // The source line the output's current line came from, and the last token written on it.
    let mut line: Option<usize> = None;
    let mut prev = String::new();
    let mut header_left = keep_header;
    let mut header_lines = 0;
    let mut in_header = keep_header > 0;
    for token in tokens {
        let start = token.start_position();
        let end = token.end_position();
        let raw = src.get(start.bytes()..end.bytes()).unwrap_or("");
        let piece: &str = match token.token_type() {
            TokenType::Eof => break,
            TokenType::Whitespace { .. } => continue,
            TokenType::SingleLineComment { comment } if in_header && header_left > 0 => {
                if comment.trim().is_empty() {
                    header_left -= 1;
                    if header_left == 0 {
                        in_header = false;
                        continue;
                    }
                }
                header_lines += 1;
                raw
            }
            TokenType::SingleLineComment { .. } | TokenType::MultiLineComment { .. } => {
                in_header = false;
                continue;
            }
            TokenType::Shebang { .. } => raw,
            TokenType::Identifier { .. } => {
                in_header = false;
                renames.get(&start.bytes()).map_or(raw, String::as_str)
            }
            _ => {
                in_header = false;
                raw
            }
        };
        let src_line = start.line();
        match line {
            Some(l) if l == src_line => {
                if needs_space(&prev, piece) || prev.starts_with("--") {
                    text.push(' ');
                }
            }
            Some(_) => {
                text.push('\n');
                lines.push(src_line as u32);
            }
            None => lines.push(src_line as u32),
        }
        text.push_str(piece);
        // A token spanning lines (a long string) continues on the source's next lines.
        let extra = piece.matches('\n').count();
        for k in 1..=extra {
            lines.push((src_line + k) as u32);
        }
        line = Some(end.line());
        prev = piece.to_owned();
    }
    if !text.is_empty() {
        text.push('\n');
    }
    Minified {
        text,
        lines,
        header_lines,
    }
}
