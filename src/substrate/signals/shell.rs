//! Reading shell command lines: one reader for every finding that asks what a shell call did
//! (docs/METHODS.md, "Coding-agent sessions", "Shell commands").
//!
//! - [`shell_command`] reads the command line out of a shell tool's call;
//! - [`commands`] splits a command line into its simple commands, as the shell would: quotes
//!   (`'…'`, `"…"`, `$'…'`, a backslash) keep operators and spaces inside a word, and the line is
//!   cut at `&&`, `||`, `;`, `&`, `|`, newlines and the parentheses of a subshell; redirections
//!   (`> f`, `2>&1`, `<<EOF`) are set apart from the words, a here-document's body is no command,
//!   a comment is dropped, and a nested `bash -c '…'` is read as the commands of its script;
//! - [`Command::invocation`] finds the program a simple command runs and its arguments, past
//!   assignments (`VAR=x`), `sudo`, `env`, `time`, `nice`, `nohup`, `timeout 30`, `xargs`, the
//!   shell's reserved words (`do`, `then`, `!`…), a runner (`npx`, `uv run`, `poetry run`,
//!   `pnpm exec`…) and `python -m MODULE`;
//! - the readings on top: whether a command only reads or checks ([`reads_or_checks`]), runs
//!   tests ([`runs_tests`]), edits files ([`edits_files`], [`written_paths`]) or changes state
//!   ([`changes_state`]).
//!
//! Pure functions over text: no IO. Words are read without their quotes; a variable or a command
//! substitution (`$X`, `$(…)`, `` `…` ``) is kept as written, not expanded.
//!
//! The maintained tokenizers (`shlex`, `shell-words`) split words POSIX-style but know no
//! operator (`a&&b`, `x|y` stay one word) and give up on an unbalanced quote, which clipped
//! commands in traces have; this reader knows both and never gives up.

use std::sync::LazyLock;

use regex::Regex;

/// One word of a simple command, its quotes taken off (`'a b'` is `a b`, `\;` is `;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word's text without its quotes.
    pub text: String,
    /// Whether some of it was quoted or escaped (a quoted `;` or `>` is no operator).
    pub quoted: bool,
}

/// A redirection of a simple command: its operator (`>`, `>>`, `>|`, `&>`, `&>>`, `>&`, `<`,
/// `<<`, `<<-`, `<<<`, `<&`, `<>`; a file descriptor before it is not kept) and its target word
/// (a file, a descriptor `1`, a here-document's delimiter, a here-string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator, as written without the descriptor.
    pub op: String,
    /// The target, unquoted.
    pub target: String,
}

impl Redirect {
    /// Whether the redirection writes into a file: an output operator onto a target that is
    /// neither a descriptor (`2>&1`, `>&2`, `>&-`) nor `/dev/null`, `/dev/stdout`, `/dev/stderr`,
    /// `/dev/tty` or `/dev/fd/N`.
    pub fn writes_file(&self) -> bool {
        let output = matches!(self.op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | ">&" | "<>");
        let descriptor =
            self.target == "-" || !self.target.is_empty() && self.target.bytes().all(|b| b.is_ascii_digit());
        let device = matches!(self.target.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
            || self.target.starts_with("/dev/fd/");
        output && !descriptor && !device && !self.target.is_empty()
    }
}

/// A simple command: its words (assignments and wrappers included) and redirections, and its
/// text as written in the command line (trimmed; a here-document's body not included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// The words, unquoted, in order.
    pub words: Vec<Word>,
    /// The redirections, in order.
    pub redirects: Vec<Redirect>,
    /// The command's text as written.
    pub text: String,
}

/// What a simple command runs ([`Command::invocation`]): the program's name (its last path
/// component: `/usr/bin/grep` is `grep`) and the words after it.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    /// The program's name.
    pub program: &'a str,
    /// The words after the program, unquoted.
    pub args: &'a [Word],
}

impl Invocation<'_> {
    /// The arguments' texts.
    fn arg(&self, k: usize) -> Option<&str> {
        self.args.get(k).map(|w| w.text.as_str())
    }

    /// The first argument that is not an option (does not start with `-`), skipping the value of
    /// each option in `takes_value` (`-C dir`), with the arguments after it. A `+toolchain`
    /// (`cargo +nightly test`) is skipped too.
    fn subcommand(&self, takes_value: &[&str]) -> (&str, &[Word]) {
        let mut k = 0;
        while let Some(w) = self.args.get(k) {
            let t = w.text.as_str();
            if takes_value.contains(&t) {
                k += 2;
            } else if t.starts_with('-') || t.starts_with('+') {
                k += 1;
            } else {
                return (t, &self.args[k + 1..]);
            }
        }
        ("", &[])
    }
}

impl Command {
    /// The program this command runs and its arguments, past the words that only set up how it
    /// runs: assignments (`RUST_BACKTRACE=1`), `sudo` and `env` with their options, `time`,
    /// `nice`, `nohup`, `command`, `exec`, `builtin`, `stdbuf`, `timeout` with its duration,
    /// `xargs` with its options, the reserved words that open a command (`!`, `{`, `do`, `then`,
    /// `else`, `if`, `elif`, `while`, `until`); then through a runner to what it runs (`npx`,
    /// `bunx`, `pnpx`; `uv`, `poetry`, `pipenv`, `pdm`, `hatch`, `rye` `run`; `pnpm`/`yarn`
    /// `exec`/`dlx`) and through `python -m MODULE` to the module. `None` for a command that runs
    /// nothing: assignments alone, or the shell's own structure (`for x in …`, `done`, `fi`,
    /// `}`, `case …`, `esac`, `function f`).
    pub fn invocation(&self) -> Option<Invocation<'_>> {
        resolve(&self.words)
    }

    /// Whether the command redirects output into a file ([`Redirect::writes_file`]).
    pub fn writes_file(&self) -> bool {
        self.redirects.iter().any(Redirect::writes_file)
    }
}

