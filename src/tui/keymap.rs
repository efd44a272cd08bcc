//! The key map: keys to [`Action`]s, from the embedded default (`src/tui/keys.toml`) and an
//! optional user file in the same shape. The help overlay is generated from it.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use anyhow::{Context, bail};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;

use super::action::Action;

/// The default key map, embedded.
pub const DEFAULT_KEYS: &str = include_str!("keys.toml");

/// One key with its modifiers, normalised so that `G` and `shift-g` typed on a keyboard match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// The key.
    pub code: KeyCode,
    /// Ctrl and Alt (Shift only for non-character keys).
    pub mods: KeyModifiers,
}

impl Key {
    /// The normalised key of a terminal key event.
    pub fn from_event(ev: &KeyEvent) -> Key {
        let mut mods = ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match ev.code {
            KeyCode::Char(c) => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::Char(if mods.contains(KeyModifiers::CONTROL) { c.to_ascii_lowercase() } else { c })
            }
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            c => c,
        };
        Key { code, mods }
    }

    /// Parses `j`, `G`, `ctrl-c`, `shift-tab`, `pagedown`, `f1`...
    ///
    /// # Errors
    /// When the key name is unknown.
    pub fn parse(s: &str) -> anyhow::Result<Key> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            let (m, len) = if lower.starts_with("ctrl-") {
                (KeyModifiers::CONTROL, 5)
            } else if lower.starts_with("alt-") {
                (KeyModifiers::ALT, 4)
            } else if lower.starts_with("shift-") {
                (KeyModifiers::SHIFT, 6)
            } else {
                break;
            };
            if rest.len() == len {
                break;
            }
            mods |= m;
            rest = &rest[len..];
        }
        let code = parse_code(rest).with_context(|| format!("unknown key '{s}'"))?;
        let ev = KeyEvent::new(code, mods);
        let mut key = Key::from_event(&ev);
        if let (KeyCode::Char(c), true) = (code, mods.contains(KeyModifiers::SHIFT)) {
            key.code = KeyCode::Char(c.to_ascii_uppercase());
        }
        if code == KeyCode::Tab && mods.contains(KeyModifiers::SHIFT) {
            key = Key { code: KeyCode::BackTab, mods: mods - KeyModifiers::SHIFT };
        }
        Ok(key)
    }
}

fn parse_code(s: &str) -> Option<KeyCode> {
    let mut chars = s.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return (!c.is_control()).then_some(KeyCode::Char(c));
    }
    let lower = s.to_ascii_lowercase();
    let code = match lower.as_str() {
        "enter" | "return" => KeyCode::Enter,
        "esc" | "escape" => KeyCode::Esc,
        "tab" => KeyCode::Tab,
        "backtab" => KeyCode::BackTab,
        "backspace" => KeyCode::Backspace,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pageup" => KeyCode::PageUp,
        "pagedown" => KeyCode::PageDown,
        "space" => KeyCode::Char(' '),
        "delete" | "del" => KeyCode::Delete,
        "insert" => KeyCode::Insert,
        f if f.starts_with('f') => KeyCode::F(f[1..].parse().ok().filter(|n| (1..=12).contains(n))?),
        _ => return None,
    };
    Some(code)
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::F(n) => write!(f, "f{n}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::Delete => f.write_str("del"),
            KeyCode::Insert => f.write_str("ins"),
            other => write!(f, "{other:?}"),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFile {
    /// Action name to its keys: a list of key names, or one key name as a string.
    #[serde(default)]
    keys: BTreeMap<String, toml::Value>,
}

/// The key names of one entry: a list of strings, or one string as a one-key list; otherwise a
/// message saying what was expected (`expected a list of keys like ["q"], found an integer`).
fn entry_keys(value: toml::Value) -> Result<Vec<String>, String> {
    let found = |v: &toml::Value| match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    };
    match value {
        toml::Value::String(s) => Ok(vec![s]),
        toml::Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                toml::Value::String(s) => Ok(s),
                other => Err(format!("expected a list of keys like [\"q\"], found a list holding {}", found(&other))),
            })
            .collect(),
        other => Err(format!("expected a list of keys like [\"q\"], found {}", found(&other))),
    }
}

