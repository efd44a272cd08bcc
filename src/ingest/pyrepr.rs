//! Python literals (`repr` of dicts, lists, tuples, sets, strings, numbers, `True`/`False`/`None`)
//! decoded into JSON values.
//!
//! Some τ-bench and AgentRx dumps store fields as `str(obj)` instead of JSON: `"{'task': {...}}"`,
//! `"[{'id': 'call_1', ...}]"`, `"'user'"`, `"None"`. Anything else (calls like `datetime(...)`,
//! expressions, unbalanced text) is rejected with `None`; nesting deeper than [`MAX_DEPTH`] too.

use serde_json::{Map, Number, Value};

/// The deepest nesting of containers accepted (the same limit serde_json uses).
pub const MAX_DEPTH: usize = 128;

/// Decodes `text` when the whole of it (surrounding white space aside) is one Python literal.
pub fn parse(text: &str) -> Option<Value> {
    let mut p = Parser { s: text, pos: 0 };
    let v = p.value(0)?;
    p.skip_ws();
    (p.pos == text.len()).then_some(v)
}

/// Decodes the Python string literal that starts `text` (after white space), returning it and the
/// number of bytes consumed; `None` when `text` does not start with a string literal.
pub fn parse_string_prefix(text: &str) -> Option<(String, usize)> {
    let mut p = Parser { s: text, pos: 0 };
    p.skip_ws();
    let s = p.string()?;
    Some((s, p.pos))
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += c.len_utf8();
        }
        hit
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_ws();
        match self.peek()? {
            '[' => self.sequence('[', ']', depth).map(Value::Array),
            '(' => self.sequence('(', ')', depth).map(Value::Array),
            '{' => self.dict_or_set(depth),
            '\'' | '"' => self.string().map(Value::String),
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => self.number(),
            c if c.is_ascii_alphabetic() || c == '_' => self.word(),
            _ => None,
        }
    }

    /// `[a, b,]` or `(a, b)`; the opening bracket is next.
    fn sequence(&mut self, open: char, close: char, depth: usize) -> Option<Vec<Value>> {
        self.eat(open);
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(close) {
                return Some(items);
            }
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            if !self.eat(',') {
                self.skip_ws();
                return self.eat(close).then_some(items);
            }
        }
    }

    /// `{k: v, ...}` as an object (non-string keys written as JSON), or `{a, b}` as an array.
    fn dict_or_set(&mut self, depth: usize) -> Option<Value> {
        self.eat('{');
        self.skip_ws();
        if self.eat('}') {
            return Some(Value::Object(Map::new()));
        }
        let first = self.value(depth + 1)?;
        self.skip_ws();
        if !self.eat(':') {
            return self.set_rest(first, depth);
        }
        let mut map = Map::new();
        let mut key = first;
        loop {
            let v = self.value(depth + 1)?;
            map.insert(key_text(key), v);
            self.skip_ws();
            if !self.eat(',') {
                self.skip_ws();
                return self.eat('}').then_some(Value::Object(map));
            }
            self.skip_ws();
            if self.eat('}') {
                return Some(Value::Object(map));
            }
            key = self.value(depth + 1)?;
            self.skip_ws();
            if !self.eat(':') {
                return None;
            }
        }
    }

    fn set_rest(&mut self, first: Value, depth: usize) -> Option<Value> {
        let mut items = vec![first];
        loop {
            self.skip_ws();
            if self.eat('}') {
                return Some(Value::Array(items));
            }
            if !self.eat(',') {
                return None;
            }
            self.skip_ws();
            if self.eat('}') {
                return Some(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
        }
    }

    /// A quoted string with optional `r`/`u`/`b` prefixes and Python escapes.
    fn string(&mut self) -> Option<String> {
        let mut raw = false;
        while let Some(c @ ('r' | 'R' | 'u' | 'U' | 'b' | 'B')) = self.peek() {
            raw |= c == 'r' || c == 'R';
            self.bump();
        }
        let quote = self.bump().filter(|q| *q == '\'' || *q == '"')?;
        let mut out = String::new();
        loop {
            match self.bump()? {
                c if c == quote => return Some(out),
                '\\' if raw => {
                    out.push('\\');
                    out.push(self.bump()?);
                }
                '\\' => self.escape(&mut out)?,
                c => out.push(c),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Option<()> {
        let c = self.bump()?;
        let simple = match c {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            '0' => Some('\0'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' => Some(c),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            return Some(());
        }
        match c {
            '\n' => {}
            'x' => out.push(self.hex(2)?),
            'u' => out.push(self.hex(4)?),
            'U' => out.push(self.hex(8)?),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
        Some(())
    }

    fn hex(&mut self, n: usize) -> Option<char> {
        let digits = self.s.get(self.pos..self.pos + n)?;
        let code = u32::from_str_radix(digits, 16).ok()?;
        self.pos += n;
        Some(char::from_u32(code).unwrap_or('\u{fffd}'))
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_')) {
            self.bump();
        }
        let text = self.s[start..self.pos].replace('_', "");
        if let Ok(i) = text.parse::<i64>() {
            return Some(Value::Number(i.into()));
        }
        if let Ok(u) = text.parse::<u64>() {
            return Some(Value::Number(u.into()));
        }
        let f = text.parse::<f64>().ok()?;
        Some(Number::from_f64(f).map_or(Value::Null, Value::Number))
    }

    /// `True`, `False`, `None`, `inf`, `nan`, or a prefixed string such as `u'x'`.
    fn word(&mut self) -> Option<Value> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.bump();
        }
        let word = &self.s[start..self.pos];
        match word {
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "None" | "inf" | "nan" => Some(Value::Null),
            _ if word.len() <= 2 && matches!(self.peek(), Some('\'' | '"')) => {
                self.pos = start;
                self.string().map(Value::String)
            }
            _ => None,
        }
    }
}

fn key_text(key: Value) -> String {
    match key {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_nested_reprs() {
        let text = r#"[{'id': 'call_1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{"a":1}'}}, None, True, (1, -2.5), {1, 2}, {3: 'x'}]"#;
        assert_eq!(
            parse(text),
            Some(json!([
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
                null, true, [1, -2.5], [1, 2], {"3": "x"}
            ]))
        );
    }

    #[test]
    fn decodes_string_escapes_and_quotes() {
        assert_eq!(parse(r#"'it\'s'"#), Some(json!("it's")));
        assert_eq!(parse(r#""it's \"x\"\n\x41\u00e9""#), Some(json!("it's \"x\"\nAé")));
        assert_eq!(parse(r"r'a\nb'"), Some(json!("a\\nb")));
        assert_eq!(parse(" 'user' "), Some(json!("user")));
    }

    #[test]
    fn rejects_what_is_not_a_literal() {
        assert_eq!(parse("hello world"), None);
        assert_eq!(parse("'unterminated"), None);
        assert_eq!(parse("{'a': 1"), None);
        assert_eq!(parse("datetime(2024, 1, 1)"), None);
        assert_eq!(parse("'a' 'b'"), None);
        assert_eq!(parse(&"[".repeat(MAX_DEPTH + 2)), None);
    }

    #[test]
    fn string_prefix_reports_consumed_bytes() {
        assert_eq!(parse_string_prefix("  'You are X.', 'outputs': []"), Some(("You are X.".into(), 14)));
    }
}