/// Whether a word assigns a variable (`NAME=value`, the name unquoted).
fn is_assignment(w: &Word) -> bool {
    let Some((name, _)) = w.text.split_once('=') else { return false };
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// Skips a wrapper's options from `k`: options in `takes_value` take the next word; `--` ends
/// them. Returns the index of the first word after them.
fn skip_options(words: &[Word], mut k: usize, takes_value: &[&str]) -> usize {
    while let Some(w) = words.get(k) {
        let t = w.text.as_str();
        if t == "--" {
            return k + 1;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        k += if takes_value.contains(&t) { 2 } else { 1 };
    }
    k
}

/// [`Command::invocation`] over a list of words.
fn resolve(words: &[Word]) -> Option<Invocation<'_>> {
    let mut k = 0;
    loop {
        let w = words.get(k)?;
        let t = w.text.as_str();
        if is_assignment(w) {
            k += 1;
            continue;
        }
        if !w.quoted {
            match t {
                "for" | "done" | "fi" | "}" | "esac" | "case" | "select" | "function" | "in" | ";;" => return None,
                "!" | "{" | "do" | "then" | "else" | "if" | "elif" | "while" | "until" => {
                    k += 1;
                    continue;
                }
                _ => {}
            }
        }
        let program = t.rsplit('/').next().unwrap_or(t);
        k = match program {
            "sudo" | "doas" => skip_options(words, k + 1, &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"]),
            "env" => {
                let mut j = skip_options(words, k + 1, &["-u", "--unset", "-C", "--chdir", "-S"]);
                while words.get(j).is_some_and(is_assignment) {
                    j += 1;
                }
                j
            }
            "time" => skip_options(words, k + 1, &[]),
            "nice" => skip_options(words, k + 1, &["-n", "--adjustment"]),
            "ionice" => skip_options(words, k + 1, &["-c", "-n", "-p"]),
            "nohup" | "command" | "exec" | "builtin" | "stdbuf" => skip_options(words, k + 1, &[]),
            "timeout" => {
                // Its options, then the duration.
                skip_options(words, k + 1, &["-s", "--signal", "-k", "--kill-after"]) + 1
            }
            "xargs" => skip_options(
                words,
                k + 1,
                &["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args", "--max-procs", "--delimiter"],
            ),
            "npx" | "bunx" | "pnpx" => skip_options(words, k + 1, &["-p", "--package", "-c", "--call"]),
            "uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye"
                if words.get(k + 1).is_some_and(|w| w.text == "run") =>
            {
                skip_options(words, k + 2, &["--with", "--python", "-p", "--env", "-e", "--directory", "--project"])
            }
            "pnpm" | "yarn" if words.get(k + 1).is_some_and(|w| matches!(w.text.as_str(), "exec" | "dlx")) => {
                skip_options(words, k + 2, &[])
            }
            p if is_python(p) => match python_module(words, k + 1) {
                Some(m) => m,
                None => return Some(Invocation { program, args: &words[k + 1..] }),
            },
            _ => return Some(Invocation { program, args: &words[k + 1..] }),
        };
    }
}

/// Whether a program name is a Python interpreter (`python`, `python3`, `python3.11`, `py`).
fn is_python(p: &str) -> bool {
    p == "py" || p.strip_prefix("python").is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// For `python [options] -m MODULE args…`, the index of `MODULE` (read as the program); `None`
/// when the interpreter runs a script, a `-c` probe or nothing.
fn python_module(words: &[Word], mut k: usize) -> Option<usize> {
    while let Some(w) = words.get(k) {
        match w.text.as_str() {
            "-m" => return words.get(k + 1).map(|_| k + 1),
            "-X" | "-W" => k += 2,
            t if t.starts_with('-') && t != "-" && t != "-c" => k += 1,
            _ => return None,
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Splitting a command line
// ---------------------------------------------------------------------------------------------

/// How deep a `bash -c '…'` inside a command is read (a script in a script…).
const MAX_NESTING: usize = 4;

/// The simple commands of a command line, in order ([`Command`]). A nested `bash -c SCRIPT`
/// (`sh`, `zsh`, `dash`; `-lc`, `-ec`…) stands for the commands of its script. An empty or
/// blank line has none.
pub fn commands(line: &str) -> Vec<Command> {
    commands_at(line, 0)
}

fn commands_at(line: &str, depth: usize) -> Vec<Command> {
    let mut out = Vec::new();
    for c in Lexer::new(line).run() {
        if depth < MAX_NESTING
            && let Some(script) = nested_script(&c)
        {
            out.extend(commands_at(&script, depth + 1));
            continue;
        }
        out.push(c);
    }
    out
}

/// The script of a `bash -c SCRIPT` command (`sh`, `zsh`, `dash`, `ksh`; the `c` may stand in a
/// cluster: `-lc`, `-ec`).
fn nested_script(c: &Command) -> Option<String> {
    let inv = c.invocation()?;
    if !matches!(inv.program, "bash" | "sh" | "zsh" | "dash" | "ksh") {
        return None;
    }
    let flag = inv.args.iter().position(|w| {
        let t = w.text.as_str();
        t.starts_with('-') && !t.starts_with("--") && t[1..].contains('c')
    })?;
    inv.args.get(flag + 1).map(|w| w.text.clone())
}

/// A one-pass reader of a command line into simple commands.
struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    out: Vec<Command>,
    /// The command being read.
    words: Vec<Word>,
    redirects: Vec<Redirect>,
    /// Where the command being read starts in `src`.
    start: usize,
    /// The word being read, whether part of it was quoted, and whether one was started.
    word: String,
    quoted: bool,
    in_word: bool,
    /// A redirection operator waiting for its target word.
    pending: Option<String>,
    /// The delimiters of the here-documents opened on this line.
    heredocs: Vec<String>,
    /// Where a comment on the command's line starts (not part of its text).
    comment: Option<usize>,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Lexer {
            src,
            pos: 0,
            out: Vec::new(),
            words: Vec::new(),
            redirects: Vec::new(),
            start: 0,
            word: String::new(),
            quoted: false,
            in_word: false,
            pending: None,
            heredocs: Vec::new(),
            comment: None,
        }
    }

    fn peek(&self, k: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(k)
    }

    fn starts(&self, s: &str) -> bool {
        self.src[self.pos..].starts_with(s)
    }

    /// Ends the word being read: a redirection's target, or the command's next word.
    fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        let text = std::mem::take(&mut self.word);
        let quoted = std::mem::take(&mut self.quoted);
        self.in_word = false;
        match self.pending.take() {
            Some(op) => {
                if op == "<<" || op == "<<-" {
                    self.heredocs.push(text.clone());
                }
                self.redirects.push(Redirect { op, target: text });
            }
            None => self.words.push(Word { text, quoted }),
        }
    }

    /// Ends the command being read at byte `end`; the next one starts at `next`.
    fn end_command(&mut self, end: usize, next: usize) {
        self.end_word();
        if let Some(op) = self.pending.take() {
            self.redirects.push(Redirect { op, target: String::new() });
        }
        let end = self.comment.take().map_or(end, |c| c.min(end));
        if !self.words.is_empty() || !self.redirects.is_empty() {
            let text = self.src[self.start.min(end)..end].trim().to_string();
            self.out.push(Command {
                words: std::mem::take(&mut self.words),
                redirects: std::mem::take(&mut self.redirects),
                text,
            });
        }
        self.start = next;
    }

    /// Skips the bodies of the here-documents opened on the line just ended (`pos` is after its
    /// newline): each runs to a line that is its delimiter (leading tabs of `<<-` and spaces
    /// around it allowed).
    fn skip_heredocs(&mut self) {
        for delimiter in std::mem::take(&mut self.heredocs) {
            loop {
                if self.pos >= self.src.len() {
                    return;
                }
                let rest = &self.src[self.pos..];
                let (line, next) = match rest.find('\n') {
                    Some(n) => (&rest[..n], self.pos + n + 1),
                    None => (rest, self.src.len()),
                };
                self.pos = next;
                if line.trim() == delimiter {
                    break;
                }
            }
        }
        self.start = self.pos;
    }

    /// Reads up to the closing `close` of a `$(`, `${` or `` ` `` opened before `pos`, appending
    /// the text as written (nested pairs and quotes kept whole).
    fn read_group(&mut self, open: char, close: char) {
        let mut depth = 1usize;
        while let Some(c) = self.peek(0) {
            self.pos += c.len_utf8();
            self.word.push(c);
            match c {
                '\\' => {
                    if let Some(n) = self.peek(0) {
                        self.pos += n.len_utf8();
                        self.word.push(n);
                    }
                }
                '\'' if open != '`' => {
                    while let Some(n) = self.peek(0) {
                        self.pos += n.len_utf8();
                        self.word.push(n);
                        if n == '\'' {
                            break;
                        }
                    }
                }
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                c if c == open && open != '`' => depth += 1,
                _ => {}
            }
        }
    }

    fn run(mut self) -> Vec<Command> {
        while let Some(c) = self.peek(0) {
            let at = self.pos;
            match c {
                ' ' | '\t' | '\r' => {
                    self.end_word();
                    self.pos += 1;
                }
                '\n' => {
                    self.pos += 1;
                    self.end_command(at, self.pos);
                    self.skip_heredocs();
                }
                '#' if !self.in_word => {
                    // A comment runs to the end of the line.
                    self.comment = Some(at);
                    self.pos = self.src[at..].find('\n').map_or(self.src.len(), |n| at + n);
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek(0) {
                        // A line continuation.
                        Some('\n') => self.pos += 1,
                        Some(n) => {
                            self.pos += n.len_utf8();
                            self.word.push(n);
                            self.quoted = true;
                            self.in_word = true;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    self.pos += 1;
                    let rest = &self.src[self.pos..];
                    let end = rest.find('\'').unwrap_or(rest.len());
                    self.word.push_str(&rest[..end]);
                    self.pos += (end + 1).min(rest.len());
                    self.quoted = true;
                    self.in_word = true;
                }
                '$' if self.peek(1) == Some('\'') => {
                    // `$'…'`: backslash escapes kept as written, `\'` does not end it.
                    self.pos += 2;
                    while let Some(n) = self.peek(0) {
                        self.pos += n.len_utf8();
                        match n {
                            '\\' => {
                                if let Some(e) = self.peek(0) {
                                    self.pos += e.len_utf8();
                                    self.word.push(e);
                                }
                            }
                            '\'' => break,
                            n => self.word.push(n),
                        }
                    }
                    self.quoted = true;
                    self.in_word = true;
                }
                '"' => {
                    self.pos += 1;
                    while let Some(n) = self.peek(0) {
                        self.pos += n.len_utf8();
                        match n {
                            '"' => break,
                            '\\' => match self.peek(0) {
                                Some(e @ ('"' | '\\' | '$' | '`')) => {
                                    self.pos += 1;
                                    self.word.push(e);
                                }
                                Some('\n') => self.pos += 1,
                                _ => self.word.push('\\'),
                            },
                            '`' => {
                                self.word.push('`');
                                self.read_group('`', '`');
                            }
                            '$' if self.peek(0) == Some('(') => {
                                self.word.push_str("$(");
                                self.pos += 1;
                                self.read_group('(', ')');
                            }
                            n => self.word.push(n),
                        }
                    }
                    self.quoted = true;
                    self.in_word = true;
                }
                '$' if matches!(self.peek(1), Some('(' | '{')) => {
                    let open = self.peek(1).unwrap_or('(');
                    self.word.push('$');
                    self.word.push(open);
                    self.pos += 2;
                    self.read_group(open, if open == '(' { ')' } else { '}' });
                    self.in_word = true;
                }
                '`' => {
                    self.word.push('`');
                    self.pos += 1;
                    self.read_group('`', '`');
                    self.in_word = true;
                }
                '&' | '|' | ';' | '(' | ')' => {
                    // `&>`, `&>>`: output and errors into a file.
                    if c == '&' && self.peek(1) == Some('>') {
                        self.end_word();
                        let op = if self.starts("&>>") { "&>>" } else { "&>" };
                        self.pos += op.len();
                        self.pending = Some(op.to_string());
                        continue;
                    }
                    let op_len = if self.starts("&&") || self.starts("||") || self.starts(";;") || self.starts("|&") {
                        2
                    } else {
                        1
                    };
                    self.pos += op_len;
                    self.end_command(at, self.pos);
                }
                '>' | '<' => {
                    // A descriptor written right before the operator (`2>`) is not a word.
                    if self.in_word && !self.quoted && self.word.bytes().all(|b| b.is_ascii_digit()) {
                        self.word.clear();
                        self.in_word = false;
                    }
                    self.end_word();
                    let ops = [">>", ">|", ">&", "<<<", "<<-", "<<", "<&", "<>", ">", "<"];
                    let op = ops.iter().find(|o| self.starts(o)).copied().unwrap_or(">");
                    self.pos += op.len();
                    self.pending = Some(op.to_string());
                }
                c => {
                    self.word.push(c);
                    self.in_word = true;
                    self.pos += c.len_utf8();
                }
            }
        }
        let end = self.src.len();
        self.end_command(end, end);
        self.out
    }
}

// ---------------------------------------------------------------------------------------------
// The command of a shell call
// ---------------------------------------------------------------------------------------------

/// The command of a call to a shell tool (lower-case `tool` names a shell: `Bash`, `shell`,
/// `exec_command`, `execute_bash`, `run_shell_command`, `command_execution`, a terminal), read
/// from the call's arguments (`content`): the `command`, `cmd` or `script` member, a string or an
/// argument vector (`["bash", "-lc", "ls"]` gives `ls`), or the whole content when it is not a
/// JSON object (arguments written `name({…})` are read inside the parentheses); a `bash -lc '…'`
/// or `sh -c "…"` wrapper around the whole line is taken off. `None` for other tools.
pub fn shell_command(tool: &str, content: &str) -> Option<String> {
    static WRAPPER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?s)^\s*(?:/bin/|/usr/bin/)?(?:ba|z)?sh\s+-l?c\s+(?:'(.*)'|"(.*)")\s*$"#).unwrap()
    });
    if !is_shell_tool(tool) {
        return None;
    }
    // Some formats write a call as `name(arguments)` (OpenAI chat logs).
    let content = content.trim();
    let content = match (content.find('('), content.strip_suffix(')')) {
        (Some(open), Some(inner)) if content[..open].eq_ignore_ascii_case(tool) => &inner[open + 1..],
        _ => content,
    };
    let cmd = match serde_json::from_str::<serde_json::Value>(content) {
        Ok(serde_json::Value::Object(args)) => {
            let v = ["command", "cmd", "script"].iter().find_map(|k| args.get(*k))?;
            match v {
                serde_json::Value::String(c) => c.clone(),
                serde_json::Value::Array(argv) => {
                    let words: Vec<&str> = argv.iter().filter_map(|x| x.as_str()).collect();
                    match words.as_slice() {
                        [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') => (*script).to_string(),
                        _ => words.join(" "),
                    }
                }
                _ => return None,
            }
        }
        _ => content.to_string(),
    };
    Some(match WRAPPER.captures(&cmd) {
        Some(c) => c.get(1).or_else(|| c.get(2)).map_or(cmd.clone(), |m| m.as_str().to_string()),
        None => cmd,
    })
}

/// Whether a lower-case tool name names a shell ([`shell_command`]): also a remote one, a tool
/// with `ssh` as a word of its name (`ssh_exec`, `run_ssh`) that runs its `command` on a host.
pub fn is_shell_tool(tool: &str) -> bool {
    ["bash", "shell", "exec_command", "command_execution", "terminal", "run_command", "powershell"]
        .iter()
        .any(|w| tool.contains(w))
        || tool == "sh"
        || tool.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w == "ssh")
}

// ---------------------------------------------------------------------------------------------
// What a command does
// ---------------------------------------------------------------------------------------------

/// Programs that read, list, search or print and change nothing.
pub const READ_PROGRAMS: [&str; 36] = [
    "cd", "ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "rg", "ag", "fd", "wc", "echo", "printf",
    "pwd", "which", "whereis", "type", "tree", "file", "stat", "diff", "cmp", "sort", "uniq", "cut", "jq", "du", "df",
    "ps", "true", "base64", "nl", "realpath", "date",
];

/// Test runners and checkers: running them checks the code and changes nothing a user keeps
/// (`unittest`, `pyflakes`, `compileall` and `py_compile` as `python -m` runs them).
pub const CHECK_PROGRAMS: [&str; 18] = [
    "pytest",
    "tox",
    "nox",
    "jest",
    "vitest",
    "mocha",
    "rspec",
    "phpunit",
    "ctest",
    "mypy",
    "ruff",
    "flake8",
    "eslint",
    "tsc",
    "unittest",
    "pyflakes",
    "compileall",
    "py_compile",
];

/// Code in a one-line probe (`python -c`, `node -e`) that writes, moves or deletes files or runs
/// other programs: such a probe changes state.
static WRITING_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\.write(?:_text|_bytes|lines)?\(|\bopen\([^)]*['"][wax]b?\+?['"]|\b(?:remove|unlink|rmtree|rename|replace|makedirs|mkdir|rmdir|system|Popen|check_call|check_output|writeFileSync|writeFile|appendFile|unlinkSync|rmSync)\(|subprocess\.run\("#,
    )
    .unwrap()
});

/// The code of a one-line probe (`python -c CODE`, `node -e CODE`, `ruby -e`, `perl -e`), or
/// `None` when the command is none.
fn probe_code<'a>(inv: &Invocation<'a>) -> Option<&'a str> {
    if !(is_python(inv.program) || matches!(inv.program, "node" | "ruby" | "perl" | "deno" | "bun")) {
        return None;
    }
    let k = inv.args.iter().position(|w| matches!(w.text.as_str(), "-c" | "-e" | "--eval"))?;
    Some(inv.args.get(k + 1).map_or("", |w| w.text.as_str()))
}