/// Keys to actions, and each action's keys in the order written (for help and hints).
#[derive(Debug, Clone, Default)]
pub struct KeyMap {
    by_key: HashMap<Key, Action>,
    by_action: BTreeMap<Action, Vec<Key>>,
}

impl KeyMap {
    /// The default key map.
    pub fn default_map() -> KeyMap {
        let mut map = KeyMap::default();
        let problems = map.apply_toml(DEFAULT_KEYS).expect("the embedded key map is valid TOML");
        debug_assert!(problems.is_empty(), "embedded key map: {problems:?}");
        map
    }

    /// The default map with a user file applied. Bad entries are skipped and returned as
    /// problems naming the file and the entry (`key map ~/.config/falat/keys.toml: quit: expected
    /// a list of keys like ["q"], found an integer`); only an unreadable or non-TOML file is an
    /// error.
    ///
    /// # Errors
    /// When the file cannot be read or is not a key map.
    pub fn with_user_file(path: &Path) -> anyhow::Result<(KeyMap, Vec<String>)> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read key map {}", path.display()))?;
        let mut map = KeyMap::default_map();
        let problems = map.apply_toml(&text).with_context(|| format!("key map {}", path.display()))?;
        let problems = problems.into_iter().map(|p| format!("key map {}: {p}", path.display())).collect();
        Ok((map, problems))
    }

    /// Applies a key map in TOML: each listed action gets exactly the listed keys.
    ///
    /// # Errors
    /// When the text is not TOML of the key map's shape.
    pub fn apply_toml(&mut self, text: &str) -> anyhow::Result<Vec<String>> {
        let file: KeyFile = toml::from_str(text)?;
        let mut problems = Vec::new();
        for (name, value) in file.keys {
            let Ok(action) = serde_json::from_value::<Action>(serde_json::Value::String(name.clone())) else {
                problems.push(format!("unknown action '{name}'"));
                continue;
            };
            let keys = match entry_keys(value) {
                Ok(k) => k,
                Err(e) => {
                    problems.push(format!("{name}: {e}; the default keys are kept"));
                    continue;
                }
            };
            let mut parsed = Vec::new();
            for k in keys {
                match Key::parse(&k) {
                    Ok(key) => parsed.push(key),
                    Err(e) => problems.push(format!("{name}: {e}")),
                }
            }
            self.bind(action, parsed);
        }
        Ok(problems)
    }

    /// Gives `action` exactly `keys`, taking them from any action that had them.
    pub fn bind(&mut self, action: Action, keys: Vec<Key>) {
        if let Some(old) = self.by_action.remove(&action) {
            for k in old {
                self.by_key.remove(&k);
            }
        }
        for k in &keys {
            if let Some(prev) = self.by_key.insert(*k, action)
                && let Some(list) = self.by_action.get_mut(&prev)
            {
                list.retain(|x| x != k);
            }
        }
        self.by_action.insert(action, keys);
    }

    /// The action bound to a key event, if any.
    pub fn action(&self, ev: &KeyEvent) -> Option<Action> {
        self.by_key.get(&Key::from_event(ev)).copied()
    }

    /// The keys of an action, in the order written.
    pub fn keys(&self, action: Action) -> &[Key] {
        self.by_action.get(&action).map_or(&[], Vec::as_slice)
    }

    /// The first key of an action as text, or `-` when unbound (for hints).
    pub fn hint(&self, action: Action) -> String {
        self.keys(action).first().map_or_else(|| "-".to_string(), Key::to_string)
    }

    /// All keys of an action joined with `/` (for the help overlay).
    pub fn all_keys(&self, action: Action) -> String {
        let k: Vec<String> = self.keys(action).iter().map(Key::to_string).collect();
        if k.is_empty() { "(unbound)".to_string() } else { k.join("/") }
    }
}

/// The user key map path: `$XDG_CONFIG_HOME/falat/keys.toml` or `~/.config/falat/keys.toml`.
pub fn default_user_path() -> Option<std::path::PathBuf> {
    super::config_dir().map(|d| d.join("keys.toml"))
}