/// Whether an option cluster edits in place: `-i`, `-i.bak`, `--in-place`, or a cluster of
/// `flags` then `i` (`sed -ri`, `sed -Ei`, `perl -pi`, `perl -0777 -pi`).
fn in_place(w: &str, flags: &str) -> bool {
    if w.starts_with("--in-place") {
        return true;
    }
    let Some(cluster) = w.strip_prefix('-').filter(|c| !c.starts_with('-')) else { return false };
    cluster.trim_start_matches(|c: char| flags.contains(c)).starts_with('i')
}

/// Whether `sed` or `perl` edits files in place.
fn edits_in_place(inv: &Invocation<'_>) -> bool {
    let flags = if inv.program == "perl" { "pnlaws0123456789" } else { "nErsuz" };
    inv.args.iter().any(|w| in_place(&w.text, flags))
}

/// `pip` subcommands that only read (pip's command list: what is installed, what an index
/// offers, a file's hash, the environment's compatibility): `pip show`, `pip index versions`.
/// `config` and `cache` read with some of their own subcommands only.
const PIP_READS: [&str; 10] =
    ["show", "list", "freeze", "check", "inspect", "index", "search", "hash", "help", "debug"];

/// Options of `pip` before its subcommand that take a value (`pip --python .venv list`).
const PIP_VALUE_OPTIONS: [&str; 7] =
    ["--python", "--log", "--proxy", "--retries", "--timeout", "--cache-dir", "--cert"];

/// `npm` (`yarn`, `pnpm`, `bun`) subcommands that only read: what is installed, what the
/// registry holds, why a package is there, where things are. `config` reads with `get`/`list`.
const NPM_READS: [&str; 17] = [
    "test", "ls", "list", "ll", "la", "view", "info", "show", "v", "outdated", "audit", "search", "explain", "why",
    "doctor", "ping", "help",
];

/// `git` subcommands that only read the repository (or, `ls-remote`, a remote's refs).
/// `config` reads with `--get*` or `--list`.
const GIT_READS: [&str; 17] = [
    "status",
    "diff",
    "log",
    "show",
    "grep",
    "blame",
    "ls-files",
    "rev-parse",
    "branch",
    "remote",
    "describe",
    "shortlog",
    "rev-list",
    "cat-file",
    "ls-remote",
    "show-ref",
    "ls-tree",
];

/// Options of `git` before its subcommand that take a value (`git -C repo status`).
const GIT_VALUE_OPTIONS: [&str; 5] = ["-C", "-c", "--git-dir", "--work-tree", "--namespace"];
/// Options of `make` that take a value (`make -C web test`).
const MAKE_VALUE_OPTIONS: [&str; 8] = ["-C", "-f", "--directory", "--file", "-j", "-l", "-o", "-W"];
/// Options of the JavaScript package managers that take a value (`npm --prefix web test`).
const NPM_VALUE_OPTIONS: [&str; 8] = ["--prefix", "-C", "--dir", "--cwd", "--filter", "-F", "--workspace", "-w"];
/// Options of `cargo` before its subcommand that take a value.
const CARGO_VALUE_OPTIONS: [&str; 4] = ["--config", "-Z", "--color", "-C"];

/// Whether one simple command only reads or checks: it runs nothing (assignments, the shell's
/// structure), a reader ([`READ_PROGRAMS`], `sed` without `-i`, `find` without `-delete`,
/// `-fprint` or an `-exec` of a program that is not a reader), a test runner or checker
/// ([`CHECK_PROGRAMS`]), a read or check subcommand (`git status`, `git diff`, `git log`; `cargo
/// test`, `cargo build`; `go test`; `npm test`; `make test`…), a one-line probe whose code
/// writes nothing (`python -c`, `node -e`), `pip show`/`list`/`freeze`, or sets up the shell
/// (`source .venv/bin/activate`, `export`). Redirections are not read here ([`changes_state`]).
pub fn reads_or_checks(c: &Command) -> bool {
    let Some(inv) = c.invocation() else { return true };
    let p = inv.program;
    if let Some(code) = probe_code(&inv) {
        return !(WRITING_CODE.is_match(code) || p == "perl" && edits_in_place(&inv));
    }
    match p {
        p if READ_PROGRAMS.contains(&p) || CHECK_PROGRAMS.contains(&p) => true,
        "source" | "." | "export" | "set" | "unset" => true,
        "pip" | "pip3" => {
            let (sub, rest) = inv.subcommand(&PIP_VALUE_OPTIONS);
            let first = rest.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-')).unwrap_or("");
            PIP_READS.contains(&sub)
                || sub == "config" && matches!(first, "list" | "get" | "debug")
                || sub == "cache" && matches!(first, "dir" | "info" | "list")
                || sub.is_empty()
                    && inv.args.iter().any(|w| matches!(w.text.as_str(), "--version" | "-V" | "--help" | "-h"))
        }
        "sed" => !edits_in_place(&inv),
        "find" => {
            let mut reads = true;
            for (k, w) in inv.args.iter().enumerate() {
                match w.text.as_str() {
                    "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls" => reads = false,
                    "-exec" | "-execdir" | "-ok" | "-okdir" => {
                        let run = inv.args.get(k + 1).map_or("", |w| w.text.rsplit('/').next().unwrap_or(""));
                        reads &= READ_PROGRAMS.contains(&run) || CHECK_PROGRAMS.contains(&run);
                    }
                    _ => {}
                }
            }
            reads
        }
        "git" => {
            let (sub, rest) = inv.subcommand(&GIT_VALUE_OPTIONS);
            GIT_READS.contains(&sub)
                || sub == "config"
                    && rest.iter().any(|w| w.text.starts_with("--get") || matches!(w.text.as_str(), "--list" | "-l"))
                || sub == "stash" && matches!(rest.first().map(|w| w.text.as_str()), Some("list" | "show"))
        }
        "cargo" => {
            let (sub, _) = inv.subcommand(&CARGO_VALUE_OPTIONS);
            [
                "test",
                "check",
                "build",
                "clippy",
                "doc",
                "tree",
                "metadata",
                "bench",
                "nextest",
                "search",
                "info",
                "locate-project",
                "pkgid",
                "verify-project",
                "version",
                "help",
                "",
            ]
            .contains(&sub)
        }
        "go" => ["test", "vet", "build", "list", "version", "env", "doc", "help"].contains(&inv.subcommand(&[]).0),
        "npm" | "yarn" | "pnpm" | "bun" => {
            let (sub, rest) = inv.subcommand(&NPM_VALUE_OPTIONS);
            let script = rest.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-')).unwrap_or("");
            NPM_READS.contains(&sub)
                || sub == "config" && matches!(script, "get" | "list" | "ls")
                || sub == "run" && ["test", "lint", "check", "build"].contains(&script)
        }
        "make" => ["", "test", "check", "lint", "build", "all"].contains(&inv.subcommand(&MAKE_VALUE_OPTIONS).0),
        "mix" => ["test", "compile"].contains(&inv.subcommand(&[]).0),
        _ => cli_reads(&inv),
    }
}

/// Subcommands of a command-line client that only read (`kubectl logs`, `docker ps`, `helm
/// status`, `gh pr view`, `deployctl history`, `aws ec2 describe-instances`).
const CLI_READ_VERBS: [&str; 22] = [
    "get", "describe", "logs", "log", "list", "ls", "show", "status", "view", "history", "inspect", "info", "version",
    "top", "events", "explain", "diff", "search", "whoami", "ps", "images", "cat",
];

/// Subcommands of a command-line client that change something (`kubectl apply`, `deployctl
/// rollback`, `helm upgrade`, `gh pr merge`, `aws s3 sync`).
const CLI_WRITE_VERBS: [&str; 44] = [
    "apply",
    "create",
    "delete",
    "rm",
    "remove",
    "patch",
    "replace",
    "edit",
    "set",
    "scale",
    "rollout",
    "rollback",
    "restart",
    "run",
    "exec",
    "deploy",
    "push",
    "pull",
    "install",
    "uninstall",
    "upgrade",
    "update",
    "merge",
    "close",
    "cancel",
    "stop",
    "start",
    "kill",
    "drain",
    "cordon",
    "label",
    "annotate",
    "promote",
    "release",
    "sync",
    "cp",
    "mv",
    "put",
    "upload",
    "copy",
    "import",
    "send",
    "post",
    "publish",
];

/// Whether a command-line client of no known kind only reads: its first word that is no option
/// and is a subcommand of either kind decides, a read one ([`CLI_READ_VERBS`], or one opening
/// `describe-`, `list-` or `get-` as the AWS CLI's do) or a write one ([`CLI_WRITE_VERBS`]);
/// `run` or `exec` followed by a read subcommand is a command group (`gh run view`). Option
/// values cannot be told from subcommands without the client's own table, so words that are
/// neither are passed over: `kubectl --context prod-eu1 -n checkout logs deploy/api` reads,
/// `deployctl rollback api --to 4470` and `aws s3 sync logs s3://…` (a folder named `logs`) do
/// not.
fn cli_reads(inv: &Invocation<'_>) -> bool {
    // Programs whose arguments are paths, code or addresses, not subcommands: `rm -r logs`
    // removes a folder named like a subcommand.
    const NOT_CLIENTS: [&str; 30] = [
        "rm", "rmdir", "mv", "cp", "mkdir", "touch", "chmod", "chown", "ln", "tee", "dd", "truncate", "kill", "pkill",
        "killall", "shred", "unlink", "install", "rsync", "scp", "curl", "wget", "sh", "bash", "zsh", "python",
        "python3", "node", "ruby", "xargs",
    ];
    if NOT_CLIENTS.contains(&inv.program) {
        return false;
    }
    let words: Vec<&str> = inv.args.iter().map(|w| w.text.as_str()).filter(|w| !w.starts_with('-')).collect();
    let reads =
        |w: &str| CLI_READ_VERBS.contains(&w) || ["describe-", "list-", "get-"].iter().any(|p| w.starts_with(p));
    for (k, w) in words.iter().enumerate() {
        if matches!(*w, "run" | "exec") && words.get(k + 1).is_some_and(|n| reads(n)) {
            continue;
        }
        if reads(w) {
            return true;
        }
        if CLI_WRITE_VERBS.contains(w) {
            return false;
        }
    }
    false
}

/// Whether one simple command checks the work: a test runner ([`runs_tests`]), a checker
/// ([`CHECK_PROGRAMS`]), or a build tool's check, lint or build (`cargo check`, `go vet`, `npm
/// run lint`, `make`). Its failure says something about the work, not about what it looked up.
pub fn checks_work(c: &Command) -> bool {
    let Some(inv) = c.invocation() else { return false };
    if runs_tests(c) || CHECK_PROGRAMS.contains(&inv.program) {
        return true;
    }
    let sub = match inv.program {
        "cargo" => inv.subcommand(&CARGO_VALUE_OPTIONS).0,
        "go" | "mix" => inv.subcommand(&[]).0,
        "make" => return true,
        "npm" | "yarn" | "pnpm" | "bun" => {
            let (sub, rest) = inv.subcommand(&NPM_VALUE_OPTIONS);
            if sub != "run" {
                return false;
            }
            rest.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-')).unwrap_or("")
        }
        _ => return false,
    };
    ["check", "build", "clippy", "vet", "lint", "compile", "bench", "nextest", "doc"].contains(&sub)
}

/// Whether a command line only looks something up: it runs a program, and every simple command of
/// it reads or checks ([`reads_or_checks`]) without checking the work ([`checks_work`]): `pip
/// index versions urllib3`, `git ls-remote origin`, `npm view react version`.
pub fn only_queries(line: &str) -> bool {
    let cmds = commands(line);
    cmds.iter().any(|c| c.invocation().is_some()) && cmds.iter().all(|c| reads_or_checks(c) && !checks_work(c))
}

/// Whether exit status `code` of simple command `c` is how its program reports what it found, as
/// its documentation gives it, and not a failure: 1 from `grep` (`egrep`, `fgrep`, `zgrep`,
/// `rg`, `ag`, `ack`, `git grep`: no line matched), from `diff`, `cmp` and `git diff
/// --exit-code`/`--quiet` (the inputs differ) and from `test`/`[` (false); 1 from `npm audit`,
/// `pnpm audit`, `cargo audit` and `pip-audit` (vulnerabilities found) and from `npm outdated`
/// and `pnpm outdated` (packages out of date); 1 to 31 from `yarn audit` (a bit per severity
/// found).
pub fn reporting_exit(c: &Command, code: i32) -> bool {
    let Some(inv) = c.invocation() else { return false };
    match inv.program {
        "grep" | "egrep" | "fgrep" | "zgrep" | "rg" | "ag" | "ack" | "diff" | "cmp" | "test" | "[" | "pip-audit" => {
            code == 1
        }
        "git" => {
            let (sub, rest) = inv.subcommand(&GIT_VALUE_OPTIONS);
            code == 1
                && (sub == "grep"
                    || sub == "diff" && rest.iter().any(|w| matches!(w.text.as_str(), "--exit-code" | "--quiet")))
        }
        "cargo" => code == 1 && inv.subcommand(&CARGO_VALUE_OPTIONS).0 == "audit",
        "npm" | "pnpm" => code == 1 && matches!(inv.subcommand(&NPM_VALUE_OPTIONS).0, "audit" | "outdated"),
        "yarn" => match inv.subcommand(&NPM_VALUE_OPTIONS).0 {
            "audit" => (1..=31).contains(&code),
            "outdated" => code == 1,
            _ => false,
        },
        _ => false,
    }
}