/// Checks that no default key is bound twice (used by tests).
///
/// # Errors
/// When the embedded map binds one key to two actions.
pub fn check_default() -> anyhow::Result<()> {
    let file: KeyFile = toml::from_str(DEFAULT_KEYS)?;
    let mut seen: HashMap<Key, String> = HashMap::new();
    for (name, value) in file.keys {
        for k in entry_keys(value).map_err(anyhow::Error::msg)? {
            let key = Key::parse(&k)?;
            if let Some(other) = seen.insert(key, name.clone()) {
                bail!("key {key} is bound to both {other} and {name}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn default_map_binds_every_action_once() {
        check_default().expect("no duplicate key");
        let map = KeyMap::default_map();
        for a in Action::ALL {
            assert!(!map.keys(a).is_empty(), "{} unbound", a.name());
        }
        assert_eq!(map.action(&ev(KeyCode::Char('a'), KeyModifiers::NONE)), Some(Action::RunAll));
        assert_eq!(map.action(&ev(KeyCode::Char('G'), KeyModifiers::SHIFT)), Some(Action::Bottom));
        assert_eq!(map.action(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)), Some(Action::Quit));
        assert_eq!(map.action(&ev(KeyCode::BackTab, KeyModifiers::SHIFT)), Some(Action::PrevPane));
        assert_eq!(map.action(&ev(KeyCode::Down, KeyModifiers::NONE)), Some(Action::Down));
    }

    #[test]
    fn parse_and_display_keys() {
        assert_eq!(Key::parse("shift-g").expect("key"), Key::parse("G").expect("key"));
        assert_eq!(Key::parse("shift-tab").expect("key"), Key::parse("backtab").expect("key"));
        assert_eq!(Key::parse("ctrl-d").expect("key").to_string(), "ctrl-d");
        assert_eq!(Key::parse("f5").expect("key").code, KeyCode::F(5));
        assert_eq!(Key::parse("-").expect("key").code, KeyCode::Char('-'));
        assert!(Key::parse("hyper-q").is_err());
        assert!(Key::parse("f13").is_err());
        assert!(Key::parse("\u{1b}").is_err(), "control characters are no keys");
    }

    #[test]
    fn user_file_rebinds_and_reports_bad_entries() {
        let mut map = KeyMap::default_map();
        let problems =
            map.apply_toml("[keys]\nrun_all = [\"F5\", \"r\"]\nquit = []\nflyaway = [\"z\"]\nmark = [\"nope-key\"]\n");
        let problems = problems.expect("valid toml");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(map.action(&ev(KeyCode::Char('r'), KeyModifiers::NONE)), Some(Action::RunAll));
        assert_eq!(map.action(&ev(KeyCode::F(5), KeyModifiers::NONE)), Some(Action::RunAll));
        assert_eq!(map.action(&ev(KeyCode::Char('a'), KeyModifiers::NONE)), None);
        assert_eq!(map.action(&ev(KeyCode::Char('q'), KeyModifiers::NONE)), None);
        assert_eq!(map.all_keys(Action::Quit), "(unbound)");
    }

    #[test]
    fn a_key_given_as_a_string_is_a_one_key_list_and_other_values_say_what_was_expected() {
        let mut map = KeyMap::default_map();
        let problems = map.apply_toml("[keys]\nquit = \"Q\"\nmark = 3\nexclude = [\"X\", 4]\n").expect("valid toml");
        assert_eq!(map.action(&ev(KeyCode::Char('Q'), KeyModifiers::SHIFT)), Some(Action::Quit));
        assert_eq!(
            problems,
            [
                "exclude: expected a list of keys like [\"q\"], found a list holding an integer; the default keys are kept",
                "mark: expected a list of keys like [\"q\"], found an integer; the default keys are kept",
            ]
        );
        assert_eq!(map.all_keys(Action::Mark), "m", "a bad entry keeps the default keys");
    }

    #[test]
    fn rebinding_a_taken_key_moves_it() {
        let mut map = KeyMap::default_map();
        map.apply_toml("[keys]\nexport = [\"q\"]\n").expect("valid");
        assert_eq!(map.action(&ev(KeyCode::Char('q'), KeyModifiers::NONE)), Some(Action::Export));
        assert_eq!(map.all_keys(Action::Quit), "ctrl-c");
    }
}