/// Whether one simple command runs a test runner: `pytest`, `py.test`, `python -m pytest` or
/// `unittest`, `jest`, `vitest`, `mocha` (also through `npx`), `tox`, `nox`, `rspec`,
/// `phpunit`, `ctest`, `cargo test`/`nextest`, `go`/`mix`/`make`/`dotnet test`, a Gradle test
/// task (`./gradlew :app:testDebugUnitTest`, `check`), Maven's `test` or `verify`, `npm test`,
/// `npm t`, `npm run test…`, and `yarn`/`pnpm`/`bun` `test…`, `jest`, `vitest`, `mocha`.
pub fn runs_tests(c: &Command) -> bool {
    let Some(inv) = c.invocation() else { return false };
    match inv.program {
        "pytest" | "py.test" | "unittest" | "jest" | "vitest" | "mocha" | "tox" | "nox" | "rspec" | "phpunit"
        | "ctest" => true,
        "cargo" => ["test", "nextest"].contains(&inv.subcommand(&CARGO_VALUE_OPTIONS).0),
        "make" => inv.subcommand(&MAKE_VALUE_OPTIONS).0 == "test",
        "go" | "mix" | "dotnet" => inv.subcommand(&[]).0 == "test",
        // A Gradle task that tests (`test`, `:app:testDebugUnitTest`, `connectedAndroidTest`,
        // `check`); a Maven phase that runs Surefire (`test`, `verify`).
        "gradle" | "gradlew" | "gradlew.bat" => inv.args.iter().any(|w| {
            let task = w.text.rsplit(':').next().unwrap_or("");
            !w.text.starts_with('-') && (task.starts_with("test") || task.ends_with("Test") || task == "check")
        }),
        "mvn" | "mvnw" => inv.args.iter().any(|w| matches!(w.text.as_str(), "test" | "verify" | "surefire:test")),
        p @ ("npm" | "yarn" | "pnpm" | "bun") => {
            let (sub, rest) = inv.subcommand(&NPM_VALUE_OPTIONS);
            let script = rest.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-')).unwrap_or("");
            ["test", "t", "jest", "vitest", "mocha"].contains(&sub)
                || matches!(sub, "run" | "run-script") && script.starts_with("test")
                || p != "npm" && sub.starts_with("test")
        }
        _ => false,
    }
}

/// How a command changes a path ([`written_paths`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `rm`, `git rm`, `unlink`, `rmdir`, `shred`.
    Deletes,
    /// `mv`, `git mv`.
    Moves,
    /// Writes into it: a redirection, `sed -i`, `tee`, `cp` onto it, `git checkout` of it…
    Edits,
}

impl Change {
    /// The verb that says it: `deletes`, `moves`, `edits`.
    pub fn verb(self) -> &'static str {
        match self {
            Change::Deletes => "deletes",
            Change::Moves => "moves",
            Change::Edits => "edits",
        }
    }
}

/// The paths one simple command changes, with how, as written (unquoted): the targets of its
/// redirections into files; the arguments of `rm`, `unlink`, `rmdir`, `shred` (deleted), `mv`
/// (moved), `truncate`, `tee`, `touch` (edited), the destination of `cp`, the files of `sed -i`
/// and `perl -i` (not the script), the paths of `git rm`, `git mv`, `git checkout`, `git
/// restore`, the start folders of a `find` that deletes its hits ([`find_deletes`]: deleted).
/// Options are left out, and `/dev/…` paths.
pub fn written_paths(c: &Command) -> Vec<(String, Change)> {
    let mut v: Vec<(String, Change)> =
        c.redirects.iter().filter(|r| r.writes_file()).map(|r| (r.target.clone(), Change::Edits)).collect();
    if let Some(inv) = c.invocation() {
        let plain = |ws: &[Word]| -> Vec<String> {
            ws.iter().map(|w| w.text.clone()).filter(|t| !t.starts_with('-') && !t.is_empty()).collect()
        };
        let (how, targets) = match inv.program {
            "rm" | "unlink" | "rmdir" | "shred" => (Change::Deletes, plain(inv.args)),
            "mv" => (Change::Moves, plain(inv.args)),
            "truncate" => (Change::Edits, files_after_values(inv.args, &["-s", "--size", "-r", "--reference"])),
            "tee" | "touch" => (Change::Edits, plain(inv.args)),
            "cp" => (Change::Edits, plain(inv.args).pop().into_iter().collect()),
            "sed" | "perl" if edits_in_place(&inv) => (Change::Edits, script_files(&inv)),
            "find" if find_deletes(&inv) => {
                (Change::Deletes, inv.args.iter().map(|w| w.text.clone()).take_while(|t| !t.starts_with('-')).collect())
            }
            "git" => {
                let (sub, rest) = inv.subcommand(&GIT_VALUE_OPTIONS);
                match sub {
                    "rm" => (Change::Deletes, plain(rest)),
                    "mv" => (Change::Moves, plain(rest)),
                    "checkout" | "restore" => (Change::Edits, plain(rest)),
                    _ => (Change::Edits, Vec::new()),
                }
            }
            _ => (Change::Edits, Vec::new()),
        };
        v.extend(targets.into_iter().map(|p| (p, how)));
    }
    v.retain(|(p, _)| !p.is_empty() && !p.starts_with("/dev/"));
    v
}

/// Whether a `find` deletes what it finds: it has `-delete`, or runs `rm`, `unlink` or `shred` on
/// each hit (`-exec rm {} +`).
fn find_deletes(inv: &Invocation<'_>) -> bool {
    inv.args.iter().enumerate().any(|(k, w)| {
        w.text == "-delete"
            || matches!(w.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                && inv
                    .args
                    .get(k + 1)
                    .is_some_and(|r| matches!(r.text.rsplit('/').next().unwrap_or(""), "rm" | "unlink" | "shred"))
    })
}

/// The non-option arguments of a command, skipping the values of `takes_value` options.
fn files_after_values(args: &[Word], takes_value: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut k = 0;
    while let Some(w) = args.get(k) {
        if takes_value.contains(&w.text.as_str()) {
            k += 2;
            continue;
        }
        if !w.text.starts_with('-') {
            out.push(w.text.clone());
        }
        k += 1;
    }
    out
}

/// The files `sed -i` or `perl -pi` edits: its non-option arguments but the script (the value of
/// `-e`/`--expression`/`-f`, else the first non-option argument).
fn script_files(inv: &Invocation<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut script_given = false;
    let mut k = 0;
    while let Some(w) = inv.args.get(k) {
        let t = w.text.as_str();
        if matches!(t, "-e" | "--expression" | "-f" | "--file")
            || t.starts_with('-') && t.ends_with('e') && inv.program == "perl"
        {
            script_given = true;
            k += 2;
            continue;
        }
        if !t.starts_with('-') && !t.is_empty() {
            out.push(t.to_string());
        }
        k += 1;
    }
    if !script_given && !out.is_empty() {
        out.remove(0);
    }
    out
}

/// Whether one simple command edits files: it redirects into a file, or runs `sed -i` or
/// `perl -i`, `patch`, `tee`, `mv`, `cp`, `rm`, `unlink`, `rmdir`, `touch`, `mkdir`,
/// `truncate`, or a `git` subcommand that changes the working tree (`apply`, `checkout`,
/// `restore`, `reset`, `stash` but not `stash list` or `show`, `am`, `cherry-pick`, `merge`,
/// `rebase`, `mv`, `rm`), or a fixer in its unsafe mode ([`UNSAFE_FIXES`]: `ruff check --fix
/// --unsafe-fixes`). Running a program, installing packages or building is not an edit, and
/// neither is `git commit`: it records the files as they are (it changes state,
/// [`command_changes`]).
pub fn command_edits(c: &Command) -> bool {
    if c.writes_file() {
        return true;
    }
    let Some(inv) = c.invocation() else { return false };
    match inv.program {
        "sed" | "perl" => edits_in_place(&inv),
        "patch" | "tee" | "mv" | "cp" | "rm" | "unlink" | "rmdir" | "touch" | "mkdir" | "truncate" => true,
        "git" => {
            let (sub, rest) = inv.subcommand(&GIT_VALUE_OPTIONS);
            ["apply", "checkout", "restore", "reset", "stash", "am", "cherry-pick", "merge", "rebase", "mv", "rm"]
                .contains(&sub)
                && !(sub == "stash" && matches!(rest.first().map(|w| w.text.as_str()), Some("list" | "show")))
        }
        "ruff" | "biome" | "rubocop" | "autoflake" | "eslint" => unsafe_fix(c).is_some(),
        _ => false,
    }
}

/// Fixers run in the mode that may delete or rewrite code, as (program, option): `ruff
/// --unsafe-fixes`, `biome --unsafe` or `--apply-unsafe`, `rubocop -A` (`--autocorrect-all`),
/// `autoflake --remove-all-unused-imports`, `eslint --fix`. Such a run edits files.
pub const UNSAFE_FIXES: [(&str, &str); 8] = [
    ("ruff", "--unsafe-fixes"),
    ("biome", "--unsafe"),
    ("biome", "--apply-unsafe"),
    ("rubocop", "-A"),
    ("rubocop", "--autocorrect-all"),
    ("rubocop", "--auto-correct-all"),
    ("autoflake", "--remove-all-unused-imports"),
    ("eslint", "--fix"),
];

/// The fixer and its unsafe option ([`UNSAFE_FIXES`]) one simple command runs, if it runs one.
pub fn unsafe_fix(c: &Command) -> Option<(&'static str, &'static str)> {
    let inv = c.invocation()?;
    UNSAFE_FIXES.iter().find(|(p, o)| inv.program == *p && inv.args.iter().any(|w| w.text == *o)).copied()
}

/// What a `sed -i` substitution writes: for one simple command that runs `sed` in place with an
/// `s` script (`s/OLD/NEW/g`, any delimiter; the script is the value of `-e`/`--expression` or
/// the first argument that is no option), the pattern and the replacement as written (the
/// delimiter's escapes taken off), with the files it edits. `None` for any other command, a
/// script of several commands (`;`, a newline) or one that does not parse.
pub fn sed_substitution(c: &Command) -> Option<SedSubstitution> {
    let inv = c.invocation()?;
    if inv.program != "sed" || !edits_in_place(&inv) {
        return None;
    }
    let mut script = None;
    let mut extended = false;
    let mut k = 0;
    while let Some(w) = inv.args.get(k) {
        let t = w.text.as_str();
        if matches!(t, "-e" | "--expression") {
            script = script.or_else(|| inv.arg(k + 1).map(str::to_string));
            k += 2;
            continue;
        }
        if t == "-E" || t == "--regexp-extended" || t.starts_with('-') && !t.starts_with("--") && t.contains(['E', 'r'])
        {
            extended = true;
        }
        if !t.starts_with('-') && script.is_none() {
            script = Some(t.to_string());
        }
        k += 1;
    }
    let script = script?;
    let rest = script.trim().strip_prefix('s')?;
    let delim = rest.chars().next().filter(|d| !d.is_alphanumeric() && *d != '\\' && *d != '\n')?;
    let mut parts: Vec<String> = vec![String::new()];
    let mut chars = rest[delim.len_utf8()..].chars();
    while let Some(ch) = chars.next() {
        if parts.len() > 2 {
            break;
        }
        match ch {
            '\\' => match chars.next() {
                Some(d) if d == delim => parts.last_mut()?.push(d),
                Some(x) => {
                    parts.last_mut()?.push('\\');
                    parts.last_mut()?.push(x);
                }
                None => parts.last_mut()?.push('\\'),
            },
            d if d == delim => parts.push(String::new()),
            x => parts.last_mut()?.push(x),
        }
    }
    if parts.len() < 3 {
        return None;
    }
    let files = script_files(&inv);
    Some(SedSubstitution { pattern: parts[0].clone(), replacement: parts[1].clone(), extended, files })
}

/// A `sed -i` substitution ([`sed_substitution`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SedSubstitution {
    /// The pattern, as written (the delimiter's escapes taken off, other escapes kept).
    pub pattern: String,
    /// The replacement, as written (the same).
    pub replacement: String,
    /// Whether the pattern is an extended regular expression (`-E`, `-r`).
    pub extended: bool,
    /// The files it edits.
    pub files: Vec<String>,
}

impl SedSubstitution {
    /// The literal pieces of the replacement, in order: the text between `&` and the group
    /// references `\1`…`\9`, its escapes resolved (`\\` is `\`, `\n` a line break, `\&` an `&`).
    pub fn replacement_literals(&self) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut chars = self.replacement.chars();
        while let Some(ch) = chars.next() {
            match ch {
                '\\' => match chars.next() {
                    Some(d) if d.is_ascii_digit() => out.push(String::new()),
                    Some('n') => out.last_mut().expect("one piece").push('\n'),
                    Some('t') => out.last_mut().expect("one piece").push('\t'),
                    Some(x) => out.last_mut().expect("one piece").push(x),
                    None => {}
                },
                '&' => out.push(String::new()),
                x => out.last_mut().expect("one piece").push(x),
            }
        }
        out.retain(|p| !p.trim().is_empty());
        out
    }

    /// The text the pattern matches, when it matches only itself: its escapes resolved (`\*` is
    /// `*`), a `.` read as itself; `None` when it holds an operator (a bracket, `*`, an anchor
    /// inside it; for an extended pattern also `+ ? | ( ) {`) or a class escape (`\w`, `\s`).
    pub fn pattern_literal(&self) -> Option<String> {
        let p = self.pattern.strip_prefix('^').unwrap_or(&self.pattern);
        let p = p.strip_suffix('$').filter(|q| !q.ends_with('\\')).unwrap_or(p);
        let mut out = String::new();
        let mut chars = p.chars();
        while let Some(ch) = chars.next() {
            match ch {
                '\\' => match chars.next() {
                    Some(x) if x.is_ascii_alphanumeric() => return None,
                    Some(x) => out.push(x),
                    None => return None,
                },
                '[' | '*' | '^' | '$' => return None,
                '+' | '?' | '|' | '(' | ')' | '{' if self.extended => return None,
                x => out.push(x),
            }
        }
        (!out.trim().is_empty()).then_some(out)
    }
}

/// Whether one simple command throws away the work in the working tree: `git reset --hard`,
/// `git checkout` or `git restore` of the whole tree (`.`, `:/`, `*`) or forced (`-f`), `git
/// clean` with `-f`, `git stash drop` or `clear`. Uncommitted changes and untracked files are
/// gone after it.
pub fn discards_work(c: &Command) -> bool {
    let Some(inv) = c.invocation() else { return false };
    if inv.program != "git" {
        return false;
    }
    let (sub, rest) = inv.subcommand(&GIT_VALUE_OPTIONS);
    let args: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    let whole = |a: &&str| matches!(*a, "." | "./" | "*" | ":/" | ":/*" | ":/.");
    let short = |a: &&str, f: char| a.starts_with('-') && !a.starts_with("--") && a.contains(f);
    match sub {
        "reset" => args.contains(&"--hard"),
        "checkout" | "restore" => args.iter().any(whole) || args.iter().any(|a| short(a, 'f') || *a == "--force"),
        "clean" => args.iter().any(|a| short(a, 'f') || *a == "--force"),
        "stash" => matches!(args.first(), Some(&"drop") | Some(&"clear")),
        _ => false,
    }
}

/// What a `git push` pushes to: `Some(Some(branch))` for the destination of its first refspec
/// (`main`, `HEAD:main`, `+feature:refs/heads/main` are all `main`; a tag, `--delete` or
/// `--dry-run` is none),
/// `Some(None)` for a push that names no refspec (it pushes the current branch), `None` for any
/// other command. The remote is the first argument after `push` that is no option; refspecs follow
/// it.
pub fn git_push_destination(c: &Command) -> Option<Option<String>> {
    let inv = c.invocation()?;
    if inv.program != "git" {
        return None;
    }
    let (sub, rest) = inv.subcommand(&GIT_VALUE_OPTIONS);
    if sub != "push" {
        return None;
    }
    let args: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    if args.iter().any(|a| matches!(*a, "--delete" | "-d" | "--tags" | "--all" | "--mirror" | "--dry-run" | "-n")) {
        return None;
    }
    // Options that take a value as the next word.
    const VALUE: [&str; 4] = ["--repo", "--receive-pack", "--exec", "-o"];
    let mut positional = Vec::new();
    let mut k = 0;
    while let Some(a) = args.get(k) {
        if VALUE.contains(a) {
            k += 2;
            continue;
        }
        if !a.starts_with('-') {
            positional.push(*a);
        }
        k += 1;
    }
    let Some(refspec) = positional.get(1) else { return Some(None) };
    let dst = refspec.trim_start_matches('+').rsplit(':').next().unwrap_or("");
    let dst = dst.strip_prefix("refs/heads/").unwrap_or(dst);
    if dst.is_empty() || dst.starts_with("refs/") {
        return None;
    }
    Some(Some(dst.to_string()))
}

/// The branch a simple command switches to: `git checkout BRANCH`, `git checkout -b BRANCH`, `git
/// switch [-c] BRANCH` (its first name; not a checkout of paths, `--` or a name with a dot, nor
/// of a revision such as `HEAD~1`).
pub fn git_switched_branch(c: &Command) -> Option<String> {
    let inv = c.invocation()?;
    if inv.program != "git" {
        return None;
    }
    let (sub, rest) = inv.subcommand(&GIT_VALUE_OPTIONS);
    if !matches!(sub, "checkout" | "switch") {
        return None;
    }
    let args: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    if args.contains(&"--") {
        return None;
    }
    // The first name: a path (`.`, `app.py`) or a revision (`HEAD~1`) is no branch.
    let first = args.iter().find(|a| !a.starts_with('-'))?;
    (!first.contains('.') && !first.starts_with("HEAD") && !first.contains('~') && !first.contains('^'))
        .then(|| first.to_string())
}

/// Whether one simple command puts other code in the working tree than the agent's edits left:
/// `git stash` (not `list` or `show`), `git checkout`, `git restore`, `git reset`, `git switch`.
/// A check run after it in the same command line checks that other code.
pub fn swaps_tree(c: &Command) -> bool {
    let Some(inv) = c.invocation() else { return false };
    if inv.program != "git" {
        return false;
    }
    let (sub, rest) = inv.subcommand(&GIT_VALUE_OPTIONS);
    match sub {
        "stash" => !matches!(rest.first().map(|w| w.text.as_str()), Some("list" | "show")),
        "checkout" | "restore" | "reset" | "switch" => true,
        _ => false,
    }
}

/// Whether one simple command only reads, lists or searches files and runs nothing that checks
/// the code: a reader ([`READ_PROGRAMS`]: `cat`, `head`, `less`, `grep`, `rg`, `ls`…), `sed`
/// without `-i`, `find` without `-delete`, `-fprint` or an `-exec` of a program that is not a
/// reader, a `git` subcommand that shows the repository (`git show`, `git log`, `git diff`,
/// `git status`, `git grep`, `git blame`), `cd`. A command that writes a file is none.
/// Such a command neither reproduces a failure nor checks a change.
pub fn only_reads_files(c: &Command) -> bool {
    let Some(inv) = c.invocation() else { return true };
    if c.writes_file() {
        return false;
    }
    match inv.program {
        p if READ_PROGRAMS.contains(&p) => true,
        "sed" => !edits_in_place(&inv),
        "find" => reads_or_checks(c),
        "git" => {
            let (sub, _) = inv.subcommand(&GIT_VALUE_OPTIONS);
            ["status", "diff", "log", "show", "grep", "blame", "ls-files"].contains(&sub)
        }
        _ => false,
    }
}

/// Whether a command line only reads files: every simple command of it does
/// ([`only_reads_files`]), and one of them runs a program.
pub fn reads_files_only(line: &str) -> bool {
    let cmds = commands(line);
    cmds.iter().any(|c| c.invocation().is_some()) && cmds.iter().all(only_reads_files)
}

/// Whether one simple command changes state: it redirects into a file or does more than read
/// and check ([`reads_or_checks`]).
pub fn command_changes(c: &Command) -> bool {
    c.writes_file() || !reads_or_checks(c)
}

/// Whether a command line does more than read and check: one of its simple commands changes
/// state ([`command_changes`]).
pub fn changes_state(line: &str) -> bool {
    commands(line).iter().any(command_changes)
}

/// Whether a command line edits files of the work: one of its simple commands does
/// ([`command_edits`]) and changes more than scratch files in the system's temporary folder
/// ([`changes_only_temp`]: `cat > /tmp/repro.py <<EOF` writes a reproduction, not the code).
pub fn edits_files(line: &str) -> bool {
    let cmds = commands(line);
    cmds.iter().any(|c| command_edits(c) && !changes_only_temp(c)) || cmds.iter().any(|c| script_edits(line, c))
}

/// A write of a file in an interpreter's code: Python's `Path.write_text`/`write_bytes`, `open`
/// with a write or append mode, Node's `writeFileSync`/`writeFile`/`appendFile`, Ruby's
/// `File.write`.
static WRITES_IN_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\.write_(?:text|bytes)\(|\bopen\([^)]*,\s*(?:mode\s*=\s*)?['"][wa]b?\+?['"]|\b(?:writeFileSync|writeFile|appendFileSync|appendFile)\(|\bFile\.write\("#,
    )
    .unwrap()
});

/// A quoted literal in code that names a file: a path with a `/` or a name with an extension
/// (`"src/httpkit/client.py"`, `'setup.cfg'`).
static PATH_LITERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"["']((?:[\w.~$-]*/)*[\w.-]+\.[A-Za-z][\w]{0,5}|(?:[\w.~$-]+/)+[\w.-]+)["']"#).unwrap()
});

/// The code an interpreter command of `line` runs inline: a `-c`/`-e` probe ([`probe_code`]) or
/// the body of its here-document (`python - <<'EOF' … EOF`: the lines after the command's line up
/// to the delimiter). `None` for another command, or an interpreter running a script file.
fn inline_code<'a>(line: &'a str, c: &'a Command) -> Option<&'a str> {
    let inv = c.invocation()?;
    if let Some(code) = probe_code(&inv) {
        return Some(code);
    }
    if !(is_python(inv.program) || matches!(inv.program, "node" | "ruby" | "deno" | "bun")) {
        return None;
    }
    let delimiter = c.redirects.iter().find(|r| r.op == "<<" || r.op == "<<-")?.target.as_str();
    let at = line.find(c.text.as_str())?;
    let body_start = at + line[at..].find('\n')? + 1;
    let body = &line[body_start..];
    let mut len = 0;
    for l in body.split_inclusive('\n') {
        if l.trim() == delimiter {
            break;
        }
        len += l.len();
    }
    Some(&body[..len])
}

/// Whether simple command `c` of `line` runs inline code ([`inline_code`]) that writes a file
/// ([`WRITES_IN_CODE`]) and names a file of the work, one outside the system's temporary folder
/// ([`PATH_LITERAL`], [`in_temp_dir`]): `python - <<'EOF'` that reads `src/app.py`, replaces a
/// block and writes it back edits the code as `sed -i` would; one that writes only
/// `/tmp/repro.py` makes a scratch file.
fn script_edits(line: &str, c: &Command) -> bool {
    let Some(code) = inline_code(line, c) else { return false };
    WRITES_IN_CODE.is_match(code)
        && PATH_LITERAL.captures_iter(code).any(|m| !in_temp_dir(&m[1]) && !m[1].starts_with("/dev/"))
}

/// Folders of the system's temporary files, as a path written in a command or a tool's
/// arguments opens with one: `/tmp`, `/var/tmp`, macOS's `/private/tmp` and per-user
/// `/var/folders/…`, and `$TMPDIR` unexpanded.
const TEMP_DIRS: [&str; 7] =
    ["/tmp", "/var/tmp", "/private/tmp", "/var/folders", "/private/var/folders", "$TMPDIR", "${TMPDIR}"];

/// Whether `path` (as a call writes it) is in the system's temporary folder ([`TEMP_DIRS`]) or is
/// that folder: a scratch file there is no file of the work under way.
pub fn in_temp_dir(path: &str) -> bool {
    let path = path.trim_matches(['"', '\'']);
    TEMP_DIRS.iter().any(|d| path.strip_prefix(d).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
}

/// Whether one simple command that edits ([`command_edits`]) changes nothing but paths in the
/// system's temporary folder ([`in_temp_dir`]): every path it changes ([`written_paths`]; the
/// folders of a `mkdir`) is there, and it names one at least. `cp src/app.py /tmp/app.py` keeps
/// a copy aside; `mv stale_test.go /tmp/` moves a file of the work, which is a change of it.
pub fn changes_only_temp(c: &Command) -> bool {
    let mut paths: Vec<String> = written_paths(c).into_iter().map(|(p, _)| p).collect();
    if let Some(inv) = c.invocation().filter(|inv| inv.program == "mkdir") {
        paths.extend(inv.args.iter().map(|w| w.text.clone()).filter(|t| !t.starts_with('-') && !t.is_empty()));
    }
    !paths.is_empty() && paths.iter().all(|p| in_temp_dir(p))
}

/// What a state-changing command line does, to tell when it is done again: the program and first
/// argument (not an option; trailing `/` and quotes off) of its first simple command that changes
/// state (`rm build` for `sudo rm -rf build/`, `npm install`). `None` when none changes state.
pub fn action_key(line: &str) -> Option<String> {
    let cmds = commands(line);
    let c = cmds.iter().find(|c| command_changes(c))?;
    let inv = c.invocation()?;
    let arg = inv.args.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-')).map(|w| w.trim_matches('/'));
    Some(match arg {
        Some(arg) if !arg.is_empty() => format!("{} {arg}", inv.program),
        _ => inv.program.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_code_that_writes_a_file_of_the_work_edits_it() {
        let patch = "cd /testbed && python - <<'EOF'\nimport pathlib\np = pathlib.Path(\"src/httpkit/client.py\")\n\
                     s = p.read_text()\np.write_text(s.replace('a', 'b'))\nEOF\nsed -n '16,25p' src/httpkit/client.py";
        assert!(edits_files(patch));
        assert!(edits_files("python3 -c \"open('setup.cfg', 'w').write('[metadata]')\""));
        // A scratch file, a script that only reads, a script run from a file: no edit.
        assert!(!edits_files("python - <<'EOF'\nopen('/tmp/out.txt', 'w').write('x')\nEOF"));
        assert!(!edits_files("python - <<'EOF'\nprint(open('src/app.py').read().count('def '))\nEOF"));
        assert!(!edits_files("python scripts/gen.py --out build/x.json"));
    }

    #[test]
    fn a_client_s_read_subcommands_change_nothing() {
        for line in [
            "kubectl --context prod-eu1 -n checkout logs deploy/checkout-api --since=3m | tail -n 6",
            "deployctl history checkout-api --after 2025-10-14T00:00:00Z --limit 20",
            "docker ps -a",
            "helm status payments -n prod",
            "gh pr view 4411 --json files",
            "gh run view 9812345 --log-failed",
            "aws ec2 describe-instances --region eu-west-1",
        ] {
            assert!(!changes_state(line), "{line}");
        }
        for line in [
            "deployctl rollback checkout-api --to 4470 --context prod-eu1",
            "kubectl -n checkout rollout restart deploy/checkout-api",
            "kubectl apply -f k8s/ && kubectl get pods",
            "rm -rf logs",
            "python3 tools/sync.py status",
            "gh pr merge 4411 --squash",
            "aws s3 sync logs s3://acme-audit-archive/2025/",
        ] {
            assert!(changes_state(line), "{line}");
        }
    }

    #[test]
    fn a_push_is_read_for_the_branch_it_updates() {
        let dst = |line: &str| commands(line).iter().find_map(git_push_destination);
        assert_eq!(dst("git push origin HEAD:main"), Some(Some("main".into())));
        assert_eq!(dst("git push -f origin +HEAD:refs/heads/main"), Some(Some("main".into())));
        assert_eq!(dst("git push origin feat/x"), Some(Some("feat/x".into())));
        assert_eq!(dst("git push origin main:feat/x"), Some(Some("feat/x".into())));
        assert_eq!(dst("git -C repo push -u origin"), Some(None));
        assert_eq!(dst("git push"), Some(None));
        assert_eq!(dst("git push --delete origin main"), None);
        assert_eq!(dst("git push origin --tags"), None);
        assert_eq!(dst("git commit -m push"), None);
        let switched = |line: &str| commands(line).iter().find_map(git_switched_branch);
        assert_eq!(switched("git checkout main"), Some("main".into()));
        assert_eq!(switched("git switch -c feat/retry"), Some("feat/retry".into()));
        assert_eq!(switched("git checkout -- app.py"), None);
        assert_eq!(switched("git checkout ."), None);
        assert_eq!(switched("git checkout HEAD~1"), None);
    }

    fn texts(line: &str) -> Vec<String> {
        commands(line).into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn a_scratch_file_in_the_temp_folder_is_no_edit_of_the_work() {
        for line in [
            "cat > /tmp/repro.py <<'EOF'\nprint(1)\nEOF",
            "echo 'x' > /tmp/x.txt && python /tmp/x.txt",
            "mkdir -p /tmp/repro && cp src/app.py /tmp/repro/app.py",
            "tee \"$TMPDIR/notes.md\" < notes",
            "rm -f /var/tmp/repro.py",
        ] {
            assert!(!edits_files(line), "{line}");
        }
        for line in [
            "mv stale_test.go /tmp/",
            "echo x > /tmp/x.txt && sed -i 's/a/b/' src/app.py",
            "cat > tmp/repro.py <<'EOF'\nx\nEOF",
            "echo x > /tmpfile",
            "git apply /tmp/fix.patch",
        ] {
            assert!(edits_files(line), "{line}");
        }
    }

    fn words(c: &Command) -> Vec<&str> {
        c.words.iter().map(|w| w.text.as_str()).collect()
    }

    #[test]
    fn a_line_is_split_into_simple_commands_at_operators_outside_quotes() {
        assert_eq!(
            texts("cd /w && python -m pytest -q || echo 'a && b; c' | tail -5; ls\ngit diff &"),
            ["cd /w", "python -m pytest -q", "echo 'a && b; c'", "tail -5", "ls", "git diff"]
        );
        assert_eq!(texts("(cd web && npm test)&&make"), ["cd web", "npm test", "make"]);
        assert_eq!(texts("echo \"x > y\" # a comment; rm -rf /"), ["echo \"x > y\""]);
        let c = &commands("find pkg -name package.json -exec cat {} \\;")[0];
        assert_eq!(words(c), ["find", "pkg", "-name", "package.json", "-exec", "cat", "{}", ";"]);
        // Words lose their quotes; a command substitution stays one word.
        let c = &commands(r#"grep -n "fn parse" $(git ls-files '*.rs') 'it''s'"#)[0];
        assert_eq!(words(c), ["grep", "-n", "fn parse", "$(git ls-files '*.rs')", "its"]);
        // An unbalanced quote (a clipped command) reads to the end.
        assert_eq!(words(&commands("echo 'unterminated && rm x")[0]), ["echo", "unterminated && rm x"]);
        assert!(commands("  \n ").is_empty());
    }

    #[test]
    fn redirections_and_here_documents_are_set_apart() {
        let c = &commands("cargo test 2>&1 >/dev/null")[0];
        assert_eq!(words(c), ["cargo", "test"]);
        assert!(!c.writes_file());
        let c = &commands("echo x >> notes.txt")[0];
        assert_eq!(c.redirects, [Redirect { op: ">>".into(), target: "notes.txt".into() }]);
        assert!(c.writes_file());
        assert!(commands("make &> build.log")[0].writes_file());
        // The here-document's body is no command; the command after it is.
        let cs = commands("cat > a.py <<'EOF'\nimport os\nos.remove('x')\nEOF\npytest -q");
        assert_eq!(cs.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["cat > a.py <<'EOF'", "pytest -q"]);
        assert_eq!(written_paths(&cs[0]), [("a.py".to_string(), Change::Edits)]);
    }

    #[test]
    fn the_program_is_found_past_wrappers_runners_and_assignments() {
        let program = |line: &str| {
            let cs = commands(line);
            cs.first().and_then(|c| c.invocation().map(|i| i.program.to_string()))
        };
        for (line, want) in [
            ("sudo -u www-data rm -rf cache", "rm"),
            ("env -i PATH=/bin FOO=1 /usr/bin/grep x", "grep"),
            ("RUST_BACKTRACE=1 time cargo test", "cargo"),
            ("timeout -s KILL 30 go test ./...", "go"),
            ("nice -n 10 nohup make", "make"),
            ("npx --yes jest src/a.test.ts", "jest"),
            ("uv run --with pytest-cov python -m pytest -q", "pytest"),
            ("poetry run mypy .", "mypy"),
            ("pnpm exec vitest run", "vitest"),
            ("python3.11 -X dev -m unittest discover", "unittest"),
            ("xargs -I {} -n 1 rm {}", "rm"),
            ("do pytest $f", "pytest"),
        ] {
            assert_eq!(program(line).as_deref(), Some(want), "{line}");
        }
        assert_eq!(program("for f in *.py"), None);
        assert_eq!(program("FOO=1"), None);
        assert_eq!(program("done"), None);
        // A nested shell is read as its script's commands.
        assert_eq!(texts("timeout 60 bash -lc 'cd app && pytest -q'"), ["cd app", "pytest -q"]);
    }

    #[test]
    fn a_package_manager_or_git_query_only_reads() {
        for line in [
            "pip show urllib3 && pip index versions urllib3",
            "python -m pip show requests",
            "pip3 --python .venv/bin/python list --outdated",
            "pip config list",
            "pip cache dir",
            "pip --version",
            "npm view react versions --json",
            "npm explain lodash",
            "pnpm why left-pad",
            "npm config get registry",
            "cargo search serde --limit 5",
            "cargo --version",
            "go doc net/http Client",
            "git describe --tags && git ls-remote origin && git rev-list --count HEAD",
            "git config --get remote.origin.url",
        ] {
            assert!(!changes_state(line), "{line}");
        }
        for line in [
            "pip install -U urllib3",
            "python -m pip uninstall -y urllib3",
            "pip cache purge",
            "pip config set global.index-url https://example.org/simple",
            "npm install",
            "yarn",
            "npm config set registry https://example.org",
            "cargo add serde",
            "git config user.email a@b.c",
            "go get example.com/m@v1.2.3",
        ] {
            assert!(changes_state(line), "{line}");
        }
    }

    #[test]
    fn what_a_command_does_is_read_from_its_program_and_arguments() {
        assert!(!changes_state("git -C repo status && git --no-pager log -3"));
        assert!(changes_state("git -C repo push origin main"));
        assert!(!changes_state("for f in tests/*.py; do python -m py_compile $f; done"));
        assert!(changes_state("sed -ri 's/a/b/' x.py"));
        assert!(edits_files("perl -0777 -pi -e 's/a/b/' x.py"));
        assert!(!changes_state("grep -rn 'os.remove(' src"), "a search for code is no probe");
        assert!(!changes_state("find . -name '*.py' -exec grep -l TODO {} +"));
        assert!(changes_state("find . -name '*.py' -exec rm {} +"));
        assert!(!changes_state("make -C web test"));
        assert!(!changes_state("cargo +nightly test"));
        assert!(runs_tests(&commands("npm --prefix web run test:unit")[0]));
        assert!(runs_tests(&commands("yarn test:e2e")[0]));
        assert!(!runs_tests(&commands("npm install")[0]));
        assert_eq!(action_key("sudo rm -rf build/").as_deref(), Some("rm build"));
        assert_eq!(action_key("ls && npm install"), Some("npm install".into()));
        assert_eq!(action_key("ls -la"), None);
        assert_eq!(
            written_paths(&commands("sed -i -e 's/x/y/' a.py b.py")[0]),
            [("a.py".to_string(), Change::Edits), ("b.py".to_string(), Change::Edits)]
        );
        assert_eq!(written_paths(&commands("sed -i '41d' src/c.ts")[0]), [("src/c.ts".to_string(), Change::Edits)]);
        assert_eq!(
            written_paths(&commands("sudo find /srv/media/cache -name '*.jpg' -mtime +30 -delete")[0]),
            [("/srv/media/cache".to_string(), Change::Deletes)]
        );
        assert_eq!(
            written_paths(&commands("find logs old -type f -exec rm -f {} +")[0]),
            [("logs".to_string(), Change::Deletes), ("old".to_string(), Change::Deletes)]
        );
        assert_eq!(written_paths(&commands("find /srv/media -mtime +30 | wc -l")[0]), []);
        assert_eq!(shell_command("ssh_exec", r#"{"host": "db-2", "command": "df -h"}"#).as_deref(), Some("df -h"));
        assert_eq!(shell_command("sshkey_rotate", r#"{"command": "rotate"}"#), None);
    }

    #[test]
    fn an_exit_code_a_program_reports_with_is_told_from_a_failure() {
        let exit = |line: &str, code: i32| reporting_exit(&commands(line)[0], code);
        assert!(exit("npm audit --omit=optional", 1));
        assert!(exit("pnpm audit", 1));
        assert!(exit("yarn audit --groups dependencies", 12));
        assert!(exit("grep -rn TODO src", 1));
        assert!(exit("git diff --exit-code", 1));
        assert!(exit("npm outdated", 1));
        // Other codes, or other commands, are failures.
        assert!(!exit("grep -rn TODO src", 2));
        assert!(!exit("npm audit", 2));
        assert!(!exit("npm install", 1));
        assert!(!exit("git diff", 1));
        assert!(!exit("pytest -q", 1));
    }
}
